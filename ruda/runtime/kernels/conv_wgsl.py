"""WGSL for ``ruda.nn``'s ``conv`` kernel (float32 cross-correlation, as torch; pure code
generation, the launcher is :mod:`ruda.backends.wgpu._nn_conv`).

Every convolution is taken as 3-d: a 1-d or 2-d one has leading spatial axes of size 1 (kernel 1,
stride 1, dilation 1, no padding). The kernel's extent ``ks = (kd, kh, kw)`` is baked into the
source (taps unrolled, divisions by constants); sizes, strides, dilations, padding and offsets
come in the 128-byte uniform of :func:`pack`. Padding is by bounds checks (nothing padded is
materialized); the bias is added before the single store.

- :func:`depthwise` (``groups == C_in``, weight ``(m * C_in, 1, *k)``): one invocation per
  output element, taps unrolled, the input coordinate and its bounds check computed once per
  tap row/column (not per tap).
- :func:`gemm` (every other case): an implicit GEMM per group, ``M = N * out_pixels`` rows,
  ``C_out / groups`` columns, ``K = C_in / groups * kd * kh * kw``; ``tm x tn`` output tiles
  (invocations of 4 x 4 outputs), per ``BK`` slice of K the input tile gathered from
  ``(n, c, spatial)`` on the fly (no im2col buffer) and the weight tile staged in workgroup
  memory as vec4 columns. Each invocation loads input elements of one fixed output pixel, so
  its pixel's coordinates are computed once, outside the K loop. Groups are the grid's z.
"""
import struct

from ruda.runtime.kernels.nn_wgsl import grid  # noqa: F401  (the launcher's)

BK = 16                 # K slice of the implicit GEMM's tiles
DW_WG = 64              # invocations per depthwise workgroup
TILES = (16, 32, 64)    # tile sides the GEMM takes (multiples of 16)
_FIELDS = ("n", "cin", "cout", "cin_g", "cout_g", "gx", "id", "ih", "iw", "od", "oh", "ow",
           "sd", "sh", "sw", "dd", "dh", "dw", "pd", "ph", "pw", "ox", "owt", "ob", "oy",
           "m", "k", "p", "mult", "total", "r0", "r1")
_HEAD = ("struct Params { " + ", ".join(f"{f}: u32" for f in _FIELDS) + " };\n"
         "@group(0) @binding(0) var<uniform> P: Params;")


def pack(n, cin, cout, groups, ks, sp, out, stride, dil, pad_lo, offs, gx=1):
    """The uniform: ``ks``, ``sp``, ``out``, ``stride``, ``dil``, ``pad_lo`` 3-tuples (leading
    axes of size 1 for 1-d/2-d), ``offs`` the element offsets of (x, w, bias, y), ``gx`` the
    depthwise grid's x extent."""
    p = out[0] * out[1] * out[2]
    cin_g, cout_g = cin // groups, cout // groups
    vals = (n, cin, cout, cin_g, cout_g, gx, *sp, *out, *stride, *dil, *pad_lo, *offs,
            n * p, cin_g * ks[0] * ks[1] * ks[2], p, cout // cin, n * cout * p, 0, 0)
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


def depthwise(ks, has_bias, wg=DW_WG):
    """Direct depthwise convolution, one output element per invocation over a
    ``grid(ceil(total / wg))`` of workgroups; the uniform's ``mult`` is C_out / C_in."""
    _check_ks("depthwise", ks)
    kd, kh, kw = (int(k) for k in ks)
    L = [_HEAD] + _bindings(has_bias)
    L.append(f"@compute @workgroup_size({wg}, 1, 1)")
    L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
             "@builtin(workgroup_id) wid: vec3<u32>) {")
    L.append(f"  let e = (wid.y * P.gx + wid.x) * {wg}u + lid.x;")
    L.append("  if (e >= P.total) { return; }")
    L.append("  let ow = e % P.ow;")
    L.append("  let r1 = e / P.ow;")
    L.append("  let oh = r1 % P.oh;")
    L.append("  let r2 = r1 / P.oh;")
    L.append("  let od = r2 % P.od;")
    L.append("  let r3 = r2 / P.od;")
    L.append("  let co = r3 % P.cout;")
    L.append("  let nn = r3 / P.cout;")
    L.append("  let ci = co / P.mult;")
    L.append("  let xb = P.ox + (nn * P.cin + ci) * P.id * P.ih * P.iw;")
    L.append(f"  let wb = P.owt + co * {kd * kh * kw}u;")
    for ax, k, o in (("d", kd, "od"), ("h", kh, "oh"), ("w", kw, "ow")):
        L.append(f"  let b{ax} = i32({o} * P.s{ax}) - i32(P.p{ax});")
        for a in range(k):
            L.append(f"  let c{ax}{a} = b{ax} + {a} * i32(P.d{ax});")
            L.append(f"  let v{ax}{a} = c{ax}{a} >= 0 && c{ax}{a} < i32(P.i{ax});")
    L.append("  var acc = 0.0;")
    for a in range(kd):
        L.append(f"  if (vd{a}) {{")
        for b in range(kh):
            L.append(f"    if (vh{b}) {{")
            L.append(f"      let rb = xb + (u32(cd{a}) * P.ih + u32(ch{b})) * P.iw;")
            for c in range(kw):
                t = (a * kh + b) * kw + c
                L.append(f"      if (vw{c}) {{ acc += X[rb + u32(cw{c})] * W[wb + {t}u]; }}")
            L.append("    }")
        L.append("  }")
    if has_bias:
        L.append("  acc += B[P.ob + co];")
    L.append("  Y[P.oy + e] = acc;")
    L.append("}")
    return "\n".join(L) + "\n"


def gemm(ks, has_bias, tm=64, tn=64):
    """Implicit-GEMM convolution: ``tm`` output pixels x ``tn`` output channels per workgroup of
    ``(tn / 4, tm / 4)`` invocations; dispatch ``(ceil(cout_g / tn), ceil(M / tm), groups)``."""
    _check_ks("gemm", ks)
    if tm not in TILES or tn not in TILES:
        raise ValueError(f"conv_wgsl.gemm: tm and tn must be in {TILES}; got {tm}, {tn}")
    kd, kh, kw = (int(k) for k in ks)
    khw, ksz = kh * kw, kd * kh * kw
    nt = tm * tn // 16                       # invocations
    na, nb = tm * BK // nt, tn * BK // nt    # loads per invocation of the input / weight tile
    L = [_HEAD] + _bindings(has_bias)
    L.append(f"var<workgroup> AS: array<vec4<f32>, {BK * tm // 4}>;")
    L.append(f"var<workgroup> WS: array<vec4<f32>, {BK * tn // 4}>;")
    L.append(f"@compute @workgroup_size({tn // 4}, {tm // 4}, 1)")
    L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
             "@builtin(workgroup_id) wid: vec3<u32>) {")
    L.append("  let tx = lid.x;")
    L.append("  let ty = lid.y;")
    L.append(f"  let t = ty * {tn // 4}u + tx;")
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
    L.append("  let pn = mc / P.p;")
    L.append("  let pp = mc % P.p;")
    L.append("  let bw = i32((pp % P.ow) * P.sw) - i32(P.pw);")
    L.append("  let bh = i32(((pp / P.ow) % P.oh) * P.sh) - i32(P.ph);")
    L.append("  let bd = i32((pp / (P.ow * P.oh)) * P.sd) - i32(P.pd);")
    L.append("  let xb = P.ox + (pn * P.cin + g * P.cin_g) * dhw;")
    # this invocation's weight-tile column slot: k fastest (neighbours read neighbouring words)
    L.append(f"  let bk = t % {BK}u;")
    L.append(f"  let bn = t / {BK}u;")
    L.append("  let wb = P.owt + g * P.cout_g * P.k;")
    for i in range(4):
        L.append(f"  var acc{i} = vec4<f32>(0.0);")
    L.append(f"  for (var k0 = 0u; k0 < P.k; k0 += {BK}u) {{")
    L.append(f"    for (var i = 0u; i < {na}u; i++) {{")
    L.append(f"      let kk = ak + i * {nt // tm}u;")
    L.append("      let k = k0 + kk;")
    L.append("      var v = 0.0;")
    L.append("      if (mok && k < P.k) {")
    L.append(f"        let ci = k / {ksz}u;")
    L.append(f"        let tp = k % {ksz}u;")
    L.append(f"        let cd = bd + i32(tp / {khw}u) * i32(P.dd);")
    L.append(f"        let ch = bh + i32((tp / {kw}u) % {kh}u) * i32(P.dh);")
    L.append(f"        let cw = bw + i32(tp % {kw}u) * i32(P.dw);")
    L.append("        if (cd >= 0 && cd < i32(P.id) && ch >= 0 && ch < i32(P.ih) && "
             "cw >= 0 && cw < i32(P.iw)) {")
    L.append("          v = X[xb + ci * dhw + (u32(cd) * P.ih + u32(ch)) * P.iw + u32(cw)];")
    L.append("        }")
    L.append("      }")
    L.append(f"      AS[kk * {tm // 4}u + am / 4u][am % 4u] = v;")
    L.append("    }")
    L.append(f"    for (var i = 0u; i < {nb}u; i++) {{")
    L.append(f"      let nn = bn + i * {nt // BK}u;")
    L.append("      let co = n0 + nn;")
    L.append("      let k = k0 + bk;")
    L.append("      var v = 0.0;")
    L.append("      if (co < P.cout_g && k < P.k) { v = W[wb + co * P.k + k]; }")
    L.append(f"      WS[bk * {tn // 4}u + nn / 4u][nn % 4u] = v;")
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append(f"    for (var kk = 0u; kk < {BK}u; kk++) {{")
    L.append(f"      let a = AS[kk * {tm // 4}u + ty];")
    L.append(f"      let w = WS[kk * {tn // 4}u + tx];")
    for i, c in enumerate("xyzw"):
        L.append(f"      acc{i} += a.{c} * w;")
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("  }")
    L.append("  let co = n0 + tx * 4u;")
    L.append("  var bv = vec4<f32>(0.0);")
    if has_bias:
        for j, c in enumerate("xyzw"):
            L.append(f"  if (co + {j}u < P.cout_g) {{ bv.{c} = B[P.ob + g * P.cout_g + co + {j}u]; }}")
    for i in range(4):
        L.append(f"  let r{i} = m0 + ty * 4u + {i}u;")
        L.append(f"  if (r{i} < P.m) {{")
        L.append(f"    let y{i} = P.oy + ((r{i} / P.p) * P.cout + g * P.cout_g + co) * P.p + r{i} % P.p;")
        L.append(f"    let v{i} = acc{i} + bv;")
        for j, c in enumerate("xyzw"):
            L.append(f"    if (co + {j}u < P.cout_g) {{ Y[y{i} + {j}u * P.p] = v{i}.{c}; }}")
        L.append("  }")
    L.append("}")
    return "\n".join(L) + "\n"


def tiles(m, cout_g):
    """(tm, tn) for M output pixels and C_out / groups columns: the smallest tile side that
    covers a narrow dimension (fewer idle lanes), else 64."""
    tn = 16 if cout_g <= 16 else 32 if cout_g <= 32 else 64
    tm = 32 if m <= 1024 else 64
    return tm, tn
