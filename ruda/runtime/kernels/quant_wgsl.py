"""WGSL for ``linear_quantized``: ``y = x @ dequantize(W).T + bias`` with W in GGML's Q8_0,
Q4_0 or Q4_1 blocks of 32 (pure code generation; the launcher is
:mod:`ruda.backends.wgpu._nn_quant`).

Storage on wgpu: int8 and uint8 arrays are widened to one 32-bit word per element (see
``ruda.runtime.wgsl_types.STORAGE``), so ``Q`` is ``array<i32>`` for q8_0 (one value per word)
and ``array<u32>`` for q4_0/q4_1 (one byte per word: element j of a block in its low nibble,
element j + 16 in its high nibble). Values: q8_0 ``d * q``; q4_0 ``d * (nibble - 8)``; q4_1
``d * nibble + m``, computed in float32 as the dequantizer does, accumulated in float32.

Two kernels, both with the 48-byte uniform of :func:`pack`:

- :func:`gemv` (few rows of x, decode): one workgroup per ``ob`` output rows, its invocations
  strided over ``in`` (neighbouring invocations read neighbouring words), ``r`` rows of x
  accumulated in registers, then a tree reduction in workgroup memory.
- :func:`gemm` (prefill): 64 x 64 output tiles, 16 x 16 invocations of 4 x 4 outputs each;
  per block of 32 along ``in`` the x tile and the dequantized W tile are staged in workgroup
  memory (16 KiB, as vec4 columns).
"""
import struct

from ruda.runtime.kernels.nn_wgsl import grid  # noqa: F401  (the launcher's)

KINDS = ("q8_0", "q4_0", "q4_1")
GEMV_WG = 64
GEMM_T = 64           # output tile (rows of x and output features)
_HEAD = """struct Params { rows: u32, nout: u32, nin: u32, gx: u32, ox: u32, oq: u32, os: u32,
  om: u32, ob: u32, oy: u32, p0: u32, p1: u32 };
@group(0) @binding(0) var<uniform> P: Params;"""


def pack(rows, nout, nin, gx, off_x, off_q, off_s, off_m, off_b, off_y):
    """The uniform: sizes, the grid's x extent and every operand's offset (in elements)."""
    return struct.pack("<12I", rows, nout, nin, gx, off_x, off_q, off_s, off_m, off_b, off_y, 0, 0)


def _bindings(kind, has_bias):
    reads = [("X", "f32"), ("Q", "i32" if kind == "q8_0" else "u32"), ("S", "f32")]
    reads += [("M", "f32")] * (kind == "q4_1") + [("B", "f32")] * bool(has_bias)
    L = [f"@group(0) @binding({i}) var<storage, read> {n}: array<{t}>;"
         for i, (n, t) in enumerate(reads, 1)]
    L.append(f"@group(0) @binding({len(reads) + 1}) var<storage, read_write> Y: array<f32>;")
    return L


def _pair(kind, byte, sb):
    """WGSL lines defining ``wl``, ``wh`` (elements j and j + 16 of a q4 block) from the u32
    ``byte`` and the scale index ``sb``."""
    d = f"S[P.os + {sb}]"
    if kind == "q4_0":
        return [f"let d = {d};",
                f"let wl = d * (f32({byte} & 15u) - 8.0);",
                f"let wh = d * (f32({byte} >> 4u) - 8.0);"]
    return [f"let d = {d};", f"let mn = M[P.om + {sb}];",
            f"let wl = d * f32({byte} & 15u) + mn;",
            f"let wh = d * f32({byte} >> 4u) + mn;"]


def gemv(kind, r, ob, has_bias, wg=GEMV_WG):
    """``r`` rows of x (1..8) times ``ob`` output rows per workgroup of ``wg`` invocations."""
    assert kind in KINDS and 1 <= r and 1 <= ob
    n_acc = r * ob
    L = [_HEAD] + _bindings(kind, has_bias)
    L.append(f"var<workgroup> red: array<f32, {wg * n_acc}>;")
    L.append(f"@compute @workgroup_size({wg}, 1, 1)")
    L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
             "@builtin(workgroup_id) wid: vec3<u32>) {")
    L.append(f"  let o0 = (wid.y * P.gx + wid.x) * {ob}u;")
    L.append("  let t = lid.x;")
    L.append("  let nb = P.nin / 32u;")
    L.append(f"  var acc: array<f32, {n_acc}>;")
    for a in range(n_acc):
        L.append(f"  acc[{a}] = 0.0;")
    for k in range(ob):
        L.append(f"  if (o0 + {k}u < P.nout) {{")
        L.append(f"    let o = o0 + {k}u;")
        if kind == "q8_0":
            L.append(f"    for (var e = t; e < P.nin; e += {wg}u) {{")
            L.append("      let w = f32(Q[P.oq + o * P.nin + e]) * S[P.os + o * nb + e / 32u];")
            for i in range(r):
                L.append(f"      acc[{i * ob + k}] += w * X[P.ox + {i}u * P.nin + e];")
        else:
            L.append("    let nh = P.nin / 2u;")
            L.append(f"    for (var c = t; c < nh; c += {wg}u) {{")
            L.append("      let qb = Q[P.oq + o * nh + c];")
            L.append("      let e = (c / 16u) * 32u + c % 16u;")
            L.extend("      " + s for s in _pair(kind, "qb", "o * nb + c / 16u"))
            for i in range(r):
                L.append(f"      let x{i} = P.ox + {i}u * P.nin + e;")
                L.append(f"      acc[{i * ob + k}] += wl * X[x{i}] + wh * X[x{i} + 16u];")
        L.append("    }")
        L.append("  }")
    for a in range(n_acc):
        L.append(f"  red[{a * wg}u + t] = acc[{a}];")
    L.append("  workgroupBarrier();")
    L.append(f"  for (var s = {wg // 2}u; s > 0u; s >>= 1u) {{")
    L.append("    if (t < s) {")
    for a in range(n_acc):
        L.append(f"      red[{a * wg}u + t] += red[{a * wg}u + t + s];")
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("  }")
    L.append(f"  if (t < {ob}u && o0 + t < P.nout) {{")
    L.append("    let o = o0 + t;")
    L.append("    let bo = 0.0;" if not has_bias else "    let bo = B[P.ob + o];")
    for i in range(r):
        L.append(f"    Y[P.oy + {i}u * P.nout + o] = red[({i}u * {ob}u + t) * {wg}u] + bo;")
    L.append("  }")
    L.append("}")
    return "\n".join(L) + "\n"


def gemm(kind, has_bias):
    """64 x 64 tiles of y for any number of rows (edges guarded)."""
    assert kind in KINDS
    T = GEMM_T
    L = [_HEAD] + _bindings(kind, has_bias)
    # column k of the x tile and of the W tile, 64 values as 16 vec4 each
    L.append(f"var<workgroup> xs: array<vec4<f32>, {32 * T // 4}>;")
    L.append(f"var<workgroup> ws: array<vec4<f32>, {32 * T // 4}>;")
    L.append("@compute @workgroup_size(16, 16, 1)")
    L.append("fn main(@builtin(local_invocation_id) lid: vec3<u32>, "
             "@builtin(workgroup_id) wid: vec3<u32>) {")
    L.append("  let tx = lid.x;")
    L.append("  let ty = lid.y;")
    L.append("  let t = ty * 16u + tx;")
    L.append(f"  let n0 = wid.x * {T}u;")
    L.append(f"  let m0 = wid.y * {T}u;")
    L.append("  let nb = P.nin / 32u;")
    for i in range(4):
        L.append(f"  var acc{i} = vec4<f32>(0.0);")
    L.append("  for (var b = 0u; b < nb; b++) {")
    # x tile: 64 rows x 32 columns, 8 values per invocation (neighbours read along in)
    L.append(f"    for (var i = 0u; i < {32 * T // 256}u; i++) {{")
    L.append("      let idx = t + 256u * i;")
    L.append("      let mm = idx / 32u;")
    L.append("      let kk = idx % 32u;")
    L.append("      let gm = m0 + mm;")
    L.append("      var v = 0.0;")
    L.append("      if (gm < P.rows) { v = X[P.ox + gm * P.nin + b * 32u + kk]; }")
    L.append("      xs[kk * 16u + mm / 4u][mm % 4u] = v;")
    L.append("    }")
    if kind == "q8_0":
        L.append(f"    for (var i = 0u; i < {32 * T // 256}u; i++) {{")
        L.append("      let idx = t + 256u * i;")
        L.append("      let nn = idx / 32u;")
        L.append("      let kk = idx % 32u;")
        L.append("      let gn = n0 + nn;")
        L.append("      var w = 0.0;")
        L.append("      if (gn < P.nout) {")
        L.append("        w = f32(Q[P.oq + gn * P.nin + b * 32u + kk]) * S[P.os + gn * nb + b];")
        L.append("      }")
        L.append("      ws[kk * 16u + nn / 4u][nn % 4u] = w;")
        L.append("    }")
    else:
        L.append(f"    for (var i = 0u; i < {16 * T // 256}u; i++) {{")
        L.append("      let idx = t + 256u * i;")
        L.append("      let nn = idx / 16u;")
        L.append("      let j = idx % 16u;")
        L.append("      let gn = n0 + nn;")
        L.append("      var lo = 0.0;")
        L.append("      var hi = 0.0;")
        L.append("      if (gn < P.nout) {")
        L.append("        let qb = Q[P.oq + gn * (P.nin / 2u) + b * 16u + j];")
        L.extend("        " + s for s in _pair(kind, "qb", "gn * nb + b"))
        L.append("        lo = wl;")
        L.append("        hi = wh;")
        L.append("      }")
        L.append("      ws[j * 16u + nn / 4u][nn % 4u] = lo;")
        L.append("      ws[(j + 16u) * 16u + nn / 4u][nn % 4u] = hi;")
        L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("    for (var k = 0u; k < 32u; k++) {")
    L.append("      let a = xs[k * 16u + ty];")
    L.append("      let w = ws[k * 16u + tx];")
    for i, c in enumerate("xyzw"):
        L.append(f"      acc{i} += a.{c} * w;")
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("  }")
    L.append("  let gn = n0 + tx * 4u;")
    L.append("  var bv = vec4<f32>(0.0);")
    if has_bias:
        for j, c in enumerate("xyzw"):
            L.append(f"  if (gn + {j}u < P.nout) {{ bv.{c} = B[P.ob + gn + {j}u]; }}")
    for i in range(4):
        L.append(f"  let gm{i} = m0 + ty * 4u + {i}u;")
        L.append(f"  if (gm{i} < P.rows) {{")
        L.append(f"    let v{i} = acc{i} + bv;")
        for j, c in enumerate("xyzw"):
            L.append(f"    if (gn + {j}u < P.nout) {{ Y[P.oy + gm{i} * P.nout + gn + {j}u] = v{i}.{c}; }}")
        L.append("  }")
    L.append("}")
    return "\n".join(L) + "\n"
