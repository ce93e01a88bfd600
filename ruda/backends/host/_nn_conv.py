"""Host convolution kernel of ``ruda.nn`` (contract: ruda/nn/README.md, ``conv``).

Depthwise convolution (groups == C_in, one input channel per group) runs a Numba direct loop,
parallel over (image, output channel) planes: each plane padded into its stride phases in a
per-thread buffer, then one vectorized axpy per kernel tap. Everything
else is im2col + BLAS: the zero-padded input viewed through NumPy stride tricks as
``(N, C, *kernel, *out)``, copied into columns for a block of images (a bounded buffer) and
multiplied by the weight as one batched sgemm/dgemm per group, straight into the NCHW output.
float32/float64 compute in themselves; bfloat16 and float16 in float32, rounded once.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from ruda import _dtypes
from ruda.backends.host._nn_attention import _THREADS, _blas_one_thread, _pool

_COLS = 1 << 23        # column elements per block of images (32 MiB of float32)
_LOW = tuple(d for d in (_dtypes.bfloat16, _dtypes.float16) if d is not None)

try:
    import numba as _nb
except ImportError:          # optional: depthwise then goes through im2col + BLAS
    _nb = None

if _nb is not None:
    @_nb.njit(parallel=True, fastmath=False, cache=True)
    def _depthwise(x, w, b, out, sh, sw, dh, dw, ph, pw):
        """out[n, o] = b[o] + sum over taps of w[o, a, t] * x[n, o // m] shifted; x unpadded.

        Per plane: the zero-padded input split into its sh * sw stride phases (so every tap is
        a stride-1 shift of one phase), then one vectorized loop over the output rows at the
        phase's pitch (columns past OW are scratch)."""
        N, C, H, W = x.shape
        Co, KH, KW = w.shape
        OH, OW = out.shape[2], out.shape[3]
        m = Co // C
        Hp = (OH - 1) * sh + (KH - 1) * dh + 1
        Wp = (OW - 1) * sw + (KW - 1) * dw + 1
        PH = (Hp + sh - 1) // sh
        PW = (Wp + sw - 1) // sw
        PL = PH * PW + PW                   # a phase plane and a row of slack for the taps
        M = OH * PW
        s0, s1 = max(0, pw), min(Wp, W + pw)
        tasks = N * Co
        chunks = min(tasks, 256)
        for ch in _nb.prange(chunks):
            buf = np.zeros(sh * sw * PL, x.dtype)
            acc = np.empty(M, x.dtype)
            for u in range(ch * tasks // chunks, (ch + 1) * tasks // chunks):
                n, o = u // Co, u % Co
                src = x[n, o // m]
                for r in range(Hp):
                    xr = r - ph
                    if xr < 0 or xr >= H:
                        continue
                    rb = (r % sh) * sw * PL + (r // sh) * PW
                    srow = src[xr]
                    for pc in range(sw):
                        k0 = (s0 - pc + sw - 1) // sw if s0 > pc else 0
                        k1 = (s1 - pc + sw - 1) // sw if s1 > pc else 0
                        if k1 > k0:
                            d = buf[rb + pc * PL + k0:]
                            if sw == 1:
                                sr = srow[k0 - pw:]
                                for k in range(k1 - k0):
                                    d[k] = sr[k]
                            else:
                                for k in range(k1 - k0):
                                    d[k] = srow[pc + (k0 + k) * sw - pw]
                # slices, not offset indices (here and above): Numba's negative-index check on
                # b + q would keep LLVM from vectorizing the loops over q; slice assignment is
                # a slow generic copy
                bo = b[o]
                if KH == 3 and KW == 3:
                    # all nine taps in one pass: one store per output
                    p0 = buf[_off(0, 0, dh, dw, sh, sw, PL, PW):][:M]
                    p1 = buf[_off(0, 1, dh, dw, sh, sw, PL, PW):][:M]
                    p2 = buf[_off(0, 2, dh, dw, sh, sw, PL, PW):][:M]
                    p3 = buf[_off(1, 0, dh, dw, sh, sw, PL, PW):][:M]
                    p4 = buf[_off(1, 1, dh, dw, sh, sw, PL, PW):][:M]
                    p5 = buf[_off(1, 2, dh, dw, sh, sw, PL, PW):][:M]
                    p6 = buf[_off(2, 0, dh, dw, sh, sw, PL, PW):][:M]
                    p7 = buf[_off(2, 1, dh, dw, sh, sw, PL, PW):][:M]
                    p8 = buf[_off(2, 2, dh, dw, sh, sw, PL, PW):][:M]
                    w0, w1, w2 = w[o, 0, 0], w[o, 0, 1], w[o, 0, 2]
                    w3, w4, w5 = w[o, 1, 0], w[o, 1, 1], w[o, 1, 2]
                    w6, w7, w8 = w[o, 2, 0], w[o, 2, 1], w[o, 2, 2]
                    for q in range(M):
                        acc[q] = (bo + w0 * p0[q] + w1 * p1[q] + w2 * p2[q] + w3 * p3[q]
                                  + w4 * p4[q] + w5 * p5[q] + w6 * p6[q] + w7 * p7[q]
                                  + w8 * p8[q])
                else:
                    acc[:] = bo
                    for a in range(KH):
                        for t in range(KW):
                            pt = buf[_off(a, t, dh, dw, sh, sw, PL, PW):][:M]
                            wv = w[o, a, t]
                            for q in range(M):
                                acc[q] += wv * pt[q]
                dst = out[n, o]
                for i in range(OH):
                    di, ai = dst[i], acc[i * PW:]
                    for j in range(OW):
                        di[j] = ai[j]

    @_nb.njit(inline="always")
    def _off(a, t, dh, dw, sh, sw, PL, PW):
        """Where tap (a, t) starts in the phase buffer."""
        return (((a * dh) % sh) * sw + (t * dw) % sw) * PL + (a * dh) // sh * PW + (t * dw) // sw
    @_nb.njit(nogil=True, cache=True)
    def _im2col_rows(src, cols, i0, i1, KH, KW, sh, sw, dh, dw, ph, pw, OW):
        """cols[(c, a, t), (i - i0) * OW + j] = src[c, i * sh + a * dh - ph, j * sw + t * dw - pw]
        for output rows i0 <= i < i1, zero outside src (the padding, never materialized)."""
        C, H, W = src.shape
        R = i1 - i0
        for c in range(C):
            sc = src[c]
            for a in range(KH):
                for t in range(KW):
                    d = cols[(c * KH + a) * KW + t]
                    off = t * dw - pw
                    j0 = min(OW, 0 if off >= 0 else (sw - 1 - off) // sw)
                    j1 = max(j0, min(OW, (W - 1 - off) // sw + 1)) if W - 1 - off >= 0 else j0
                    for ii in range(R):
                        r = (i0 + ii) * sh + a * dh - ph
                        row = d[ii * OW:(ii + 1) * OW]
                        if r < 0 or r >= H:
                            for j in range(OW):
                                row[j] = 0
                            continue
                        s = sc[r]
                        for j in range(j0):
                            row[j] = 0
                        if sw == 1:
                            ss, rr = s[j0 + off:], row[j0:]
                            for j in range(j1 - j0):
                                rr[j] = ss[j]
                        else:
                            for j in range(j0, j1):
                                row[j] = s[j * sw + off]
                        for j in range(j1, OW):
                            row[j] = 0
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
        _depthwise(xw, ww.reshape(Co, ks[0], ks[1]), bw, y, stride[0], stride[1], dilation[0],
                   dilation[1], padding[0][0], padding[1][0])
    else:
        y = _im2col_gemm(xw, ww, bw if bias is not None else None, stride, padding, dilation,
                         groups, out)
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _copy(v):
    """A C-contiguous copy of view v (N, C, ...), its channels split over the threads (NumPy
    copies release the GIL) when large."""
    if v.flags.c_contiguous:
        return v
    out = np.empty(v.shape, v.dtype)
    C = v.shape[1]
    if _THREADS == 1 or v.size < 1 << 18 or C < _THREADS:
        np.copyto(out, v)
        return out
    cuts = [C * i // _THREADS for i in range(_THREADS + 1)]
    list(_pool().map(lambda i: np.copyto(out[:, cuts[i]:cuts[i + 1]], v[:, cuts[i]:cuts[i + 1]]),
                     range(_THREADS)))
    return out


def _im2col_gemm(x, w, bias, stride, padding, dilation, groups, out):
    N, C = x.shape[:2]
    Co, ks = w.shape[0], tuple(w.shape[2:])
    if (len(out) == 2 and groups == 1 and _nb is not None and _THREADS > 1
            and (ks != (1, 1) or stride != (1, 1) or any(lo or hi for lo, hi in padding))):
        return _rows_gemm(x, w, bias, stride, padding, dilation, out)
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
    per = C * int(np.prod(ks)) * L                  # column elements of one image
    lim = _blas_one_thread() if _THREADS > 1 and N >= _THREADS and N * per >= 1 << 20 else None
    if lim is None:
        step = max(1, _COLS // max(1, per))
        for n0 in range(0, N, step):
            n1 = min(N, n0 + step)
            cols = _copy(view[n0:n1]).reshape(n1 - n0, groups, ck, L)
            np.matmul(wg, cols, out=y[n0:n1])
    else:
        # images split over the threads, each copying its columns and calling a one-thread
        # BLAS: no barrier inside BLAS, and the copies run in parallel too
        step = max(1, _COLS // (_THREADS * per))
        cuts = [N * i // _THREADS for i in range(_THREADS + 1)]

        def run(i):
            for n0 in range(cuts[i], cuts[i + 1], step):
                n1 = min(cuts[i + 1], n0 + step)
                cols = np.ascontiguousarray(view[n0:n1]).reshape(n1 - n0, groups, ck, L)
                np.matmul(wg, cols, out=y[n0:n1])
        with lim:
            list(_pool().map(run, range(_THREADS)))
    y = y.reshape((N, Co) + out)
    if bias is not None:
        y += bias.reshape((Co,) + (1,) * len(out))
    return y


_ROWS = 1 << 20        # column elements per task of _rows_gemm (4 MiB of float32)


def _rows_gemm(x, w, bias, stride, padding, dilation, out):
    """2-d conv, one group: tasks of (image, band of output rows), split over the threads; each
    builds the band's columns in a per-thread cache-sized buffer and multiplies them by the
    weight with a one-thread BLAS, adding the bias in the output's slice (so columns and bias
    pass stay in cache). Stride 1: the image zero-padded once into a per-thread plane, and the
    band computed at the padded width, so that every column row is one contiguous run of the
    plane (the columns past OW are dropped). Else the columns come from the unpadded input
    (Numba, zeros where the padding falls)."""
    N, C, H, W = x.shape
    Co, _, KH, KW = w.shape
    OH, OW = out
    K = C * KH * KW
    wm = w.reshape(Co, K)
    y = np.empty((N, Co, OH, OW), x.dtype)
    wide = stride == (1, 1)
    (pt, pb), (pl, pr) = padding
    Wp = W + pl + pr if wide else OW
    R = max(1, min(OH, _ROWS // (K * Wp)))
    tasks = [(n, i0) for n in range(N) for i0 in range(0, OH, R)]
    T = min(_THREADS, len(tasks))
    args = (KH, KW) + tuple(stride) + tuple(dilation) + (pt, pl, OW)
    b3 = None if bias is None else bias.reshape(Co, 1, 1)

    def run(i):
        cols = np.empty((K, R * Wp), x.dtype)
        if wide:
            Hp = H + pt + pb
            # slack past the last row: the last taps read up to (KW - 1) * dw further
            plane = np.zeros((C, Hp * Wp + KW * dilation[1]), x.dtype)
            inner = plane[:, :Hp * Wp].reshape(C, Hp, Wp)[:, pt:pt + H, pl:pl + W]
            tmp = np.empty((Co, R * Wp), x.dtype)
            st = plane.strides
            have = -1
        for n, i0 in tasks[i * len(tasks) // T:(i + 1) * len(tasks) // T]:
            i1 = min(OH, i0 + R)
            c = cols if i1 - i0 == R else cols[:, :(i1 - i0) * Wp]
            yb = y[n, :, i0:i1]
            if wide:
                if n != have:
                    np.copyto(inner, x[n])
                    have = n
                L = (i1 - i0) * Wp
                src = as_strided(plane[:, i0 * Wp:], (C, KH, KW, L),
                                 (st[0], dilation[0] * Wp * st[1], dilation[1] * st[1], st[1]),
                                 writeable=False)
                np.copyto(c.reshape(C, KH, KW, L), src)
                t = tmp if L == tmp.shape[1] else tmp[:, :L]
                np.matmul(wm, c, out=t)
                t = t.reshape(Co, i1 - i0, Wp)[:, :, :OW]
                if b3 is None:
                    np.copyto(yb, t)
                else:
                    np.add(t, b3, out=yb)
            else:
                _im2col_rows(x[n], c, i0, i1, *args)
                np.matmul(wm, c, out=yb.reshape(Co, -1))
                if b3 is not None:
                    yb += b3
    with _blas_one_thread():
        list(_pool().map(run, range(T)))
    return y
