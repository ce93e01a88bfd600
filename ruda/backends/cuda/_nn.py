"""Fused nn kernels on cuda (the names in ``ruda.backends.NN_KERNELS``; None where absent).

Each kernel takes native CuPy arrays already checked by ``ruda.nn`` (see ruda/nn/README.md) and
returns native arrays, or ``NotImplemented`` for a dtype or shape it does not cover.  Sources
come from :mod:`ruda.runtime.kernels.nn_cuda`; modules are compiled once per configuration
through ``_kernels.compile_source`` (NVRTC, IEEE subnormals, disk cache) and launched on CuPy's
current stream, on the device of the input array.  float32, float64, bfloat16 and float16 are
covered (bfloat16 is passed as its uint16 bits; both 16-bit types accumulate in float32).
"""
import numpy as np

from ruda.backends.cuda._nn_attention import sdpa  # noqa: F401 - the attention kernel
from ruda.backends.cuda._nn_conv import conv  # noqa: F401 - the convolution kernel
from ruda.backends.cuda._nn_launch import (
    HALVES, U16, _cp, aligned, arg, compute_dtype, contiguous, dname, empty, function, grid,
    rows_grid, shaped,
)
from ruda.runtime.kernels import nn_cuda as gen

REG_UNITS = 4          # 16-byte vectors per thread kept in registers (scalar rows: 16 elements)


def row_config(n, itemsize, vec):
    """(threads per row, rows per block, units per thread) holding a row of ``n`` in registers,
    or None when it does not fit (then the long-row kernel runs). Rows of at most 16 units
    share a warp (8 or 16 threads a row): a warp a row would leave half of it idle."""
    unit = 16 // itemsize if vec else 1
    per = REG_UNITS if vec else 4 * REG_UNITS
    units = -(-n // unit)
    if units <= 16:
        tpr = 8 if units <= 8 else 16
        return tpr, 128 // tpr, 1
    if units <= 32 * per:
        return 32, 4, -(-units // 32)
    tpr = 64
    while tpr * per < units:
        tpr *= 2
    if tpr > 1024:
        return None
    # float32 rows of a block each: 2 vectors a thread and twice the threads run faster than 4
    # (more loads in flight for the same registers; layer_norm gains most); the longest keep 4
    while vec and itemsize == 4 and tpr < 1024 and -(-units // tpr) > 2:
        tpr *= 2
    return tpr, 1, -(-units // tpr)


def _rows(op, x, w, b, eps, r=None):
    dt = dname(x)
    if dt is None or x.ndim != 2 or (w is not None and w.dtype != x.dtype) or (b is not None and b.dtype != x.dtype):
        return NotImplemented
    rows, n = x.shape
    if n >= 2**31 or (r is not None and (r.dtype != x.dtype or r.shape != x.shape)):
        return NotImplemented
    with x.device:
        x, w, b, r = contiguous(x), contiguous(w), contiguous(b), contiguous(r)
        y = empty((rows, n), x.dtype)
        s = None if r is None else empty((rows, n), x.dtype)
        if rows == 0 or n == 0:
            return y if r is None else (s, y)
        itemsize = x.dtype.itemsize
        vec = n % (16 // itemsize) == 0 and aligned(x, y, w, b, r, s)
        cfg = row_config(n, itemsize, vec)
        hw, hb, hr = w is not None, b is not None, r is not None
        if cfg is not None and op == "layer_norm" and hw and hb and not hr and cfg[0] == 1024 and cfg[2] > 2:
            cfg = None      # row, weight and bias past 64 registers a thread spill: the long kernel
        args = (arg(x), arg(w), arg(b), arg(y), np.int64(rows), np.int32(n), np.float64(eps))
        if cfg is None:
            if hr:
                return NotImplemented            # long rows: the residual add stays separate
            fn = function(("rows_long", op, dt, hw, hb), lambda: gen.rows_long(op, dt, hw, hb), "ruda_rows")
            grid, block = rows, 1024
        else:
            tpr, rpb, vpt = cfg
            fn = function(("rows", op, dt, tpr, rpb, vpt, vec, hw, hb, hr),
                          lambda: gen.rows(op, dt, tpr, rpb, vpt, vec, hw, hb, hr), "ruda_rows")
            grid, block = -(-rows // rpb), tpr * rpb
            if hr:
                args += (arg(r), arg(s))
        fn((grid,), (block,), args)
        return y if r is None else (s, y)


def softmax(x, log):
    return _rows("log_softmax" if log else "softmax", x, None, None, 0.0)


def layer_norm(x, weight, bias, eps):
    return _rows("layer_norm", x, weight, bias, eps)


def rms_norm(x, weight, eps):
    return _rows("rms_norm", x, weight, None, eps)


def add_rms_norm(x, residual, weight, eps):
    """x, residual (..., n): (x + residual, rms_norm of it over the last axis), one kernel."""
    n = x.shape[-1] if x.ndim else 1
    r = _rows("rms_norm", shaped(x, (-1, n)), weight, None, eps, shaped(residual, (-1, n)))
    return r if r is NotImplemented else tuple(shaped(a, x.shape) for a in r)


def _gemv_call(x, weight, swiglu=False, norm=None, res=None):
    """x (rows, in) @ weight (out, in).T through the bfloat16 / float16 GEMV's variants
    (``_gemv.gemv``'s ``swiglu``, ``norm``, ``res``), or NotImplemented."""
    from ruda.backends.cuda import _gemv
    dt = dname(x)
    if dt not in HALVES or weight.dtype != x.dtype or x.ndim != 2 or not _gemv.ENABLED:
        return NotImplemented
    rows, k = x.shape
    with x.device:
        if norm is not None:
            norm = (contiguous(norm[0]).view(U16), norm[1])
        y = _gemv.gemv(x.view(U16)[None], weight.view(U16).T[None], rows, k, weight.shape[0],
                       swiglu=swiglu, dtype=dt, norm=norm,
                       res=None if res is None else res.view(U16))
    return NotImplemented if y is None else y.view(x.dtype)


def linear_swiglu(x, weight):
    """x (rows, in) @ weight (2I, in).T, then silu(g) * u of the halves, in one launch: the
    bfloat16 / float16 GEMV's swiglu variant, up to ``_gemv.MAX_ROWS`` rows; else NotImplemented."""
    return _gemv_call(x, weight, swiglu=True)


def rms_norm_linear(x, norm_weight, weight, eps, swiglu):
    """x (rows, in): ``linear`` (``swiglu``: ``linear_swiglu``) of x's rows rms-normalized with
    ``norm_weight``, in one launch: the GEMV's norm variant (bfloat16 / float16, up to
    ``_gemv.MAX_ROWS`` rows, in <= ``_gemv.NORM_MAX_K``: the bits of the norm kernel and the
    GEMV); else NotImplemented."""
    return _gemv_call(x, weight, swiglu=swiglu, norm=(norm_weight, eps))


def add_linear(residual, x, weight):
    """residual (rows, out) + x (rows, in) @ weight (out, in).T, in one launch: the GEMV's
    residual variant (bfloat16 / float16, up to ``_gemv.MAX_ROWS`` rows); else NotImplemented."""
    return _gemv_call(x, weight, res=residual)


def swiglu(gate, up):
    dt = dname(gate)
    if dt is None or up.dtype != gate.dtype or up.shape != gate.shape:
        return NotImplemented
    with gate.device:
        g, u = contiguous(gate), contiguous(up)
        y = empty(g.shape, g.dtype)
        n = y.size
        if n == 0:
            return y
        vec = aligned(g, u, y)
        fn = function(("swiglu", dt, vec), lambda: gen.swiglu(dt, vec), "ruda_swiglu")
        per = 16 // g.dtype.itemsize if vec else 1
        fn((grid(-(-n // per)),), (256,), (arg(g), arg(u), arg(y), np.int64(n)))
        return y


def apply_rope(x, cos, sin, interleaved, rotary_dim):
    dt, ct = dname(x), dname(cos)
    if dt is None or ct is None or sin.dtype != cos.dtype or x.ndim < 2:
        return NotImplemented
    tlen, d = x.shape[-2], x.shape[-1]
    r = int(rotary_dim)
    if r % 2 or r > d or cos.shape != (tlen, r // 2) or sin.shape != cos.shape:
        return NotImplemented
    with x.device:
        cos, sin = contiguous(cos), contiguous(sin)
        it = x.dtype.itemsize
        if x.ndim == 4 and x.strides[3] == it and all(s >= 0 and s % it == 0 for s in x.strides):
            heads, (sb, sh, ts) = x.shape[1], (s // it for s in x.strides[:3])   # read in place
        else:
            x = contiguous(x)
            heads, sb, sh, ts = 1, tlen * d, 0, d
        y = empty(x.shape, x.dtype)
        total = y.size
        if total == 0:
            return y
        inter = bool(interleaved)
        fn = function(("rope", dt, ct, inter), lambda: gen.rope(dt, ct, inter), "ruda_rope")
        fn((grid(total),), (256,), (arg(x), arg(cos), arg(sin), arg(y), np.int64(total),
                                      np.int32(tlen), np.int32(d), np.int32(r), np.int32(heads),
                                      np.int64(sb), np.int64(sh), np.int64(ts)))
        return y


def rope_kv_put(qkv, cos, sin, pos, kc, vc, q_heads):
    """qkv (B, (q_heads + 2 H) * D); cos, sin (1, D / 2); pos int32 (1,); kc, vc (B, H, T, D)
    C-contiguous: q and k rotated, k and v written at pos, in one launch. Returns q (B, q_heads,
    1, D)."""
    dt, ct = dname(qkv), dname(cos)
    if dt is None or ct is None or sin.dtype != cos.dtype or kc.dtype != qkv.dtype or vc.dtype != qkv.dtype:
        return NotImplemented
    B, H, T, D = kc.shape
    if (qkv.ndim != 2 or qkv.shape != (B, (q_heads + 2 * H) * D) or vc.shape != kc.shape or D % 2
            or cos.shape != (1, D // 2) or sin.shape != cos.shape or pos.dtype != np.int32
            or qkv.strides[1] != qkv.itemsize or not (kc.flags.c_contiguous and vc.flags.c_contiguous)):
        return NotImplemented
    with qkv.device:
        cos, sin = contiguous(cos), contiguous(sin)
        q = empty((B, q_heads, 1, D), qkv.dtype)
        fn = function(("rope_kv", dt, ct), lambda: gen.rope_kv(dt, ct), "ruda_rope_kv")
        fn((grid(qkv.size),), (256,), (arg(qkv), np.int64(qkv.strides[0] // qkv.itemsize), arg(cos), arg(sin),
                                         pos, arg(q), arg(kc), arg(vc), np.int32(B), np.int32(q_heads),
                                         np.int32(H), np.int32(D), np.int32(T)))
        return q


def top_k(x, k):
    dt = dname(x)
    kb = gen.kbucket(int(k))
    if dt is None or kb is None or x.ndim != 2 or x.shape[1] >= 2**31 or k > x.shape[1]:
        return NotImplemented
    rows, n = x.shape
    cp = _cp()
    with x.device:
        x = contiguous(x)
        vals = empty((rows, k), x.dtype)
        idx = cp.empty((rows, k), np.int64)
        if rows == 0 or k == 0:
            return vals, idx
        fn = function(("top_k", dt, kb), lambda: gen.top_k(dt, kb), "ruda_top_k")
        fn((-(-rows // 4),), (128,), (arg(x), arg(vals), idx, np.int64(rows), np.int32(n), np.int32(k)))
        return vals, idx


def channel_affine(x, scale, shift):
    """x (N, C, L) -> ``x * scale[c] + shift[c]`` in one pass (``nn_cuda.channel_affine``); scale
    and shift (C,) in the compute dtype (float32 for bfloat16 and float16)."""
    dt = dname(x)
    if dt is None or x.ndim != 3:
        return NotImplemented
    want = compute_dtype(dt, x.dtype)
    if scale.dtype != want or shift.dtype != want:
        return NotImplemented
    with x.device:
        x, scale, shift = contiguous(x), contiguous(scale), contiguous(shift)
        y = empty(x.shape, x.dtype)
        if y.size == 0:
            return y
        wide = y.size >= gen.WIDE
        fn = function(("channel_affine", dt, wide), lambda: gen.channel_affine(dt, wide),
                      "ruda_channel_affine")
        fn((grid(y.size),), (256,), (arg(x), arg(scale), arg(shift), arg(y), np.int64(y.size),
                                   np.int32(x.shape[1]), np.int32(x.shape[2])))
        return y


def batch_norm(x, mean, var, weight, bias, eps):
    """x (N, C, L) normalized per channel with the inference statistics, the coefficients
    computed per row in the kernel (``nn_cuda.batch_norm``: one launch for what ruda.nn
    composes in six); mean, var, weight, bias (C,) in the compute dtype (float32 for
    bfloat16 and float16), weight and bias may be None."""
    dt = dname(x)
    if dt is None or x.ndim != 3:
        return NotImplemented
    want = compute_dtype(dt, x.dtype)
    if any(a is not None and a.dtype != want for a in (mean, var, weight, bias)):
        return NotImplemented
    N, C, L = x.shape
    if N * C >= 2 ** 31 or L >= 2 ** 31:
        return NotImplemented
    with x.device:
        x, mean, var = contiguous(x), contiguous(mean), contiguous(var)
        weight, bias = contiguous(weight), contiguous(bias)
        y = empty(x.shape, x.dtype)
        if y.size == 0:
            return y
        fn = function(("batch_norm", dt), lambda: gen.batch_norm(dt), "ruda_batch_norm")
        fn(rows_grid(N * C, L), (256,), (arg(x), arg(mean), arg(var), arg(weight), arg(bias),
                                         arg(y), np.int32(N * C), np.int32(C), np.int32(L),
                                         want.type(eps)))
        return y


def activation(x, name, p1, p2):
    """float32/float64/bfloat16/float16 activations in one elementwise pass with 16-byte vectors
    (``nn_cuda.activation``); float64 erf stays with ruda.nn's composition (CUDA's double erf is
    within 2 ulp, ruda's within 1)."""
    dt = dname(x)
    if name not in gen.ACTIVATIONS or dt is None or (name == "erf" and dt == "float64"):
        return NotImplemented
    num = lambda p: float(p) if isinstance(p, (int, float)) else 0.0   # noqa: E731 - p2 of erf: tables
    with x.device:
        x = contiguous(x)
        y = empty(x.shape, x.dtype)
        n = y.size
        if n == 0:
            return y
        vec = aligned(x, y)
        fn = function(("activation", name, dt, vec), lambda: gen.activation(dt, name, vec), "ruda_activation")
        per = 16 // x.dtype.itemsize if vec else 1
        fn((grid(-(-n // per)),), (256,), (arg(x), arg(y), np.int64(n), np.float64(num(p1)), np.float64(num(p2))))
        return y
