"""``linear_quantized`` on the host: x (rows, in) float32 times a GGML Q8_0/Q4_0/Q4_1 weight.

Up to 96 rows of x (decode, short prompts): a Numba GEMV that reads each quantized row once,
two weight rows at a time against four, two or one rows of x through ``_simd``'s 16-lane block
dot products (Q4: ``d_b * (x_lo . lo + x_hi . hi)`` with x split once per call into the
elements that meet each block's low and high nibbles, plus ``sum_b m_b * sum(x_b)``, q4_0's
``m = -8 d``; Q8_0: ``d_b * (x_b . q_b)``; LLVM's vectorizer would stop at 256 bits and keep
the sums in memory), each block's weights converted once for up to four rows of x.
Weight rows are asked for ``_AHEAD`` rows ahead (``prefetch``): rows stream from memory while
the loop computes, which alone stalls it. Large matrices run on the thread pool, a chunk of
output rows per task; small ones run serially (waking the pool costs more than they do).
More rows (prefill): blocks of output rows dequantized to float32 by Numba, then one BLAS
matmul per block (each call dequantizes the whole weight: it wins from ~100 rows). Without
Numba the kernel declines and ruda.nn composes namespace ops.
"""
import numpy as np

from ruda.backends.host._jit import jit, parallel_kernel
from ruda.backends.host._simd import dots1, dots2, dots4, prefetch

try:
    import numba as _nb
except ImportError:          # optional: ruda.nn composes the dequantize + matmul instead
    _nb = None

_GEMV_ROWS = 96              # up to this many rows of x the GEMV wins over dequantize + BLAS
_PARALLEL = 1 << 16          # weight elements from which the GEMV runs on the thread pool
_TILE = 1 << 18              # dequantized elements per block of the GEMM path (1 MiB)
_KINDS = {"q8_0": 0, "q4_0": 1, "q4_1": 2}
_AHEAD = 8                   # the GEMV asks for weight rows this far ahead of the ones it reads
_FAST = {"reassoc", "contract", "nsz", "arcp"}    # lets LLVM vectorize the reductions

if _nb is not None:
    @jit(inline="always")
    def _ask_rows(a, o, n):
        """Prefetches rows [o, o + n) of the C-contiguous 2-d array a (their data arrives
        while the rows before them compute: the rows stream from memory)."""
        flat = a.reshape(-1)
        step = 64 // a.itemsize
        start = o * a.shape[1]
        for c in range(0, n * a.shape[1], step):
            prefetch(flat, start + c)
        prefetch(flat, start + n * a.shape[1] - 1)

    @jit(inline="always", fastmath=_FAST)
    def _put(out, t, nr, r, o, p, xs, d, m, kind):
        """out[r:r + nr, o] and [.., p] from a block dot product's sums ``t`` (row o's first),
        plus q4's ``sum_b m_b xs_b`` (kind 2) or ``-8 sum_b d_b xs_b`` (kind 1)."""
        nb = d.shape[1]
        for i in range(nr):
            for j, w in ((0, o), (1, p)):
                s = t[j * nr + i]
                if kind == 2:
                    for b in range(nb):
                        s += m[w, b] * xs[r + i, b]
                elif kind == 1:
                    for b in range(nb):
                        s -= np.float32(8.0) * d[w, b] * xs[r + i, b]
                out[r + i, w] = s

    @jit(inline="always", fastmath=_FAST)
    def _rows(xa, xb, xs, q, d, m, kind, out, o0, o1):
        """out[:, o0:o1]: two weight rows at a time against the rows of x four, two and one at a
        time (``_simd``'s block dot products; kind 0: q8_0 with xa = x, else q4 with xa, xb =
        the elements of x meeting the low and high nibbles and xs x's block sums)."""
        R = out.shape[0]
        for o in range(o0, o1, 2):
            p = min(o + 1, o1 - 1)          # the pair's second row (the first again at an odd end)
            if o + _AHEAD < o1:
                _ask_rows(q, o + _AHEAD, 2)
                _ask_rows(d, o + _AHEAD, 2)
                if kind == 2:
                    _ask_rows(m, o + _AHEAD, 2)
            r = 0
            while R - r >= 4:
                t4 = dots4(xa, xb, r, q, d, o, p)
                _put(out, t4, 4, r, o, p, xs, d, m, kind)
                r += 4
            if R - r >= 2:
                t2 = dots2(xa, xb, r, q, d, o, p)
                _put(out, t2, 2, r, o, p, xs, d, m, kind)
                r += 2
            if R - r == 1:
                t1 = dots1(xa, xb, r, q, d, o, p)
                _put(out, t1, 1, r, o, p, xs, d, m, kind)

    @jit(inline="always")
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
    def _gemv_par(x, q, d, m, kind, out, chunks):
        nout = q.shape[0]
        per = -(-nout // chunks)
        xa, xb, xs = _split_x(x) if kind else (x, x, x)
        for c in _nb.prange(chunks):
            _rows(xa, xb, xs, q, d, m, kind, out, c * per, min(nout, c * per + per))

    @jit(fastmath=_FAST, cache=True)
    def _gemv_serial(x, q, d, m, kind, out):
        xa, xb, xs = _split_x(x) if kind else (x, x, x)
        _rows(xa, xb, xs, q, d, m, kind, out, 0, q.shape[0])

    @jit(cache=True)
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
    if q.shape[0] * x.shape[1] >= _PARALLEL and q.shape[0] >= 2:
        _gemv_par(x, q, d, m, k, out, min(q.shape[0], 4 * _nb.config.NUMBA_NUM_THREADS))
    else:
        _gemv_serial(x, q, d, m, k, out)


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
