"""WGSL for ``ruda.nn``'s ``conv`` kernel (float32 cross-correlation, as torch; pure code
generation, the launcher is :mod:`ruda.backends.wgpu._nn_conv`).

Every convolution is taken as 3-d: a 1-d or 2-d one has leading spatial axes of size 1 (kernel 1,
stride 1, dilation 1, no padding). The kernel's extent ``ks = (kd, kh, kw)`` is baked into the
source (taps unrolled, divisions by constants); sizes, strides, dilations, padding and offsets
come in the 128-byte uniform of :func:`pack`. Padding is by bounds checks (nothing padded is
materialized); the bias is added before the single store.

- :func:`depthwise` (``groups == C_in``, weight ``(m * C_in, 1, *k)``): ``vo`` consecutive
  outputs of a row per invocation, taps unrolled, the weights, the index arithmetic and each
  tap row's coordinate and bounds check once for them, each input column they share read once
  (the last axis's stride and dilation compiled in).
- :func:`gemm` (every other case): an implicit GEMM per group, ``M = N * out_pixels`` rows,
  ``C_out / groups`` columns, ``K = C_in / groups * kd * kh * kw``; ``tm x tn`` output tiles
  (invocations of ``rm x rn`` outputs), per slice of K the input tile gathered from
  ``(n, c, spatial)`` on the fly (no im2col buffer) and the weight tile staged in workgroup
  memory as vec4 columns. Each invocation loads input elements of one fixed output pixel, so
  its pixel's coordinates are computed once, outside the K loop; in the tap-major order also
  each tap's coordinate and bounds check, once per tap. Groups are the grid's z.
"""
import struct

from ruda.runtime.kernels.nn_wgsl import grid  # noqa: F401  (the launcher's)

DW_WG = 64              # invocations per depthwise workgroup
# GEMM tiles (tm, tn, rm, rn) and their K slice: every one has tm * tn / (rm * rn) invocations a
# multiple of tm and of the slice, so each invocation loads input of one fixed output pixel
_BK = {(128, 128, 8, 8): 8, (128, 64, 8, 4): 8,
       **{(tm, tn, 4, 4): 16 for tm in (16, 32, 64) for tn in (16, 32, 64)}}
TILES = tuple(_BK)


def slice_k(tile):
    """The K slice of a GEMM tile (the tap-major order needs C_in / groups at least this)."""
    return _BK[tile]
_FIELDS = ("n", "cin", "cout", "cin_g", "cout_g", "gx", "id", "ih", "iw", "od", "oh", "ow",
           "sd", "sh", "sw", "dd", "dh", "dw", "pd", "ph", "pw", "ox", "owt", "ob", "oy",
           "m", "k", "p", "mult", "total", "r0", "r1")
_HEAD = ("struct Params { " + ", ".join(f"{f}: u32" for f in _FIELDS) + " };\n"
         "@group(0) @binding(0) var<uniform> P: Params;")


def pack(n, cin, cout, groups, ks, sp, out, stride, dil, pad_lo, offs, gx=1, r0=0):
    """The uniform: ``ks``, ``sp``, ``out``, ``stride``, ``dil``, ``pad_lo`` 3-tuples (leading
    axes of size 1 for 1-d/2-d), ``offs`` the element offsets of (x, w, bias, y), ``gx`` the
    depthwise grid's x extent."""
    p = out[0] * out[1] * out[2]
    cin_g, cout_g = cin // groups, cout // groups
    vals = (n, cin, cout, cin_g, cout_g, gx, *sp, *out, *stride, *dil, *pad_lo, *offs,
            n * p, cin_g * ks[0] * ks[1] * ks[2], p, cout // cin, n * cout * p, r0, 0)
    return struct.pack(f"<{len(_FIELDS)}I", *vals)


def _bindings(has_bias):
    L = ["@group(0) @binding(1) var<storage, read> X: array<f32>;",
         "@group(0) @binding(2) var<storage, read> W: array<f32>;"]
    if has_bias:
        L.append("@group(0) @binding(3) var<storage, read> B: array<f32>;")
    L.append(f"@group(0) @binding({4 if has_bias else 3}) var<storage, read_write> Y: "
             "array<f32>;")
    return L


def _check_ks(fn, ks):
    if len(ks) != 3 or any(int(k) < 1 for k in ks):
        raise ValueError(f"conv_wgsl.{fn}: ks must be 3 positive ints; got {ks}")


def depthwise(ks, has_bias, vo=1, sw=1, dw=1, wg=DW_WG):
    """Direct depthwise convolution, ``vo`` consecutive outputs of a row per invocation over a
    ``grid(ceil(rows * ceil(OW / vo) / wg))`` of workgroups (the uniform's ``r0`` is
    ``ceil(OW / vo)``, ``mult`` C_out / C_in): the index arithmetic and the weights once for the
    ``vo``, each input column they share (stride ``sw`` and dilation ``dw`` of the last axis,
    compile-time here) read once."""
    _check_ks("depthwise", ks)
    kd, kh, kw = (int(k) for k in ks)
    offs = sorted({j * sw + t * dw for j in range(vo) for t in range(kw)})
    L = [_HEAD] + _bindings(has_bias)
    L.append(f"@compute @workgroup_size({wg}, 1, 1)")
    L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
             "@builtin(workgroup_id) wid: vec3<u32>) {")
    L.append(f"  let q = (wid.y * P.gx + wid.x) * {wg}u + lid.x;")
    L.append("  if (q >= (P.total / P.ow) * P.r0) { return; }")
    L.append("  let r1 = q / P.r0;")
    L.append(f"  let ow0 = (q - r1 * P.r0) * {vo}u;")
    L.append("  let oh = r1 % P.oh;")
    L.append("  let r2 = r1 / P.oh;")
    L.append("  let od = r2 % P.od;")
    L.append("  let r3 = r2 / P.od;")
    L.append("  let co = r3 % P.cout;")
    L.append("  let nn = r3 / P.cout;")
    L.append("  let xb = P.ox + (nn * P.cin + co / P.mult) * P.id * P.ih * P.iw;")
    L.append(f"  let wb = P.owt + co * {kd * kh * kw}u;")
    for t in range(kd * kh * kw):
        L.append(f"  let w{t} = W[wb + {t}u];")
    for ax, k, o in (("d", kd, "od"), ("h", kh, "oh")):
        L.append(f"  let b{ax} = i32({o} * P.s{ax}) - i32(P.p{ax});")
        for a in range(k):
            L.append(f"  let c{ax}{a} = b{ax} + {a} * i32(P.d{ax});")
            L.append(f"  let v{ax}{a} = c{ax}{a} >= 0 && c{ax}{a} < i32(P.i{ax});")
    L.append(f"  let bw = i32(ow0 * {sw}u) - i32(P.pw);")
    for o in offs:
        L.append(f"  let cw{o} = bw + {o};")
        L.append(f"  let vw{o} = cw{o} >= 0 && cw{o} < i32(P.iw);")
    for j in range(vo):
        L.append(f"  var a{j} = 0.0;")
    for a in range(kd):
        L.append(f"  if (vd{a}) {{")
        for b in range(kh):
            L.append(f"    if (vh{b}) {{")
            L.append(f"      let rb = xb + (u32(cd{a}) * P.ih + u32(ch{b})) * P.iw;")
            for o in offs:
                L.append(f"      var x{o} = 0.0;")
                L.append(f"      if (vw{o}) {{ x{o} = X[rb + u32(cw{o})]; }}")
            for j in range(vo):
                terms = " + ".join(f"x{j * sw + t * dw} * w{(a * kh + b) * kw + t}"
                                   for t in range(kw))
                L.append(f"      a{j} += {terms};")
            L.append("    }")
        L.append("  }")
    L.append("  let yb = P.oy + r1 * P.ow + ow0;")
    bias = " + B[P.ob + co]" if has_bias else ""
    for j in range(vo):
        L.append(f"  if (ow0 + {j}u < P.ow) {{ Y[yb + {j}u] = a{j}{bias}; }}")
    L.append("}")
    return "\n".join(L) + "\n"


def gemm(ks, has_bias, tile=(64, 64, 4, 4), tap_major=True):
    """Implicit-GEMM convolution: ``tile = (tm, tn, rm, rn)``, ``tm`` output pixels x ``tn``
    output channels per workgroup of ``(tn / rn, tm / rm)`` invocations, each ``rm x rn``;
    dispatch ``(ceil(cout_g / tn), ceil(M / tm), groups)``.

    ``tap_major``: K runs tap by tap, then over channels in slices of ``bk`` (a slice shares one
    input coordinate and bounds check per invocation; channels past ``cin_g`` are zeros), for
    ``cin_g`` of at least ``bk``; else K runs channel-major in slices of ``bk`` and each loaded
    element decomposes its own k.
    """
    _check_ks("gemm", ks)
    if tile not in TILES:
        raise ValueError(f"conv_wgsl.gemm: tile must be one of {TILES}; got {tile}")
    tm, tn, rm, rn = tile
    bk = _BK[tile]
    kd, kh, kw = (int(k) for k in ks)
    khw, ksz = kh * kw, kd * kh * kw
    nt = tm * tn // (rm * rn)                # invocations
    na, nb = tm * bk // nt, tn * bk // nt    # loads per invocation of the input / weight tile
    L = [_HEAD] + _bindings(has_bias)
    L.append(f"var<workgroup> AS: array<vec4<f32>, {bk * tm // 4}>;")
    L.append(f"var<workgroup> WS: array<vec4<f32>, {bk * tn // 4}>;")
    L.append(f"@compute @workgroup_size({tn // rn}, {tm // rm}, 1)")
    L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
             "@builtin(workgroup_id) wid: vec3<u32>) {")
    L.append("  let tx = lid.x;")
    L.append("  let ty = lid.y;")
    L.append(f"  let t = ty * {tn // rn}u + tx;")
    L.append("  let g = wid.z;")
    L.append(f"  let n0 = wid.x * {tn}u;")
    L.append(f"  let m0 = wid.y * {tm}u;")
    L.append("  let dhw = P.id * P.ih * P.iw;")
    # this invocation's input-tile row: output pixel m0 + am (fixed over K, as nt % tm == 0)
    L.append(f"  let am = t % {tm}u;")
    L.append(f"  let ak = t / {tm}u;")
    L.append("  let m = m0 + am;")
    L.append("  let mok = m < P.m;")
    L.append("  let mc = min(m, P.m - 1u);")
    L.append("  let pp = mc % P.p;")
    L.append("  let bw = i32((pp % P.ow) * P.sw) - i32(P.pw);")
    L.append("  let bh = i32(((pp / P.ow) % P.oh) * P.sh) - i32(P.ph);")
    L.append("  let bd = i32((pp / (P.ow * P.oh)) * P.sd) - i32(P.pd);")
    L.append("  let xb = P.ox + ((mc / P.p) * P.cin + g * P.cin_g) * dhw;")
    # this invocation's weight-tile slot: k fastest (neighbours read neighbouring words)
    L.append(f"  let bq = t % {bk}u;")
    L.append(f"  let bn = t / {bk}u;")
    L.append("  let wb = P.owt + g * P.cout_g * P.k;")
    for i in range(rm):
        for q in range(rn // 4):
            L.append(f"  var c{i}_{q} = vec4<f32>(0.0);")

    def coords(ind, tp):
        return [f"{ind}let cd = bd + i32({tp} / {khw}u) * i32(P.dd);",
                f"{ind}let ch = bh + i32(({tp} / {kw}u) % {kh}u) * i32(P.dh);",
                f"{ind}let cw = bw + i32({tp} % {kw}u) * i32(P.dw);",
                f"{ind}let inb = cd >= 0 && cd < i32(P.id) && ch >= 0 && ch < i32(P.ih) && "
                "cw >= 0 && cw < i32(P.iw);",
                f"{ind}let so = xb + (u32(cd) * P.ih + u32(ch)) * P.iw + u32(cw);"]

    if tap_major:
        L.append(f"  for (var tp = 0u; tp < {ksz}u; tp++) {{")
        L.extend(coords("    ", "tp"))
        L.append("    let ok = mok && inb;")
        L.append(f"    for (var c0 = 0u; c0 < P.cin_g; c0 += {bk}u) {{")
        L.append(f"      for (var i = 0u; i < {na}u; i++) {{")
        L.append(f"        let kk = ak + i * {nt // tm}u;")
        L.append("        let ci = c0 + kk;")
        L.append("        var v = 0.0;")
        L.append("        if (ok && ci < P.cin_g) { v = X[so + ci * dhw]; }")
        L.append(f"        AS[kk * {tm // 4}u + am / 4u][am % 4u] = v;")
        L.append("      }")
        L.append("      let ci = c0 + bq;")
        L.append(f"      let wk = ci * {ksz}u + tp;")
        L.append("      let kok = ci < P.cin_g;")
        ind = "      "
    else:
        L.append(f"  for (var k0 = 0u; k0 < P.k; k0 += {bk}u) {{")
        L.append(f"    for (var i = 0u; i < {na}u; i++) {{")
        L.append(f"      let kk = ak + i * {nt // tm}u;")
        L.append("      let k = k0 + kk;")
        L.append("      var v = 0.0;")
        L.append("      if (mok && k < P.k) {")
        L.extend(coords("        ", f"(k % {ksz}u)"))
        L.append(f"        if (inb) {{ v = X[so + (k / {ksz}u) * dhw]; }}")
        L.append("      }")
        L.append(f"      AS[kk * {tm // 4}u + am / 4u][am % 4u] = v;")
        L.append("    }")
        L.append("    let wk = k0 + bq;")
        L.append("    let kok = wk < P.k;")
        ind = "    "
    L.append(f"{ind}for (var i = 0u; i < {nb}u; i++) {{")
    L.append(f"{ind}  let nn = bn + i * {nt // bk}u;")
    L.append(f"{ind}  let co = n0 + nn;")
    L.append(f"{ind}  var v = 0.0;")
    L.append(f"{ind}  if (kok && co < P.cout_g) {{ v = W[wb + co * P.k + wk]; }}")
    L.append(f"{ind}  WS[bq * {tn // 4}u + nn / 4u][nn % 4u] = v;")
    L.append(f"{ind}}}")
    L.append(f"{ind}workgroupBarrier();")
    L.append(f"{ind}for (var kk = 0u; kk < {bk}u; kk++) {{")
    for p in range(rm // 4):
        L.append(f"{ind}  let a{p} = AS[kk * {tm // 4}u + ty * {rm // 4}u + {p}u];")
    for q in range(rn // 4):
        L.append(f"{ind}  let w{q} = WS[kk * {tn // 4}u + tx * {rn // 4}u + {q}u];")
    for i in range(rm):
        for q in range(rn // 4):
            L.append(f"{ind}  c{i}_{q} += a{i // 4}.{'xyzw'[i % 4]} * w{q};")
    L.append(f"{ind}}}")
    L.append(f"{ind}workgroupBarrier();")
    if tap_major:
        L.append("    }")
    L.append("  }")
    L.append(f"  let co = n0 + tx * {rn}u;")
    for q in range(rn // 4):
        L.append(f"  var b{q} = vec4<f32>(0.0);")
        if has_bias:
            for j, c in enumerate("xyzw"):
                L.append(f"  if (co + {4 * q + j}u < P.cout_g) {{ "
                         f"b{q}.{c} = B[P.ob + g * P.cout_g + co + {4 * q + j}u]; }}")
    for i in range(rm):
        L.append(f"  let r{i} = m0 + ty * {rm}u + {i}u;")
        L.append(f"  if (r{i} < P.m) {{")
        L.append(f"    let y{i} = P.oy + ((r{i} / P.p) * P.cout + g * P.cout_g + co) * P.p + "
                 f"r{i} % P.p;")
        for q in range(rn // 4):
            L.append(f"    let v{q} = c{i}_{q} + b{q};")
            for j, c in enumerate("xyzw"):
                L.append(f"    if (co + {4 * q + j}u < P.cout_g) {{ "
                         f"Y[y{i} + {4 * q + j}u * P.p] = v{q}.{c}; }}")
        L.append("  }")
    L.append("}")
    return "\n".join(L) + "\n"


def tiles(m, cout_g):
    """The GEMM tile for M output pixels and C_out / groups columns: 128 x 128 in 8 x 8 blocks
    where both are large (the most multiply-adds per workgroup-memory read and per gathered
    input; lavapipe's matmul tuner picks the like), else the smallest side that covers a narrow
    dimension (fewer idle lanes)."""
    if m >= 4096 and cout_g > 64:
        return (128, 128, 8, 8)
    if m >= 4096:
        return (128, 64, 8, 4) if cout_g > 32 else (64, 32, 4, 4) if cout_g > 16 else (64, 16, 4, 4)
    tn = 16 if cout_g <= 16 else 32 if cout_g <= 32 else 64
    return (32 if m <= 1024 else 64, tn, 4, 4)
