"""Host interpolation kernel of ``ruda.nn`` (contract: ruda/nn/README.md, ``interpolate``).

A Numba loop parallel over (image, channel) planes: the taps along the last axis summed first,
then weighed along the axis before, in the order torch's CPU kernel accumulates (and without
fused multiply-adds), so results match the composed path bit for bit. The composed NumPy path
makes a gather, a product and a sum over the output per tap and axis; this makes one pass per
axis, in a plane-sized buffer. 1 and 2 spatial axes; 3 (trilinear) and a missing Numba
decline. bfloat16 and float16 compute in float32, rounded once. Pooling has no host kernel
(ruda.nn composes NumPy's ufuncs over strided views; ruda/nn/README.md says how fast).
"""
import numpy as np

from ruda import _dtypes
from ruda.backends.host._jit import parallel_kernel

_LOW = tuple(d for d in (_dtypes.bfloat16, _dtypes.float16) if d is not None)

try:
    import numba as _nb
except ImportError:          # optional: interpolate then composes NumPy ops
    _nb = None

if _nb is not None:
    @parallel_kernel(fastmath=False, cache=True)
    def _interp2d(x, ih, wh, iw, ww, out):
        """out[p, i, j] = sum_a wh[a, i] * (sum_b ww[b, j] * x[p, ih[a, i], iw[b, j]]).

        Per plane: every input row resampled along the last axis into a buffer (the gathers),
        then each output row a weighted sum of whole buffer rows (contiguous, vectorized).
        Indices are unsigned, so Numba adds no negative-index branch to the gathers."""
        P, H = x.shape[0], x.shape[1]
        OH, OW = out.shape[1], out.shape[2]
        KH, KW = ih.shape[0], iw.shape[0]
        for p in _nb.prange(P):
            src = x[p]
            dst = out[p]
            t = np.empty((H, OW), x.dtype)
            for r in range(H):
                row = src[r]
                tr = t[r]
                for j in range(OW):
                    v = row[iw[0, j]] * ww[0, j]
                    for b in range(1, KW):
                        v += row[iw[b, j]] * ww[b, j]
                    tr[j] = v
            for i in range(OH):
                d = dst[i]
                t0 = t[ih[0, i]]
                w0 = wh[0, i]
                for j in range(OW):
                    d[j] = t0[j] * w0
                for a in range(1, KH):
                    ta = t[ih[a, i]]
                    wa = wh[a, i]
                    for j in range(OW):
                        d[j] += ta[j] * wa
else:
    _interp2d = None


def interpolate(x, indices, weights):
    if _interp2d is None or len(indices) not in (1, 2):
        return NotImplemented
    if x.dtype in (np.float32, np.float64):
        xw, odt = np.ascontiguousarray(x), x.dtype
    elif x.dtype in _LOW:
        xw, odt = x.astype(np.float32), x.dtype
    else:
        return NotImplemented
    N, C = x.shape[:2]
    if len(indices) == 1:                      # one axis: a height of 1 with a single tap
        indices = [np.zeros((1, 1), np.uint64)] + list(indices)
        weights = [np.ones((1, 1), xw.dtype)] + list(weights)
    (ih, iw), (wh, ww) = indices, weights
    sp = xw.shape[2:] if xw.ndim == 4 else (1,) + xw.shape[2:]
    out = np.empty((N * C, ih.shape[1], iw.shape[1]), xw.dtype)
    _interp2d(xw.reshape((N * C,) + sp), np.ascontiguousarray(ih, np.uint64),
              np.ascontiguousarray(wh, xw.dtype), np.ascontiguousarray(iw, np.uint64),
              np.ascontiguousarray(ww, xw.dtype), out)
    out = out.reshape((N, C) + ((iw.shape[1],) if x.ndim == 3 else (ih.shape[1], iw.shape[1])))
    return out if odt == out.dtype else out.astype(odt)
