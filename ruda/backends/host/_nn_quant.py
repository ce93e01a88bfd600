"""``linear_quantized`` on the host: x (rows, in) float32 times a GGML Q8_0/Q4_0/Q4_1 weight.

Few rows (decode): a Numba GEMV that reads each quantized row once. One row of x: two
weight rows at a time through ``_simd``'s 16-lane block dot products (Q4: ``d_b * (x_lo . lo
+ x_hi . hi)`` with x split once per call into the elements that meet each block's low and
high nibbles, plus ``sum_b m_b * sum(x_b)``, q4_0's ``m = -8 d``; Q8_0: ``d_b * (x_b . q_b)``),
1.5x the same loops left to LLVM's vectorizer. Several rows of x: Q4 dequantizes each weight
row once, then a dot product per row of x. Both ask for the weight rows ``_AHEAD`` rows ahead
(``prefetch``): rows stream from memory while the loop computes, which alone stalls it.
Large matrices run on the thread pool, a chunk of output rows per task; small ones run
serially (waking the pool costs more than they do). Many rows (prefill): blocks of output rows dequantized to float32 by Numba,
then one BLAS matmul per block. Without Numba the kernel declines and ruda.nn composes
namespace ops.
"""
import numpy as np

from ruda.backends.host._jit import parallel_kernel, prefetch
from ruda.backends.host._simd import q4_dot2, q8_dot2

try:
    import numba as _nb
except ImportError:          # optional: ruda.nn composes the dequantize + matmul instead
    _nb = None

_GEMV_ROWS = 8               # up to this many rows of x the GEMV wins over dequantize + BLAS
_PARALLEL = 1 << 16          # weight elements from which the GEMV runs on the thread pool
_TILE = 1 << 18              # dequantized elements per block of the GEMM path (1 MiB)
_KINDS = {"q8_0": 0, "q4_0": 1, "q4_1": 2}
_AHEAD = 8                   # the GEMV asks for weight rows this far ahead of the ones it reads
_FAST = {"reassoc", "contract", "nsz", "arcp"}    # lets LLVM vectorize the reductions

if _nb is not None:
    @_nb.njit(inline="always")
    def _ask_rows(a, o, n):
        """Prefetches rows [o, o + n) of the C-contiguous 2-d array a (their data arrives
        while the rows before them compute: the rows stream from memory)."""
        flat = a.reshape(-1)
        step = 64 // a.itemsize
        start = o * a.shape[1]
        for c in range(0, n * a.shape[1], step):
            prefetch(flat, start + c)
        prefetch(flat, start + n * a.shape[1] - 1)

    @_nb.njit(inline="always", fastmath=_FAST)
    def _rows_q4(xl, xh, xs, q, d, m, kind, out, o0, o1):
        """out[0, o0:o1] for a q4_0 (kind 1) / q4_1 (kind 2) weight and one row of x; xl, xh
        (1, in/2): the elements of x that meet the low and the high nibbles; xs (1, blocks):
        x's block sums. Two weight rows at a time (``q4_dot2``), plus ``sum_b m_b xs_b``."""
        nb = d.shape[1]
        f = np.float32
        xlr, xhr, xsr = xl[0], xh[0], xs[0]
        for o in range(o0, o1, 2):
            p = min(o + 1, o1 - 1)          # the pair's second row (the first again at an odd end)
            if o + _AHEAD < o1:
                _ask_rows(q, o + _AHEAD, 2)
                _ask_rows(d, o + _AHEAD, 2)
                if kind == 2:
                    _ask_rows(m, o + _AHEAD, 2)
            s0, s1 = q4_dot2(xlr, xhr, q, d, o, p)
            for b in range(nb):
                if kind == 2:
                    s0 += m[o, b] * xsr[b]
                    s1 += m[p, b] * xsr[b]
                else:
                    s0 -= f(8.0) * d[o, b] * xsr[b]
                    s1 -= f(8.0) * d[p, b] * xsr[b]
            out[0, o] = s0
            out[0, p] = s1

    @_nb.njit(inline="always", fastmath=_FAST)
    def _rows_q4_multi(x, q, d, m, kind, out, o0, o1):
        """out[:, o0:o1] for several rows of x: each weight row dequantized once into float32
        (``_deq``, as the prefill path), then one dot product per row of x."""
        R, n = x.shape
        f = np.float32
        w2 = np.empty((1, n), np.float32)
        w = w2[0]
        for o in range(o0, o1):
            _deq(q, d, m, kind, o, o + 1, w2)
            for r in range(R):
                s = f(0.0)
                for i in range(n):
                    s += x[r, i] * w[i]
                out[r, o] = s

    @_nb.njit(inline="always", fastmath=_FAST)
    def _rows_q8(x, q, d, out, o0, o1):
        """out[:, o0:o1] for a q8_0 weight: one row of x, two weight rows at a time
        (``q8_dot2``); several rows, a weight row at a time into 32 float lanes."""
        R = x.shape[0]
        nb = d.shape[1]
        if R == 1:
            xr = x[0]
            for o in range(o0, o1, 2):
                p = min(o + 1, o1 - 1)
                if o + _AHEAD < o1:
                    _ask_rows(q, o + _AHEAD, 2)
                    _ask_rows(d, o + _AHEAD, 2)
                out[0, o], out[0, p] = q8_dot2(xr, q, d, o, p)
            return
        lanes = np.empty(32, np.float32)
        for o in range(o0, o1):
            if o + _AHEAD < o1:
                _ask_rows(q, o + _AHEAD, 1)
            for r in range(R):
                for j in range(32):
                    lanes[j] = 0
                for b in range(nb):
                    db = d[o, b]
                    for j in range(32):
                        lanes[j] += db * (x[r, b * 32 + j] * np.float32(q[o, b * 32 + j]))
                s = np.float32(0.0)
                for j in range(32):
                    s += lanes[j]
                out[r, o] = s

    @_nb.njit(inline="always")
    def _split_x(x):
        """(xl, xh, xs): the elements of x meeting each block's low and high nibbles, and
        x's block sums."""
        R, n = x.shape
        xl = np.empty((R, n // 2), np.float32)
        xh = np.empty((R, n // 2), np.float32)
        xs = np.zeros((R, n // 32), np.float32)
        for r in range(R):
            for b in range(n // 32):
                for j in range(16):
                    xl[r, b * 16 + j] = x[r, b * 32 + j]
                    xh[r, b * 16 + j] = x[r, b * 32 + 16 + j]
                    xs[r, b] += x[r, b * 32 + j] + x[r, b * 32 + 16 + j]
        return xl, xh, xs

    @parallel_kernel(fastmath=_FAST, cache=True)
    def _gemv_q4_par(x, q, d, m, kind, out, chunks):
        nout = q.shape[0]
        per = -(-nout // chunks)
        if x.shape[0] > 1:
            for c in _nb.prange(chunks):
                _rows_q4_multi(x, q, d, m, kind, out, c * per, min(nout, c * per + per))
            return
        xl, xh, xs = _split_x(x)
        for c in _nb.prange(chunks):
            _rows_q4(xl, xh, xs, q, d, m, kind, out, c * per, min(nout, c * per + per))

    @_nb.njit(fastmath=_FAST, cache=True)
    def _gemv_q4(x, q, d, m, kind, out):
        if x.shape[0] > 1:
            _rows_q4_multi(x, q, d, m, kind, out, 0, q.shape[0])
            return
        xl, xh, xs = _split_x(x)
        _rows_q4(xl, xh, xs, q, d, m, kind, out, 0, q.shape[0])

    @parallel_kernel(fastmath=_FAST, cache=True)
    def _gemv_q8_par(x, q, d, out, chunks):
        nout = q.shape[0]
        per = -(-nout // chunks)
        for c in _nb.prange(chunks):
            _rows_q8(x, q, d, out, c * per, min(nout, c * per + per))

    @_nb.njit(fastmath=_FAST, cache=True)
    def _gemv_q8(x, q, d, out):
        _rows_q8(x, q, d, out, 0, q.shape[0])

    @_nb.njit(cache=True)
    def _deq(q, d, m, kind, o0, o1, w):
        """Rows [o0, o1) dequantized into w (o1 - o0, n) float32 (serial: BLAS has the
        cores for the matmul that follows)."""
        nb = d.shape[1]
        for i in range(o1 - o0):
            o = o0 + i
            for b in range(nb):
                db = d[o, b]
                k = b * 32
                if kind == 0:
                    for j in range(32):
                        w[i, k + j] = db * np.float32(q[o, k + j])
                else:
                    h = b * 16
                    mb = -np.float32(8.0) * db if kind == 1 else m[o, b]
                    for j in range(16):
                        v = q[o, h + j]
                        w[i, k + j] = db * np.float32(v & 15) + mb
                        w[i, k + 16 + j] = db * np.float32(v >> 4) + mb


def _gemv(x, q, d, m, k, out):
    n = x.shape[1]
    chunks = 0
    if q.shape[0] * n >= _PARALLEL and q.shape[0] >= 2:
        chunks = min(q.shape[0], 4 * _nb.config.NUMBA_NUM_THREADS)
    if k == 0:
        if chunks:
            _gemv_q8_par(x, q, d, out, chunks)
        else:
            _gemv_q8(x, q, d, out)
    elif chunks:
        _gemv_q4_par(x, q, d, m, k, out, chunks)
    else:
        _gemv_q4(x, q, d, m, k, out)


def linear_quantized(x, q, scales, mins, kind, bias):
    """x (rows, in) float32; q, scales, mins as ruda.nn.QuantizedWeight; bias (out,) or None ->
    (rows, out) float32."""
    if _nb is None or x.dtype != np.float32 or kind not in _KINDS:
        return NotImplemented
    k = _KINDS[kind]
    x = np.ascontiguousarray(x)
    q = np.ascontiguousarray(q)
    d = np.ascontiguousarray(scales, dtype=np.float32)
    m = d if mins is None else np.ascontiguousarray(mins, dtype=np.float32)
    R, n = x.shape
    nout = q.shape[0]
    out = np.empty((R, nout), dtype=np.float32)
    if R <= _GEMV_ROWS:
        _gemv(x, q, d, m, k, out)
    else:
        step = max(16, _TILE // n)
        w = np.empty((min(step, nout), n), dtype=np.float32)
        for o0 in range(0, nout, step):
            o1 = min(nout, o0 + step)
            _deq(q, d, m, k, o0, o1, w)
            np.matmul(x, w[:o1 - o0].T, out=out[:, o0:o1])
    if bias is not None:
        out += bias.astype(np.float32, copy=False)
    return out
