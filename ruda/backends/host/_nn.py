"""Fused nn kernels on the host (the names in ``ruda.backends.NN_KERNELS``; None where absent).

Contract: ruda/nn/README.md. ``softmax`` and ``swiglu`` run NumPy's SIMD ufuncs in place over
blocks of rows that stay in the caches, a block per thread (ufuncs release the GIL): one
read of x and one write of the result, where composed NumPy makes five passes. ``layer_norm``
and ``rms_norm`` are Numba row loops (``parallel=True``, compiled once and cached on disk),
accumulating in float64; where Numba is missing they run blocked NumPy. bfloat16 computes in
float32 and rounds once.
"""
import numpy as np

from ruda import _dtypes
from ruda.backends.host._nn_attention import _THREADS, _pool

_BF16 = _dtypes.bfloat16
_BLOCK = 1 << 16            # elements of one block of rows (256 KiB of float32)


def _work(x):
    """(x as float32/float64 C-contiguous, the dtype to return) or (None, None)."""
    if x.dtype == np.float32 or x.dtype == np.float64:
        return np.ascontiguousarray(x), x.dtype
    if _BF16 is not None and x.dtype == _BF16:
        return x.astype(np.float32), x.dtype
    return None, None


def _blocks(rows, n, fn):
    """Calls fn(r0, r1) over blocks of rows, spread over threads when the work is large."""
    step = max(1, _BLOCK // max(1, n))
    spans = [(r, min(rows, r + step)) for r in range(0, rows, step)]
    if len(spans) < 2 * _THREADS or _THREADS == 1:
        for s in spans:
            fn(*s)
        return
    per = -(-len(spans) // _THREADS)
    groups = [spans[i:i + per] for i in range(0, len(spans), per)]
    list(_pool().map(lambda g: [fn(*s) for s in g], groups))


def softmax(x, log):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    out = np.empty_like(xw)

    def run(r0, r1):
        xs, o = xw[r0:r1], out[r0:r1]
        m = xs.max(axis=1, keepdims=True)
        m[m == -np.inf] = 0                   # a row of -inf: 0/0 = NaN, as torch
        np.subtract(xs, m, out=o)
        if log:
            e = np.exp(o)
            o -= np.log(e.sum(axis=1, keepdims=True))
        else:
            np.exp(o, out=o)
            o /= o.sum(axis=1, keepdims=True)

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

    def run(r0, r1):
        g, o = g2[r0:r1], out[r0:r1]
        np.negative(g, out=o)
        np.exp(o, out=o)                      # exp(-g): inf for very negative g, then g/inf = -0
        o += 1
        np.divide(g, o, out=o)
        o *= u2[r0:r1]

    with np.errstate(over="ignore"):
        _blocks(g2.shape[0], n, run)
    out = out.reshape(shape)
    return out if odt == out.dtype else out.astype(odt)


# -- norms: Numba row loops (compiled on first call, cached on disk) ------------------------
try:
    import numba as _nb
except ImportError:          # optional: the norms then run blocked NumPy
    _nb = None

if _nb is not None:
    @_nb.njit(parallel=True, fastmath=False, cache=True)
    def _ln_rows(x, w, b, eps, out):
        rows, n = x.shape
        for i in _nb.prange(rows):
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

    @_nb.njit(parallel=True, fastmath=False, cache=True)
    def _rms_rows(x, w, eps, out):
        rows, n = x.shape
        for i in _nb.prange(rows):
            s = 0.0
            for j in range(n):
                s += np.float64(x[i, j]) * x[i, j]
            r = 1.0 / np.sqrt(s / n + eps)
            for j in range(n):
                out[i, j] = x[i, j] * r * w[j]
else:
    _ln_rows = _rms_rows = None


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
        _ln_rows(xw, w, b, float(eps), out)
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
        _rms_rows(xw, w, float(eps), out)
    else:
        def run(r0, r1):
            xs = xw[r0:r1].astype(np.float64)
            xs /= np.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps)
            out[r0:r1] = xs * w
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


from ruda.backends.host._nn_attention import apply_rope, sdpa, top_k  # noqa: E402,F401
