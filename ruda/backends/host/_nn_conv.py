"""Host convolution kernel of ``ruda.nn`` (contract: ruda/nn/README.md, ``conv``).

Depthwise convolution (groups == C_in, one input channel per group) runs a Numba direct loop,
parallel over (image, output channel), each output row accumulated tap by tap over the
columns that tap reaches (no padded copy; the inner loop over the row vectorizes). Everything
else is im2col + BLAS: the zero-padded input viewed through NumPy stride tricks as
``(N, C, *kernel, *out)``, copied into columns for a block of images (a bounded buffer) and
multiplied by the weight as one batched sgemm/dgemm per group, straight into the NCHW output.
float32/float64 compute in themselves; bfloat16 and float16 in float32, rounded once.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ruda import _dtypes

_COLS = 1 << 23        # column elements per block of images (32 MiB of float32)
_LOW = tuple(d for d in (_dtypes.bfloat16, _dtypes.float16) if d is not None)

try:
    import numba as _nb
except ImportError:          # optional: depthwise then goes through im2col + BLAS
    _nb = None

if _nb is not None:
    @_nb.njit(parallel=True, fastmath=False, cache=True)
    def _depthwise(x, w, b, out, sh, sw, dh, dw, ph, pw):
        """out[n, o] = b[o] + sum over taps of w[o, a, t] * x[n, o // m] shifted; x unpadded."""
        N, C, H, W = x.shape
        Co, KH, KW = w.shape
        OH, OW = out.shape[2], out.shape[3]
        m = Co // C
        for u in _nb.prange(N * Co):
            n, o = u // Co, u % Co
            src = x[n, o // m]
            for i in range(OH):
                row = out[n, o, i]
                for j in range(OW):
                    row[j] = b[o]
                for a in range(KH):
                    r = i * sh + a * dh - ph
                    if r < 0 or r >= H:
                        continue
                    srow = src[r]
                    for t in range(KW):
                        off = t * dw - pw
                        # columns j with 0 <= j * sw + off < W
                        j0 = 0 if off >= 0 else (-off + sw - 1) // sw
                        j1 = min(OW, (W - 1 - off) // sw + 1) if W - 1 - off >= 0 else 0
                        wv = w[o, a, t]
                        for j in range(j0, j1):
                            row[j] += wv * srow[j * sw + off]
else:
    _depthwise = None


def _work(dt):
    if dt == np.float32 or dt == np.float64:
        return np.dtype(dt)
    if any(dt == d for d in _LOW):
        return np.dtype(np.float32)
    return None


def conv(x, w, bias, stride, padding, dilation, groups):
    """x (N, C_in, *sp) unpadded; w (C_out, C_in / groups, *k); bias (C_out,) or None; stride,
    dilation: tuples; padding: ((lo, hi), ...) per spatial axis. Returns (N, C_out, *out)."""
    wdt = _work(x.dtype)
    if wdt is None or w.dtype != x.dtype:
        return NotImplemented
    nd = x.ndim - 2
    N, C = x.shape[:2]
    Co, ks = w.shape[0], tuple(w.shape[2:])
    sp = tuple(x.shape[2:])
    out = tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                for n, (lo, hi), k, d, s in zip(sp, padding, ks, dilation, stride))
    xw = np.ascontiguousarray(x, dtype=wdt)
    ww = np.ascontiguousarray(w, dtype=wdt)
    bw = np.zeros(Co, wdt) if bias is None else np.ascontiguousarray(bias, dtype=wdt)
    if groups == C and w.shape[1] == 1 and nd == 2 and _depthwise is not None:
        y = np.empty((N, Co) + out, dtype=wdt)
        _depthwise(xw, ww.reshape(Co, ks[0], ks[1]), bw, y, stride[0], stride[1],
                   dilation[0], dilation[1], padding[0][0], padding[1][0])
    else:
        y = _im2col_gemm(xw, ww, bw if bias is not None else None, stride, padding, dilation,
                         groups, out)
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _im2col_gemm(x, w, bias, stride, padding, dilation, groups, out):
    N, C = x.shape[:2]
    Co, ks = w.shape[0], tuple(w.shape[2:])
    if any(lo or hi for lo, hi in padding):
        xp = np.zeros((N, C) + tuple(n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding)),
                      dtype=x.dtype)
        xp[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _)
                                              in zip(x.shape[2:], padding))] = x
    else:
        xp = x
    st = xp.strides
    view = as_strided(xp, (N, C) + ks + out,
                      st[:2] + tuple(s * d for s, d in zip(st[2:], dilation))
                      + tuple(s * k for s, k in zip(st[2:], stride)), writeable=False)
    L = int(np.prod(out))
    ck = C // groups * int(np.prod(ks))
    wg = w.reshape(groups, Co // groups, ck)
    y = np.empty((N, groups, Co // groups, L), dtype=x.dtype)
    step = max(1, _COLS // max(1, C * int(np.prod(ks)) * L))
    for n0 in range(0, N, step):
        n1 = min(N, n0 + step)
        cols = np.ascontiguousarray(view[n0:n1]).reshape(n1 - n0, groups, ck, L)
        np.matmul(wg, cols, out=y[n0:n1])
    y = y.reshape((N, Co) + out)
    if bias is not None:
        y += bias.reshape((Co,) + (1,) * len(out))
    return y
