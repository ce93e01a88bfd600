"""``linear_quantized`` on the host: x (rows, in) float32 times a GGML Q8_0/Q4_0/Q4_1 weight.

Few rows (decode): a Numba GEMV parallel over output rows that reads each quantized row once,
unpacks its nibbles in registers and accumulates in float32; per block the sum is
``d * sum(x * q)`` (q4_0: ``d * (sum(x * nib) - 8 * sum(x))``, q4_1: ``d * sum(x * nib) + m *
sum(x)``, the block sums of x computed once per call). Many rows (prefill): blocks of output
rows dequantized to float32 by Numba, then one BLAS matmul per block. Without Numba the kernel
declines and ruda.nn composes namespace ops.
"""
import numpy as np

try:
    import numba as _nb
except ImportError:          # optional: ruda.nn composes the dequantize + matmul instead
    _nb = None

_GEMV_ROWS = 8               # up to this many rows of x the GEMV wins over dequantize + BLAS
_TILE = 1 << 18              # dequantized elements per block of the GEMM path (1 MiB)
_KINDS = {"q8_0": 0, "q4_0": 1, "q4_1": 2}
_FAST = {"reassoc", "contract", "nsz", "arcp"}    # lets LLVM vectorize the block reductions

if _nb is not None:
    @_nb.njit(parallel=True, fastmath=_FAST, cache=True)
    def _gemv(x, xs, q, d, m, kind, out):
        R, n = x.shape
        nb = n // 32
        for o in _nb.prange(q.shape[0]):
            for r in range(R):
                acc = np.float32(0.0)
                for b in range(nb):
                    s = np.float32(0.0)
                    k = b * 32
                    if kind == 0:
                        for j in range(32):
                            s += x[r, k + j] * np.float32(q[o, k + j])
                        acc += d[o, b] * s
                        continue
                    h = b * 16
                    for j in range(16):
                        v = q[o, h + j]
                        s += x[r, k + j] * np.float32(v & 15) \
                            + x[r, k + 16 + j] * np.float32(v >> 4)
                    if kind == 1:
                        acc += d[o, b] * (s - np.float32(8.0) * xs[r, b])
                    else:
                        acc += d[o, b] * s + m[o, b] * xs[r, b]
                out[r, o] = acc

    @_nb.njit(parallel=True, cache=True)
    def _deq(q, d, m, kind, o0, o1, w):
        """Rows [o0, o1) dequantized into w (o1 - o0, n) float32."""
        nb = d.shape[1]
        for i in _nb.prange(o1 - o0):
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
        xs = x.reshape(R, n // 32, 32).sum(axis=2, dtype=np.float32)   # block sums of x
        _gemv(x, xs, q, d, m, k, out)
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
