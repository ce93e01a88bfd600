"""Philox 4x32-10 on the host as one Numba loop: the words of ``ruda.random`` (same counters,
key and word order, bit for bit), and dropout drawing its keep mask from them in the same pass,
without materializing the words. None where Numba is missing (callers then use ruda.random)."""
import numpy as np

from ruda.backends.host._jit import jit, parallel_kernel

try:
    import numba as _nb
except ImportError:          # optional
    _nb = None

_M0, _M1 = 0xD2511F53, 0xCD9E8D57      # Philox 4x32 multipliers (ruda.random's)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85      # Weyl key increments

if _nb is not None:
    @jit(inline="always")
    def _block(j, c2, c3, k0, k1):
        """The four words of block j of the stream with counter words (j, 0, c2, c3), key
        (k0, k1); all uint64 holding 32-bit values."""
        m = np.uint64(0xFFFFFFFF)
        s = np.uint64(32)
        x0, x1, x2, x3 = j, np.uint64(0), c2, c3
        for r in range(10):
            p0 = x0 * np.uint64(_M0)
            p1 = x2 * np.uint64(_M1)
            x0, x1, x2, x3 = (p1 >> s) ^ x1 ^ k0, p1 & m, (p0 >> s) ^ x3 ^ k1, p0 & m
            k0 = (k0 + np.uint64(_W0)) & m
            k1 = (k1 + np.uint64(_W1)) & m
        return x0, x1, x2, x3

    @parallel_kernel(cache=True)
    def _words(n, c2, c3, k0, k1, out):
        for b in _nb.prange((n + 3) // 4):
            w = _block(np.uint64(b), c2, c3, k0, k1)
            for t in range(4):
                i = 4 * b + t
                if i < n:
                    out[i] = np.uint32(w[t])

    _CHUNK = 1024        # blocks of words per chunk: 16 KiB of words, then the elements

    @parallel_kernel(cache=True)
    def _dropout(x, thresh, scale, c2, c3, k0, k1, out):
        """Per chunk: its words into a small buffer (a loop that vectorizes), then the keep
        rule over its elements."""
        n = x.size
        nblk = (n + 3) // 4
        zero = x.dtype.type(0)
        for ch in _nb.prange((nblk + _CHUNK - 1) // _CHUNK):
            buf = np.empty(4 * _CHUNK, np.uint32)
            b0 = ch * _CHUNK
            b1 = min(nblk, b0 + _CHUNK)
            for b in range(b0, b1):
                w0, w1, w2, w3 = _block(np.uint64(b), c2, c3, k0, k1)
                k = 4 * (b - b0)
                buf[k] = np.uint32(w0)
                buf[k + 1] = np.uint32(w1)
                buf[k + 2] = np.uint32(w2)
                buf[k + 3] = np.uint32(w3)
            i0 = 4 * b0
            for i in range(i0, min(n, 4 * b1)):
                out[i] = x[i] * scale if buf[i - i0] >= thresh else zero
else:
    _words = _dropout = None


def _args(seed, call):
    m = 0xFFFFFFFF
    return (np.uint64(call & m), np.uint64(call >> 32), np.uint64(seed & m),
            np.uint64(seed >> 32))


def words(seed, call, n):
    """uint32 words 0..n-1 of call number ``call`` of ``ruda.random.Generator(seed)``, or None
    without Numba."""
    if _words is None:
        return None
    out = np.empty(n, dtype=np.uint32)
    _words(n, *_args(seed, call), out)
    return out


def dropout(x, p, seed, call):
    """x zeroed where word i of the stream (seed, call) is below ``min(round(p 2**32),
    2**32 - 1)`` (probability p), the rest times ``1 / (1 - p)`` in x's dtype (ruda.nn.dropout's
    rule); float32/float64 x of any shape. NotImplemented for other dtypes, more words than a
    stream holds, or without Numba."""
    if _dropout is None or x.dtype not in (np.float32, np.float64) or x.size >= 2**34:
        return NotImplemented
    xc = np.ascontiguousarray(x)
    out = np.empty_like(xc)
    thresh = np.uint32(min(round(p * 2.0**32), 2**32 - 1))
    _dropout(xc.reshape(-1), thresh, x.dtype.type(1.0 / (1.0 - p)), *_args(seed, call),
             out.reshape(-1))
    return out
