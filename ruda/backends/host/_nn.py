"""Fused nn kernels on the host (the names in ``ruda.backends.NN_KERNELS``; None where absent).

Contract: ruda/nn/README.md. ``softmax`` (float32: a Numba loop summing exp in float64 lanes,
then writing the result) and ``swiglu`` run over blocks of rows that stay in the caches, a
block per thread (NumPy's ufuncs and the nogil loops release the GIL). ``layer_norm``
and ``rms_norm`` are Numba row loops (a parallel and a serial build, ``_jit.py``; cached),
accumulating in float64, the sums reassociated so that they vectorize (``add_rms_norm``: the
residual add in the same loop, decoding-sized rows); where Numba is missing they run blocked
NumPy. float32 erf, gelu (both forms), elu, silu, sigmoid, softplus, hardsigmoid, hardswish,
relu6 and glu are single Numba loops without libm calls, so LLVM vectorizes them; float64
and Numba-less runs use NumPy block functions (both in ``_nn_math.py``). ``dropout`` draws
ruda.random's Philox words in the same pass (``_philox.py``). bfloat16 computes in float32
and rounds once.
"""
import numpy as np

from ruda import _dtypes
from ruda.backends import _workers
from ruda.backends.host._jit import jit, parallel_kernel
from ruda.backends.host._nn_math import (_ACT32, _act, _act32_flat, _erf32_flat, _glu32_rows,
                                         _lse32_rows, _sigmoid, _softmax32_rows, _swiglu32_rows)

_BF16 = _dtypes.bfloat16
_BLOCK = 1 << 16            # elements of one block of rows (256 KiB of float32)
_SMALL_BLOCK = 1 << 14      # elementwise chains with temporaries: a block and its temporaries in L2
_PARALLEL = 1 << 16         # elements from which the Numba row loops run on the thread team
_SPREAD = 1 << 18           # elements from which the elementwise loops go to the host's workers


def _work(x):
    """(x as float32/float64 C-contiguous, the dtype to return) or (None, None)."""
    if x.dtype == np.float32 or x.dtype == np.float64:     # (ascontiguousarray makes 0-d 1-d)
        return (x if x.flags.c_contiguous else np.ascontiguousarray(x)), x.dtype
    if _BF16 is not None and x.dtype == _BF16:
        return x.astype(np.float32, order="C"), x.dtype     # (astype keeps a transposed layout)
    return None, None


def _spread(n, fn, per=1):
    """fn(a, b) over [0, n) in one call, or split over the host's workers when n * per (the
    elements) reaches _SPREAD."""
    _workers.run_split(n, fn, _workers.THREADS if n * per >= _SPREAD else 1)


def _blocks(rows, n, fn, block=_BLOCK):
    """Calls fn(r0, r1) over blocks of rows, spread over threads when the work is large."""
    step = max(1, block // max(1, n))
    spans = [(r, min(rows, r + step)) for r in range(0, rows, step)]
    T = _workers.THREADS
    if len(spans) < 2 * T or T == 1:
        for s in spans:
            fn(*s)
        return
    per = -(-len(spans) // T)
    _workers.run(lambda i: [fn(*s) for s in spans[i * per:(i + 1) * per]], -(-len(spans) // per))


def softmax(x, log):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    out = np.empty_like(xw)

    def run(r0, r1):
        xs, o = xw[r0:r1], out[r0:r1]
        if fused:
            _softmax32_rows(xs, xs.max(axis=1), log, o)
            return
        m = xs.max(axis=1, keepdims=True)
        m[m == -np.inf] = 0                   # a row of -inf: 0/0 = NaN, as torch
        np.subtract(xs, m, out=o)
        if log:
            e = np.exp(o)
            o -= np.log(e.sum(axis=1, keepdims=True))
        else:
            np.exp(o, out=o)
            o /= o.sum(axis=1, keepdims=True)

    fused = xw.dtype == np.float32 and _softmax32_rows is not None
    with np.errstate(invalid="ignore", divide="ignore"):
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


def swiglu(gate, up):
    gw, odt = _work(gate)
    uw, _ = _work(up)
    if gw is None or uw is None or gate.dtype != up.dtype:
        return NotImplemented
    shape = gw.shape
    n = shape[-1] if gw.ndim else 1
    g2, u2 = gw.reshape(-1, n), uw.reshape(-1, n)
    out = np.empty_like(g2)
    if gw.dtype == np.float32 and g2.size <= _BLOCK and _swiglu32_rows is not None:
        _swiglu32_rows(g2, u2, out)
    else:
        def run(r0, r1):
            g, o = g2[r0:r1], out[r0:r1]
            np.negative(g, out=o)
            np.exp(o, out=o)                  # exp(-g): inf for very negative g, then g/inf = -0
            o += 1
            np.divide(g, o, out=o)
            o *= u2[r0:r1]

        with np.errstate(over="ignore", invalid="ignore"):      # -inf / inf: NaN, as torch
            _blocks(g2.shape[0], n, run)
    out = out.reshape(shape)
    return out if odt == out.dtype else out.astype(odt)


# -- norms: Numba row loops (compiled on first call, cached on disk) ------------------------
try:
    import numba as _nb
except ImportError:          # optional: the norms then run blocked NumPy
    _nb = None

if _nb is not None:
    @jit(inline="always")
    def _ln_row(x, w, b, eps, out, i):
        n = x.shape[1]
        s = 0.0
        for j in range(n):
            s += x[i, j]
        mean = s / n
        v = 0.0
        for j in range(n):
            d = x[i, j] - mean
            v += d * d
        r = 1.0 / np.sqrt(v / n + eps)
        for j in range(n):
            out[i, j] = (x[i, j] - mean) * r * w[j] + b[j]

    @jit(inline="always")
    def _rms_row(x, w, eps, out, i):
        n = x.shape[1]
        s = 0.0
        for j in range(n):
            s += np.float64(x[i, j]) * x[i, j]
        r = 1.0 / np.sqrt(s / n + eps)
        for j in range(n):
            out[i, j] = x[i, j] * r * w[j]

    _REDUCE = {"reassoc"}      # float64 sums in any order: vectorized, not one add at a time

    # (.serial for decoding: waking the thread team for one row costs far more than the row,
    # and fights BLAS's threads for the cores)
    @parallel_kernel(fastmath=_REDUCE, cache=True)
    def _ln_rows(x, w, b, eps, out):
        for i in _nb.prange(x.shape[0]):
            _ln_row(x, w, b, eps, out, i)

    @parallel_kernel(fastmath=_REDUCE, cache=True)
    def _rms_rows(x, w, eps, out):
        for i in _nb.prange(x.shape[0]):
            _rms_row(x, w, eps, out, i)

    @jit(fastmath=False, cache=True)
    def _add_rms_rows_serial(x, r, w, eps, s, out):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                s[i, j] = x[i, j] + r[i, j]
            _rms_row(s, w, eps, out, i)

    @parallel_kernel(fastmath=_REDUCE, cache=True)
    def _l2_rows(x, eps, out):
        """out[i] = x[i] / max(||x[i]||_2, eps), the norm accumulated in float64."""
        for i in _nb.prange(x.shape[0]):
            s = 0.0
            for j in range(x.shape[1]):
                s += np.float64(x[i, j]) * x[i, j]
            r = 1.0 / max(np.sqrt(s), eps)
            for j in range(x.shape[1]):
                out[i, j] = x[i, j] * r

    @parallel_kernel(fastmath=_REDUCE, cache=True)
    def _gn_rows(x, groups, w, b, eps, out):
        N, C, sp = x.shape
        cg = C // groups
        cnt = cg * sp
        for u in _nb.prange(N * groups):
            n, g = u // groups, u % groups
            s = 0.0
            for ch in range(g * cg, (g + 1) * cg):
                for j in range(sp):
                    s += x[n, ch, j]
            mean = s / cnt
            v = 0.0
            for ch in range(g * cg, (g + 1) * cg):
                for j in range(sp):
                    d = x[n, ch, j] - mean
                    v += d * d
            r = 1.0 / np.sqrt(v / cnt + eps)
            for ch in range(g * cg, (g + 1) * cg):
                sc = r * w[ch]
                sh = b[ch] - mean * sc
                for j in range(sp):
                    out[n, ch, j] = x[n, ch, j] * sc + sh

    # the elementwise loops below run on slices spread over the host's workers (``_spread``,
    # each slice ``one_thread``): they sit between BLAS calls in networks, where the spinning
    # threads of a Numba team would slow the BLAS work that follows

    @parallel_kernel(nogil=True, fastmath=False, cache=True)
    def _affine_planes(x, scale, shift, out, c0):
        """out[p] = x[p] * scale[c] + shift[c] over planes p of x (P, L), plane p of channel
        c = (c0 + p) % C."""
        C = scale.shape[0]
        for p in _nb.prange(x.shape[0]):
            c = (c0 + p) % C
            s, t = scale[c], shift[c]
            xr, orow = x[p], out[p]
            for j in range(x.shape[1]):
                orow[j] = xr[j] * s + t

    @parallel_kernel(nogil=True, fastmath=False, cache=True)
    def _affine_rows(x, scale, shift, out):
        """out[n] = x[n] * scale + shift over the rows of x (N, C): channel_affine of L = 1."""
        for n in _nb.prange(x.shape[0]):
            xr, orow = x[n], out[n]
            for c in range(x.shape[1]):
                orow[c] = xr[c] * scale[c] + shift[c]

else:
    _ln_rows = _rms_rows = _l2_rows = _gn_rows = _affine_planes = _affine_rows = None
    _add_rms_rows_serial = None


def _param(p, n, fill, dt):
    return np.full(n, fill, dtype=dt) if p is None else np.ascontiguousarray(p, dtype=dt)


def layer_norm(x, weight, bias, eps):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    w, b = _param(weight, n, 1, xw.dtype), _param(bias, n, 0, xw.dtype)
    out = np.empty_like(xw)
    if _ln_rows is not None:
        (_ln_rows if xw.size >= _PARALLEL else _ln_rows.serial)(xw, w, b, float(eps), out)
    else:
        def run(r0, r1):
            xs = xw[r0:r1].astype(np.float64)
            xs -= xs.mean(axis=1, keepdims=True)
            xs /= np.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps)
            out[r0:r1] = xs * w + b
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


def rms_norm(x, weight, eps):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    w = _param(weight, n, 1, xw.dtype)
    out = np.empty_like(xw)
    if _rms_rows is not None:
        (_rms_rows if xw.size >= _PARALLEL else _rms_rows.serial)(xw, w, float(eps), out)
    else:
        def run(r0, r1):
            xs = xw[r0:r1].astype(np.float64)
            xs /= np.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps)
            out[r0:r1] = xs * w
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


def l2_normalize(x, eps):
    xw, odt = _work(x)
    if xw is None or _l2_rows is None:
        return NotImplemented
    out = np.empty_like(xw)
    (_l2_rows if xw.size >= _PARALLEL else _l2_rows.serial)(xw, float(eps), out)
    return out if odt == out.dtype else out.astype(odt)


def add_rms_norm(x, residual, weight, eps):
    """Decoding-sized float32/float64 rows: the residual add (in x's dtype) and rms_norm over
    the last axis in one serial Numba loop; larger work or other dtypes decline (ruda.nn then
    composes the two)."""
    if _add_rms_rows_serial is None or x.dtype not in (np.float32, np.float64) or \
            residual.dtype != x.dtype or x.size >= _PARALLEL:
        return NotImplemented
    n = x.shape[-1]
    x2, r2 = np.ascontiguousarray(x).reshape(-1, n), np.ascontiguousarray(residual).reshape(-1, n)
    s, out = np.empty_like(x2), np.empty_like(x2)
    _add_rms_rows_serial(x2, r2, _param(weight, n, 1, x.dtype), float(eps), s, out)
    return s.reshape(x.shape), out.reshape(x.shape)


def _by_blocks(xw, out, fn):
    x2 = xw.reshape(-1, xw.shape[-1]) if xw.ndim else xw.reshape(1, 1)
    o2 = out.reshape(x2.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        _blocks(x2.shape[0], x2.shape[1], lambda r0, r1: fn(x2[r0:r1], o2[r0:r1]), _SMALL_BLOCK)


def activation(x, name, p1, p2):
    """Elementwise activation ``name`` ("leaky_relu", "elu", "gelu", "gelu_tanh", "silu",
    "sigmoid", "softplus", "hardswish", "hardsigmoid", "relu6", "erf") of any shape; p1, p2 its
    parameters: leaky_relu's slope, elu's alpha, softplus' beta and threshold, and for erf and
    gelu (p2) the erf coefficient tables (T, U, P, Q) of ruda.nn (a backend cannot import them)."""
    xw, odt = _work(x)
    fn = _act(name, p1, p2)
    if xw is None or fn is None:
        return NotImplemented
    out = np.empty_like(xw)
    if name in ("erf", "gelu") and xw.dtype == np.float32 and _erf32_flat is not None:
        xf, of = xw.reshape(-1), out.reshape(-1)
        _spread(xf.size, lambda a, b: _erf32_flat.one_thread(xf[a:b], of[a:b], name == "gelu"))
    elif name in _ACT32 and xw.dtype == np.float32 and _act32_flat is not None:
        xf, of, kind, p1, p2 = xw.reshape(-1), out.reshape(-1), _ACT32[name], float(p1), float(p2)
        _spread(xf.size, lambda a, b: _act32_flat.one_thread(xf[a:b], of[a:b], kind, p1, p2))
    elif xw.size:
        _by_blocks(xw, out, fn)
    return out if odt == out.dtype else out.astype(odt)


def glu(x):
    """x (rows, 2h) -> (rows, h): ``x[:, :h] * sigmoid(x[:, h:])``."""
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    h = xw.shape[1] // 2
    out = np.empty((xw.shape[0], h), dtype=xw.dtype)
    if xw.dtype == np.float32 and _glu32_rows is not None:
        _glu32_rows(xw, out)
        return out if odt == out.dtype else out.astype(odt)

    def run(r0, r1):
        o = out[r0:r1]
        _sigmoid(xw[r0:r1, h:], o)
        o *= xw[r0:r1, :h]

    with np.errstate(over="ignore"):
        _blocks(xw.shape[0], xw.shape[1], run)
    return out if odt == out.dtype else out.astype(odt)


def logsumexp(x):
    """x (rows, n), n > 0 -> (rows,): ``log(sum(exp(x), axis=1))``; float32 and bfloat16 only
    (float64 declines: ruda.nn composes it)."""
    xw, odt = _work(x)
    if xw is None or xw.dtype != np.float32 or _lse32_rows is None:
        return NotImplemented
    out = np.empty(xw.shape[0], dtype=np.float32)
    _lse32_rows(xw, xw.max(axis=1), out)
    return out if odt == out.dtype else out.astype(odt)


def group_norm(x, groups, weight, bias, eps):
    """x (N, C, sp): each (n, group) normalized over its C/groups channels and sp positions,
    then ``* weight[c] + bias[c]`` ((C,) or None)."""
    xw, odt = _work(x)
    if xw is None or _gn_rows is None:
        return NotImplemented
    C = xw.shape[1]
    out = np.empty_like(xw)
    _gn_rows(xw, int(groups), _param(weight, C, 1, xw.dtype), _param(bias, C, 0, xw.dtype),
             float(eps), out)
    return out if odt == out.dtype else out.astype(odt)


def channel_affine(x, scale, shift):
    """x (N, C, L) -> ``x * scale[c] + shift[c]`` per channel c (batch_norm's last step); scale,
    shift (C,) in x's compute dtype."""
    xw, odt = _work(x)
    if xw is None or _affine_planes is None or xw.size == 0:
        return NotImplemented
    out = np.empty_like(xw)
    scale = np.ascontiguousarray(scale, dtype=xw.dtype)
    shift = np.ascontiguousarray(shift, dtype=xw.dtype)
    N, C, L = xw.shape
    if L == 1:                          # (N, C) input: rows, vectorized over the channels
        x2, o2 = xw.reshape(N, C), out.reshape(N, C)
        _spread(N, lambda a, b: _affine_rows.one_thread(x2[a:b], scale, shift, o2[a:b]), C)
    else:
        x2, o2 = xw.reshape(N * C, L), out.reshape(N * C, L)
        _spread(N * C, lambda a, b: _affine_planes.one_thread(x2[a:b], scale, shift, o2[a:b], a),
                L)
    return out if odt == out.dtype else out.astype(odt)


from ruda.backends.host._nn_attention import apply_rope, rope_kv_put, sdpa  # noqa: E402,F401
from ruda.backends.host._nn_topk import top_k  # noqa: E402,F401
from ruda.backends.host._philox import dropout  # noqa: E402,F401
from ruda.backends.host._nn_conv import conv  # noqa: E402,F401
from ruda.backends.host._nn_pool import interpolate  # noqa: E402,F401
from ruda.backends.host._nn_quant import linear_quantized  # noqa: E402,F401


def rms_norm_linear_quantized(x, norm_weight, q, scales, mins, kind, eps, swiglu_halves):
    """``linear_quantized`` of ``rms_norm(x, norm_weight, eps)``, and ``swiglu`` of the
    product's halves with ``swiglu_halves``: the composed calls' own kernels in one call from
    ruda.nn (a decoder layer's norms and projections without its checks and wrapping between
    them), so the same values."""
    h = rms_norm(x, norm_weight, eps)
    y = NotImplemented if h is NotImplemented else \
        linear_quantized(h, q, scales, mins, kind, None)
    if y is NotImplemented or not swiglu_halves:
        return y
    n = y.shape[1] // 2
    return swiglu(y[:, :n], y[:, n:])


def add_linear_quantized(residual, x, q, scales, mins, kind):
    """``residual + linear_quantized(x, ...)``: the composed calls' kernels in one call."""
    y = linear_quantized(x, q, scales, mins, kind, None)
    return y if y is NotImplemented else residual + y
