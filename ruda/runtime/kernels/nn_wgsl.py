"""WGSL row kernels of ``ruda.nn`` (softmax, log_softmax, layer_norm, rms_norm) and swiglu:
source generators (pure code generation, no device).

Row kernels work on a C-contiguous float32 ``(rows, n)`` array, one workgroup of ``wg``
invocations per row.  Pass 1 reads the row (invocation ``i`` takes elements ``i, i + wg, ...``,
so a workgroup's loads are contiguous) into per-invocation float32 statistics, which a tree in
workgroup memory folds; pass 2 reads the row again and writes the result.  Nothing of the row is
held in registers, so any ``n`` runs.  Statistics:

* softmax / log_softmax: running (max, sum of exp(x - max)), merged by rescaling; the max
  starts at ``-FLT_MAX`` (not -inf), so -inf elements add exp(-inf) = 0 and a row of only -inf
  gives 0 / 0 = NaN, as torch does.
* layer_norm: Welford (count, mean, M2) per invocation, merged by Chan's formula (no
  cancellation of ``E[x^2] - E[x]^2``); biased variance, as torch.
* rms_norm: sum of squares.

Interface (the wgpu backend's ``_nn.py``):

``rows(op, wg, has_weight, has_bias) -> str``
    the module; entry point ``main``.  ``@binding(0)`` uniform ``Params`` (8 x u32 from
    :func:`pack_rows`), ``@binding(1)`` x (read), then weight and bias (read) where present,
    then y (read-write).  Dispatch :func:`grid` workgroups.
``pack_rows(rows, n, gx, off_x, off_w, off_b, off_y, eps) -> bytes``  (32 bytes)
``grid(rows, max_groups=65535) -> (gx, gy)``  workgroup ``(x, y)`` takes row ``y * gx + x``.
``batch_norm(has_w, has_b, wg) -> str``, ``pack_batch_norm(...)``  inference batch_norm over
``(N, C, L)``, one element per invocation (see :func:`batch_norm`).
``swiglu(wg) -> str``  ``y = silu(g) * u`` elementwise; bindings P (``pack_rows(n, n, gx,
off_g, off_u, 0, off_y, 0)``), g, u, y; one element per invocation over a ``grid(ceil(n / wg))``
of workgroups.
"""
import re
import struct

OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm")
FLT_MAX = "3.4028234663852886e38"


def pack_rows(rows, n, gx, off_x=0, off_w=0, off_b=0, off_y=0, eps=0.0):
    return struct.pack("<7If", rows, n, gx, off_x, off_w, off_b, off_y, eps)


def grid(rows, max_groups=65535):
    gx = max(1, min(rows, max_groups))
    return gx, -(-rows // gx)


def wg_for(n):
    """Workgroup size for rows of ``n``: 64 for short rows (fewer idle invocations), else 256."""
    return 64 if n <= 1024 else 256


_HEAD = """struct Params { rows: u32, n: u32, gx: u32, ox: u32, ow: u32, ob: u32, oy: u32, eps: f32 };
@group(0) @binding(0) var<uniform> P: Params;"""


def _bindings(has_w, has_b, T="f32"):
    L = [f"@group(0) @binding(1) var<storage, read> X: array<{T}>;"]
    b = 2
    if has_w:
        L.append(f"@group(0) @binding({b}) var<storage, read> W: array<{T}>;")
        b += 1
    if has_b:
        L.append(f"@group(0) @binding({b}) var<storage, read> B: array<{T}>;")
        b += 1
    L.append(f"@group(0) @binding({b}) var<storage, read_write> Y: array<{T}>;")
    return L


def _tree(wg, arrays, merge):
    """Fold workgroup arrays ``arrays`` into element 0: ``merge`` is WGSL statements combining
    slot ``t`` with slot ``t + h`` (names ``t``, ``u = t + h``)."""
    return [
        f"  for (var h = {wg // 2}u; h > 0u; h = h >> 1u) {{",
        "    workgroupBarrier();",
        "    if (t < h) {",
        "      let u = t + h;",
        *("      " + s for s in merge),
        "    }",
        "  }",
        "  workgroupBarrier();",
    ]


def _per_lane(vec, body):
    """WGSL running ``body`` (statements on ``v``) for the element ``xv`` (vec == 1) or for
    each of its 4 components."""
    if vec == 1:
        return ["    let v = xv;", *("    " + b for b in body)]
    return [line for e in "xyzw" for line in
            ([f"    {{ let v = xv.{e};"] + ["      " + b for b in body] + ["    }"])]


def rows(op, wg=256, has_weight=False, has_bias=False, vec=1):
    """``vec=4``: x, weight, bias and y are read and written as vec4 (n, and every offset, a
    multiple of 4)."""
    if vec not in (1, 4):
        raise ValueError(f"nn_wgsl.rows: vec must be 1 or 4; got {vec}")
    if op not in OPS:
        raise ValueError(f"nn_wgsl.rows: op must be one of {OPS}; got {op!r}")
    if wg not in (32, 64, 128, 256):
        raise ValueError(f"nn_wgsl.rows: wg must be 32, 64, 128 or 256; got {wg}")
    if op in ("softmax", "log_softmax") and (has_weight or has_bias):
        raise ValueError("nn_wgsl.rows: softmax takes no weight or bias")
    if op == "rms_norm" and has_bias:
        raise ValueError("nn_wgsl.rows: rms_norm takes no bias")
    L = [_HEAD, *_bindings(has_weight, has_bias, "f32" if vec == 1 else "vec4<f32>")]
    w = L.append
    if op in ("softmax", "log_softmax"):
        w(f"var<workgroup> SM: array<f32, {wg}>;")
        w(f"var<workgroup> SS: array<f32, {wg}>;")
    elif op == "layer_norm":
        w(f"var<workgroup> SC: array<f32, {wg}>;")
        w(f"var<workgroup> SM: array<f32, {wg}>;")
        w(f"var<workgroup> SQ: array<f32, {wg}>;")
    else:
        w(f"var<workgroup> SS: array<f32, {wg}>;")
    w(f"@compute @workgroup_size({wg}, 1, 1)")
    w("fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {")
    w("  let row = wid.y * P.gx + wid.x;")
    w("  if (row >= P.rows) { return; }")
    w("  let t = lid.x;")
    w(f"  let n = P.n / {vec}u;")
    w(f"  let bx = (P.ox + row * P.n) / {vec}u;")
    w(f"  let by = (P.oy + row * P.n) / {vec}u;")
    w(f"  let bw = P.ow / {vec}u;")
    w(f"  let bb = P.ob / {vec}u;")
    if op in ("softmax", "log_softmax"):
        w(f"  var m = -{FLT_MAX};")
        w("  var s = 0.0;")
        w(f"  for (var i = t; i < n; i += {wg}u) {{")
        w("    let xv = X[bx + i];")
        L += _per_lane(vec, ["if (v > m) { s = s * exp(m - v) + 1.0; m = v; } else { s += exp(v - m); }"])
        w("  }")
        w("  SM[t] = m;")
        w("  SS[t] = s;")
        L += _tree(wg, None, [
            "let a = SM[t];", "let b = SM[u];", "let mm = max(a, b);",
            "SS[t] = SS[t] * exp(a - mm) + SS[u] * exp(b - mm);", "SM[t] = mm;"])
        w("  let mx = SM[0];")
        if op == "softmax":
            w("  let r = 1.0 / SS[0];")
            w(f"  for (var i = t; i < n; i += {wg}u) {{ Y[by + i] = exp(X[bx + i] - mx) * r; }}")
        else:
            w("  let lse = log(SS[0]);")
            w(f"  for (var i = t; i < n; i += {wg}u) {{ Y[by + i] = (X[bx + i] - mx) - lse; }}")
    else:
        if op == "layer_norm":
            w("  var c = 0.0;")
            w("  var mean = 0.0;")
            w("  var q = 0.0;")
            w(f"  for (var i = t; i < n; i += {wg}u) {{")
            w("    let xv = X[bx + i];")
            L += _per_lane(vec, ["c += 1.0;", "let d = v - mean;", "mean += d / c;", "q += d * (v - mean);"])
            w("  }")
            w("  SC[t] = c;")
            w("  SM[t] = mean;")
            w("  SQ[t] = q;")
            L += _tree(wg, None, [
                "let ca = SC[t];", "let cb = SC[u];", "let cn = ca + cb;",
                "if (cb > 0.0) {",
                "  let d = SM[u] - SM[t];",
                "  let f = cb / cn;",
                "  SM[t] = SM[t] + d * f;",
                "  SQ[t] = SQ[t] + SQ[u] + d * d * ca * f;",
                "  SC[t] = cn;",
                "}"])
            w("  let mu = SM[0];")
            w("  let rs = inverseSqrt(SQ[0] / f32(P.n) + P.eps);")
            val = "(X[bx + i] - mu) * rs"
        else:
            w("  var s = 0.0;")
            w(f"  for (var i = t; i < n; i += {wg}u) {{ let v = X[bx + i]; s += dot(v, v); }}" if vec == 4 else
              f"  for (var i = t; i < n; i += {wg}u) {{ let v = X[bx + i]; s += v * v; }}")
            w("  SS[t] = s;")
            L += _tree(wg, None, ["SS[t] = SS[t] + SS[u];"])
            w("  let rs = inverseSqrt(SS[0] / f32(P.n) + P.eps);")
            val = "X[bx + i] * rs"
        if has_weight:
            val = f"({val}) * W[bw + i]"
        if has_bias:
            val = f"{val} + B[bb + i]"
        w(f"  for (var i = t; i < n; i += {wg}u) {{ Y[by + i] = {val}; }}")
    w("}")
    return "\n".join(L) + "\n"


def swiglu(wg=256):
    """``y = g / (1 + exp(-g)) * u`` elementwise (float32); exp(-g) overflowing to inf gives
    ``g / inf = -0``, the limit."""
    return "\n".join([
        _HEAD,
        "@group(0) @binding(1) var<storage, read> G: array<f32>;",
        "@group(0) @binding(2) var<storage, read> U: array<f32>;",
        "@group(0) @binding(3) var<storage, read_write> Y: array<f32>;",
        f"@compute @workgroup_size({wg}, 1, 1)",
        "fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {",
        f"  let i = (wid.y * P.gx + wid.x) * {wg}u + lid.x;",
        "  if (i >= P.n) { return; }",
        "  let g = G[P.ox + i];",
        "  Y[P.oy + i] = g / (1.0 + exp(-g)) * U[P.ow + i];",
        "}"]) + "\n"


def pack_batch_norm(total, C, L, gx, off_x, off_m, off_v, off_w, off_b, off_y, eps):
    return struct.pack("<10IfI", total, C, L, gx, off_x, off_m, off_v, off_w, off_b, off_y, eps, 0)


def batch_norm(has_w, has_b, wg=256):
    """Inference batch_norm over x ``(N, C, L)`` (float32), one element per invocation over a
    ``grid(ceil(total / wg))``: ``scale = w[c] * inverseSqrt(var[c] + eps)`` (WGSL's bound, 2
    ulp, is that of its division and sqrt; on a CPU adapter it is cheaper per element),
    ``shift = b[c] - mean[c] * scale`` (negated product without b), ``y = x * scale + shift``.
    Bindings: P (:func:`pack_batch_norm`), x, mean, var, then w and b where present, then y."""
    L = ["struct BN { total: u32, C: u32, L: u32, gx: u32, ox: u32, om: u32, ov: u32, ow: u32, "
         "ob: u32, oy: u32, eps: f32, pad: u32 };",
         "@group(0) @binding(0) var<uniform> P: BN;",
         "@group(0) @binding(1) var<storage, read> X: array<f32>;",
         "@group(0) @binding(2) var<storage, read> M: array<f32>;",
         "@group(0) @binding(3) var<storage, read> V: array<f32>;"]
    b = 4
    for name, present in (("W", has_w), ("B", has_b)):
        if present:
            L.append(f"@group(0) @binding({b}) var<storage, read> {name}: array<f32>;")
            b += 1
    L += [f"@group(0) @binding({b}) var<storage, read_write> Y: array<f32>;",
          f"@compute @workgroup_size({wg}, 1, 1)",
          "fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
          "@builtin(workgroup_id) wid: vec3<u32>) {",
          f"  let i = (wid.y * P.gx + wid.x) * {wg}u + lid.x;",
          "  if (i >= P.total) { return; }",
          "  let c = (i / P.L) % P.C;",
          "  let r = inverseSqrt(V[P.ov + c] + P.eps);",
          f"  let s = {'W[P.ow + c] * r' if has_w else 'r'};",
          "  let m = M[P.om + c] * s;",
          f"  let h = {'B[P.ob + c] - m' if has_b else '-m'};",
          "  Y[P.oy + i] = X[P.ox + i] * s + h;",
          "}"]
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------------- attention
SDPA_WG = 64          # queries per workgroup (one per invocation)


def sdpa_block_k(d, dv, max_shared_bytes=16384):
    """Keys per tile: the largest power of two up to 32 whose K and V tiles fit workgroup
    memory, or 0 when not even one key does."""
    bk = 32
    while bk and bk * (d + dv) * 4 > max_shared_bytes:
        bk //= 2
    return bk


def pack_sdpa(Hq, Hkv, L, S, off_q, off_k, off_v, off_o, scale, causal):
    return struct.pack("<7IfI3I", Hq, Hkv, L, S, off_q, off_k, off_v, scale, int(bool(causal)), off_o, 0, 0)


def _each(indent, n, body, unroll):
    """WGSL running ``body`` for ``c`` in 0..n: a loop, or ``n`` statements with constant
    indices (private arrays indexed by constants stay in registers)."""
    if not unroll:
        return f"{indent}for (var c = 0u; c < {n}u; c++) {{ {body} }}"
    return "\n".join(indent + re.sub(r"\bc\b", f"{i}u", body) for i in range(n))


def _ld(buf, base, w4, idx="c"):
    """Element ``idx`` of ``buf`` from ``base`` (scalar), or the vec4 at ``4 * idx``."""
    if w4 == 1:
        return f"{buf}[{base} + {idx}]"
    return "vec4<f32>(" + ", ".join(f"{buf}[{base} + 4u * {idx} + {e}u]" for e in range(4)) + ")"


def sdpa(d, dv, bk, unroll=None):
    """Attention of float32 ``q (B, Hq, L, d)``, ``k (B, Hkv, S, d)``, ``v (B, Hkv, S, dv)``, all
    C-contiguous, into ``o (B, Hq, L, dv)``: workgroup ``(x, y)`` takes queries
    ``64x .. 64x + 63`` of head ``y`` (= b * Hq + h; kv head ``h // (Hq / Hkv)``), one query per
    invocation holding its q row and output accumulator in registers.  Key tiles of ``bk``
    keys (K and V) are staged in workgroup memory; per tile the scores are computed, then the
    running max, sum and accumulator are rescaled once (online softmax, float32).  Causal is
    aligned to the lower right (query i sees keys ``j <= i + S - L``); tiles past the
    workgroup's last visible key are not visited.  A query with no visible key gives 0.
    Head dims that are multiples of 4 hold q, the accumulator and the tiles as vec4.
    Bindings: P (:func:`pack_sdpa`), q, k, v (read), o (read-write); grid
    ``(ceil(L / 64), B * Hq)``."""
    wg = SDPA_WG
    if unroll is None:
        unroll = d <= 128 and dv <= 128
    # head dims that are multiples of 4: q, accumulator and tiles as vec4 (a quarter of the
    # workgroup-memory reads and register slots)
    w4 = 4 if d % 4 == 0 and dv % 4 == 0 else 1
    T = "vec4<f32>" if w4 == 4 else "f32"
    d4, dv4 = d // w4, dv // w4
    return "\n".join([
        "struct Params { Hq: u32, Hkv: u32, L: u32, S: u32, oq: u32, ok: u32, ov: u32, scale: f32,",
        "  causal: u32, oo: u32, p1: u32, p2: u32 };",
        "@group(0) @binding(0) var<uniform> P: Params;",
        "@group(0) @binding(1) var<storage, read> Q: array<f32>;",
        "@group(0) @binding(2) var<storage, read> K: array<f32>;",
        "@group(0) @binding(3) var<storage, read> V: array<f32>;",
        "@group(0) @binding(4) var<storage, read_write> O: array<f32>;",
        f"var<workgroup> Ks: array<{T}, {bk * d4}>;",
        f"var<workgroup> Vs: array<{T}, {bk * dv4}>;",
        f"@compute @workgroup_size({wg}, 1, 1)",
        "fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {",
        "  let t = lid.x;",
        "  let L = P.L;",
        "  let S = P.S;",
        "  let head = wid.y;",
        "  let h = head % P.Hq;",
        "  let kvh = (head / P.Hq) * P.Hkv + h / (P.Hq / P.Hkv);",
        f"  let q0 = wid.x * {wg}u;",
        "  let i = q0 + t;",
        "  let live = i < L;",
        f"  var qv: array<{T}, {d4}>;",
        f"  var acc: array<{T}, {dv4}>;",
        f"  var sc: array<f32, {bk}>;",
        "  let qb = P.oq + (head * L + min(i, L - 1u)) * " + f"{d}u;",
        _each("  ", d4, f"qv[c] = {_ld('Q', 'qb', w4)} * P.scale;", unroll),
        _each("  ", dv4, f"acc[c] = {T}(0.0);", unroll),
        f"  var m = -{FLT_MAX};",
        "  var l = 0.0;",
        "  // keys visible to the workgroup's last query (lower-right causal), and to this one",
        "  var kend = S;",
        "  var mine = S;",
        "  if (P.causal != 0u) {",
        f"    let last = min(q0 + {wg - 1}u, L - 1u) + S;",
        "    kend = select(0u, min(S, last + 1u - L), last + 1u > L);",
        "    let me = min(i, L - 1u) + S;",
        "    mine = select(0u, min(S, me + 1u - L), me + 1u > L);",
        "  }",
        "  let kb = P.ok + kvh * S * " + f"{d}u;",
        "  let vb = P.ov + kvh * S * " + f"{dv}u;",
        f"  for (var k0 = 0u; k0 < kend; k0 += {bk}u) {{",
        "    workgroupBarrier();",
        f"    let nk = min({bk}u, S - k0);",
        f"    for (var e = t; e < nk * {d4}u; e += {wg}u) {{ Ks[e] = {_ld('K', f'kb + k0 * {d}u', w4, 'e')}; }}",
        f"    for (var e = t; e < nk * {dv4}u; e += {wg}u) {{ Vs[e] = {_ld('V', f'vb + k0 * {dv}u', w4, 'e')}; }}",
        "    workgroupBarrier();",
        "    // loops over the tile's keys are uniform (lanes stay together); keys this query",
        "    // may not see are masked per lane",
        "    var mx = m;",
        "    for (var j = 0u; j < nk; j++) {",
        "      var s = 0.0;",
        _each("      ", d4, f"s += {'dot' if w4 == 4 else ''}(qv[c] {',' if w4 == 4 else '*'} Ks[j * {d4}u + c]);", unroll),
        f"      s = select(-{FLT_MAX}, s, k0 + j < mine);",
        "      sc[j] = s;",
        "      mx = max(mx, s);",
        "    }",
        "    let a = exp(m - mx);",
        "    m = mx;",
        "    l *= a;",
        _each("    ", dv4, "acc[c] *= a;", unroll),
        "    for (var j = 0u; j < nk; j++) {",
        "      let p = select(0.0, exp(sc[j] - m), k0 + j < mine);",
        "      l += p;",
        _each("      ", dv4, f"acc[c] += p * Vs[j * {dv4}u + c];", unroll),
        "    }",
        "  }",
        "  if (live) {",
        "    let r = select(0.0, 1.0 / l, l > 0.0);",
        f"    let ob = P.oo + (head * L + i) * {dv}u;",
        *([_each("    ", dv, "O[ob + c] = acc[c] * r;", unroll)] if w4 == 1 else
          [_each("    ", dv4, f"O[ob + 4u * c + {e}u] = acc[c].{'xyzw'[e]} * r;", unroll) for e in range(4)]),
        "  }",
        "}"]) + "\n"
