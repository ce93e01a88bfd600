"""Host convolution kernel of ``ruda.nn`` (contract: ruda/nn/README.md, ``conv``).

Depthwise convolution (groups == C_in, one input channel per group) runs a Numba direct loop,
parallel over (image, output channel) planes on the host's workers: each plane padded into its
stride phases in a per-thread buffer, then one vectorized axpy per kernel tap (3x3 stride 1
padding 1: at the plane's own pitch, ``_depthwise_same3``). A dense 3x3 conv
of at most ``_THIN`` input channels (an RGB stem) runs a Numba direct loop over images too
(``_thin``). Everything else is im2col + BLAS: 2-d one-group convs with C_in * KW of at least
``_ROWS_MIN_K`` (on several threads) in (image, band of output rows) tasks, one sgemm per
kernel row, see ``_rows_gemm``; the rest with the zero-padded input viewed through NumPy stride
tricks as ``(N, C, *kernel, *out)``, copied into columns for a block of images (a bounded
buffer) and multiplied by the weight as one batched sgemm/dgemm per group, straight into the
NCHW output. float32/float64 compute in themselves; bfloat16 and float16 in float32, rounded
once.
"""
import contextlib

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ruda import _dtypes
from ruda.backends import _workers
from ruda.backends.host._jit import jit
from ruda.backends.host._nn_attention import _blas_one_thread

_COLS = 1 << 23        # column elements per block of images (32 MiB of float32)
_THIN = 4              # input channels up to which a dense 3x3 conv runs ``_thin``
_LOW = tuple(d for d in (_dtypes.bfloat16, _dtypes.float16) if d is not None)

try:
    import numba as _nb
except ImportError:          # optional: depthwise then goes through im2col + BLAS
    _nb = None

if _nb is not None:
    @jit(inline="always")
    def _geometry(H, W, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw):
        """A plane's stride phases: (PW, PL, M8, rows_src, rows_dst, nr, run_dst, run_src,
        run_len, offs). Phase (p, q) of the zero-padded plane starts at (p * sw + q) * PL, rows
        of PW; rows_src[:nr] / rows_dst[:nr]: the input rows and where their phase rows start;
        run_*: per column phase, where its run of input columns goes, comes from and its length;
        offs: each tap's offset, so that tap (a, t) of output (i, j) reads buf[offs + i * PW + j].
        M8: OH * PW rounded up to whole vectors (the columns past OW are scratch). Computed once
        a call: integer divisions cost tens of cycles and a small plane has few outputs."""
        Hp = (OH - 1) * sh + (KH - 1) * dh + 1
        Wp = (OW - 1) * sw + (KW - 1) * dw + 1
        PH = (Hp + sh - 1) // sh
        PW = (Wp + sw - 1) // sw
        PL = PH * PW + PW + 8               # a phase plane, a row and a vector of slack
        M8 = (OH * PW + 7) // 8 * 8
        s0, s1 = max(0, pw), min(Wp, W + pw)
        rows_src = np.empty(Hp, np.int64)
        rows_dst = np.empty(Hp, np.int64)
        nr = 0
        for r in range(Hp):
            xr = r - ph
            if 0 <= xr < H:
                rows_src[nr] = xr
                rows_dst[nr] = (r % sh) * sw * PL + (r // sh) * PW
                nr += 1
        run_dst = np.empty(sw, np.int64)
        run_src = np.empty(sw, np.int64)
        run_len = np.empty(sw, np.int64)
        for pc in range(sw):
            k0 = (s0 - pc + sw - 1) // sw if s0 > pc else 0
            k1 = (s1 - pc + sw - 1) // sw if s1 > pc else 0
            run_dst[pc] = pc * PL + k0
            run_src[pc] = pc + k0 * sw - pw
            run_len[pc] = max(0, k1 - k0)
        offs = np.empty(KH * KW, np.int64)
        for a in range(KH):
            for t in range(KW):
                offs[a * KW + t] = (((a * dh) % sh) * sw + (t * dw) % sw) * PL \
                    + (a * dh) // sh * PW + (t * dw) // sw
        return PW, PL, M8, rows_src, rows_dst, nr, run_dst, run_src, run_len, offs

    @jit(inline="always")
    def _fill(src, buf, rows_src, rows_dst, nr, run_dst, run_src, run_len, sw):
        """Plane src (H, W) into its phases in buf (the padding stays zero)."""
        # slices, not offset indices (here and in the kernels): Numba's negative-index check
        # on b + q would keep LLVM from vectorizing the loops over q; slice assignment is a
        # slow generic copy
        if sw == 2:
            # both column phases from one base: the pairs (sr[2k], sr[2k + 1]) become
            # shuffles, where a stride-2 loop per phase gathers (slow on AMD's cores). The two
            # phases' first source columns are consecutive (the first even and odd at or past
            # the left padding), so phase e, which starts first, has the other's length or one
            # more
            e = 0 if run_src[0] < run_src[1] else 1
            le, lo = run_len[e], run_len[1 - e]
            for ri in range(nr):
                sr = src[rows_src[ri]][run_src[e]:]
                rb = rows_dst[ri]
                de = buf[rb + run_dst[e]:]
                do = buf[rb + run_dst[1 - e]:]
                for k in range(lo):
                    de[k] = sr[2 * k]
                    do[k] = sr[2 * k + 1]
                if le > lo:
                    de[lo] = sr[2 * lo]
            return
        for ri in range(nr):
            srow = src[rows_src[ri]]
            rb = rows_dst[ri]
            for pc in range(sw):
                d = buf[rb + run_dst[pc]:]
                sr = srow[run_src[pc]:]
                L = run_len[pc]
                if sw == 1:
                    for k in range(L):
                        d[k] = sr[k]
                else:
                    for k in range(L):
                        d[k] = sr[k * sw]

    @jit(inline="always")
    def _crop(src, dst, i0, rows, PW):
        """dst[i0 + i, :] = src[i * PW:][:OW] for i < rows: outputs computed at the phase pitch
        PW (columns past OW scratch) into the plane dst (OH, OW)."""
        for i in range(rows):
            di, ai = dst[i0 + i], src[i * PW:]
            for j in range(dst.shape[1]):
                di[j] = ai[j]

    @jit(nogil=True, fastmath=False, cache=True)
    def _depthwise(x, w, b, out, sh, sw, dh, dw, ph, pw, u0, u1):
        """out[n, o] = b[o] + sum over taps of w[o, a, t] * x[n, o // m] shifted, for the planes
        u = n * C_out + o in [u0, u1); x unpadded.

        Per plane: the zero-padded input split into its sh * sw stride phases (so every tap is
        a stride-1 shift of one phase), then one vectorized loop over the output rows at the
        phase's pitch (columns past OW are scratch)."""
        N, C, H, W = x.shape
        Co, KH, KW = w.shape
        OH, OW = out.shape[2], out.shape[3]
        m = Co // C
        PW, PL, M8, rows_src, rows_dst, nr, run_dst, run_src, run_len, offs = _geometry(
            H, W, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw)
        narrow = sw == 1 and W <= 8
        xflat = x.reshape(N * C * H * W)
        buf = np.zeros(sh * sw * PL, x.dtype)
        acc = np.empty(M8, x.dtype)
        for u in range(u0, u1):
            n = u // Co
            o = u - n * Co
            c = n * C + o // m                  # the input plane
            if narrow and (c + 1) * H * W + 8 <= xflat.size:
                # rows of at most 8: one 8-wide copy each (reading on into the next row,
                # still inside x), then the columns past the row zeroed again
                base = c * H * W + run_src[0]
                for ri in range(nr):
                    d = buf[rows_dst[ri] + run_dst[0]:][:8]
                    sr = xflat[base + rows_src[ri] * W:][:8]
                    for k in range(8):
                        d[k] = sr[k]
                    for k in range(run_len[0], 8):
                        d[k] = 0
            else:
                _fill(x[n, o // m], buf, rows_src, rows_dst, nr, run_dst, run_src, run_len, sw)
            bo = b[o]
            if KH == 3 and KW == 3:
                p0 = buf[offs[0]:][:M8]
                p1 = buf[offs[1]:][:M8]
                p2 = buf[offs[2]:][:M8]
                p3 = buf[offs[3]:][:M8]
                p4 = buf[offs[4]:][:M8]
                p5 = buf[offs[5]:][:M8]
                p6 = buf[offs[6]:][:M8]
                p7 = buf[offs[7]:][:M8]
                p8 = buf[offs[8]:][:M8]
                w0, w1, w2 = w[o, 0, 0], w[o, 0, 1], w[o, 0, 2]
                w3, w4, w5 = w[o, 1, 0], w[o, 1, 1], w[o, 1, 2]
                w6, w7, w8 = w[o, 2, 0], w[o, 2, 1], w[o, 2, 2]
                for q in range(M8):
                    acc[q] = (bo + w0 * p0[q] + w1 * p1[q] + w2 * p2[q] + w3 * p3[q]
                              + w4 * p4[q] + w5 * p5[q] + w6 * p6[q] + w7 * p7[q]
                              + w8 * p8[q])
            else:
                acc[:] = bo
                for a in range(KH):
                    for t in range(KW):
                        pt = buf[offs[a * KW + t]:][:M8]
                        wv = w[o, a, t]
                        for q in range(M8):
                            acc[q] += wv * pt[q]
            _crop(acc, out[n, o], 0, OH, PW)

    @jit(nogil=True, fastmath=False, cache=True)
    def _depthwise_same3(x, w, b, out, u0, u1):
        """``_depthwise`` for 3x3, stride 1, padding 1, dilation 1 (MobileNet's): planes u in
        [u0, u1) computed at the plane's own pitch W from one flat copy with W + 1 zeros above
        and below, straight into out (no phase buffer, no crop). Taps of the left and right
        kernel columns wrap across rows there, so at the plane's first and last column their
        sum is replaced by the weights times the padding's zeros (a select, not a product with
        a mask: a value beyond the edge must not reach the output, even an inf)."""
        N, C, H, W = x.shape
        Co = w.shape[0]
        m = Co // C
        HW = H * W
        buf = np.zeros(HW + 2 * W + 2, x.dtype)
        inner = buf[W + 1:][:HW]
        first = np.empty(HW, np.bool_)
        last = np.empty(HW, np.bool_)
        for q in range(HW):
            first[q] = q % W == 0
            last[q] = q % W == W - 1
        p0, p1, p2 = buf[0:][:HW], buf[1:][:HW], buf[2:][:HW]
        p3, p4, p5 = buf[W:][:HW], buf[W + 1:][:HW], buf[W + 2:][:HW]
        p6, p7, p8 = buf[2 * W:][:HW], buf[2 * W + 1:][:HW], buf[2 * W + 2:][:HW]
        xf = x.reshape(N * C, HW)
        of = out.reshape(N * Co, HW)
        zero = x.dtype.type(0)
        n, o = u0 // Co, u0 % Co
        for u in range(u0, u1):
            src = xf[n * C + o // m]
            for q in range(HW):
                inner[q] = src[q]
            w0, w1, w2 = w[o, 0, 0], w[o, 0, 1], w[o, 0, 2]
            w3, w4, w5 = w[o, 1, 0], w[o, 1, 1], w[o, 1, 2]
            w6, w7, w8 = w[o, 2, 0], w[o, 2, 1], w[o, 2, 2]
            pad_left = w0 * zero + w3 * zero + w6 * zero
            pad_right = w2 * zero + w5 * zero + w8 * zero
            bo = b[o]
            d = of[u]
            for q in range(HW):
                left = w0 * p0[q] + w3 * p3[q] + w6 * p6[q]
                right = w2 * p2[q] + w5 * p5[q] + w8 * p8[q]
                acc = bo + w1 * p1[q] + w4 * p4[q] + w7 * p7[q]
                acc += pad_left if first[q] else left
                acc += pad_right if last[q] else right
                d[q] = acc
            o += 1
            if o == Co:
                o = 0
                n += 1

    @jit(nogil=True, fastmath=False, cache=True)
    def _shift_rows(x, shifted, PW, pt, pl, dw):
        """shifted[c, t, k] = x zero-padded (pt rows, pl columns) at pitch PW, flattened, at k +
        t * dw: the padded plane written row by row into t = 0 (the interior only: the zeros of
        the padding stay from the first call), the shifts copied from it in one run each."""
        C, H, W = x.shape
        KW, PL = shifted.shape[1], shifted.shape[2]
        for c in range(C):
            d = shifted[c, 0]
            for i in range(H):
                dr = d[(i + pt) * PW + pl:]
                sr = x[c, i]
                for j in range(W):
                    dr[j] = sr[j]
            for t in range(1, KW):
                dt, st = shifted[c, t], d[t * dw:]
                for k in range(PL - t * dw):
                    dt[k] = st[k]

    @jit(nogil=True, fastmath=False, cache=True)
    def _shift_flat(x, shifted, pt, pl, dw):
        """``_shift_rows`` at the input's own pitch W (stride 1, output width W): shifted[c, t]
        row pt + i = x[c, i] shifted by t * dw - pl, zero past its ends, as one flat copy of
        the plane then the few elements per row that it carried over from the next or
        previous row zeroed (the zero rows above and below stay from the first call)."""
        C, H, W = x.shape
        KW = shifted.shape[1]
        HW = H * W
        base = pt * W
        for c in range(C):
            src = x[c].reshape(HW)
            for t in range(KW):
                s = t * dw - pl
                d = shifted[c, t, base:]
                k0, k1 = max(0, -s), min(HW, HW - s)
                dk, sk = d[k0:k1], src[k0 + s:k1 + s]
                for k in range(k1 - k0):
                    dk[k] = sk[k]
                j0, j1 = (W - s, W) if s > 0 else (0, -s)
                for i in range(H):
                    r = d[i * W:]
                    for j in range(max(0, j0), min(W, j1)):
                        r[j] = 0

    @jit(nogil=True, fastmath=False, cache=True)
    def _crop_bias(acc, b, y, i0, PW):
        """y[c, i0 + i, j] = sum over a of acc[a, c, i * PW + j] (the kernel rows' products,
        summed in order) + b[c], for the rows the band holds."""
        OW = y.shape[2]
        R = min(y.shape[1] - i0, acc.shape[2] // PW)
        for c in range(y.shape[0]):
            bc = b[c]
            for i in range(R):
                dr = y[c, i0 + i]
                sr = acc[0, c, i * PW:]
                for j in range(OW):
                    dr[j] = sr[j]
                for a in range(1, acc.shape[0]):
                    sr = acc[a, c, i * PW:]
                    for j in range(OW):
                        dr[j] += sr[j]
                for j in range(OW):
                    dr[j] += bc

    @jit(nogil=True, fastmath={"contract", "reassoc"}, cache=True)
    def _thin(x, w, b, out, sh, sw, dh, dw, ph, pw, n0, n1):
        """A dense one-group 3x3 conv of few input channels (an RGB stem), images [n0, n1):
        each image's planes split into their stride phases once, then per band of output rows
        and 4 output channels, one pass per input channel reading each of its 9 taps once for
        the 4 (the thin columns of im2col are never built)."""
        N, C, H, W = x.shape
        Co = w.shape[0]
        OH, OW = out.shape[2], out.shape[3]
        PW, PL, M8, rows_src, rows_dst, nr, run_dst, run_src, run_len, offs = _geometry(
            H, W, OH, OW, 3, 3, sh, sw, dh, dw, ph, pw)
        bufs = np.zeros((C, sh * sw * PL), x.dtype)
        BR = max(1, min(OH, 2048 // PW))    # rows of a band: the 4 accumulators stay in L1
        acc = np.empty((4, (BR * PW + 7) // 8 * 8), x.dtype)
        wk = np.zeros((4, 9), x.dtype)
        a0, a1, a2, a3 = acc[0], acc[1], acc[2], acc[3]
        for n in range(n0, n1):
            for c in range(C):
                _fill(x[n, c], bufs[c], rows_src, rows_dst, nr, run_dst, run_src, run_len, sw)
            for o0 in range(0, Co, 4):
                no = min(4, Co - o0)
                for i0 in range(0, OH, BR):
                    rows = min(BR, OH - i0)
                    M = (rows * PW + 7) // 8 * 8
                    for j in range(no):
                        aj, bj = acc[j], b[o0 + j]
                        for q in range(M):
                            aj[q] = bj
                    for c in range(C):
                        for j in range(no):
                            for t in range(9):
                                wk[j, t] = w[o0 + j, c, t // 3, t % 3]
                        (w00, w01, w02, w03, w04, w05, w06, w07, w08) = wk[0]
                        (w10, w11, w12, w13, w14, w15, w16, w17, w18) = wk[1]
                        (w20, w21, w22, w23, w24, w25, w26, w27, w28) = wk[2]
                        (w30, w31, w32, w33, w34, w35, w36, w37, w38) = wk[3]
                        bc = bufs[c, i0 * PW:]
                        p0, p1, p2 = bc[offs[0]:][:M], bc[offs[1]:][:M], bc[offs[2]:][:M]
                        p3, p4, p5 = bc[offs[3]:][:M], bc[offs[4]:][:M], bc[offs[5]:][:M]
                        p6, p7, p8 = bc[offs[6]:][:M], bc[offs[7]:][:M], bc[offs[8]:][:M]
                        for q in range(M):
                            v0, v1, v2 = p0[q], p1[q], p2[q]
                            v3, v4, v5 = p3[q], p4[q], p5[q]
                            v6, v7, v8 = p6[q], p7[q], p8[q]
                            a0[q] += (w00 * v0 + w01 * v1 + w02 * v2 + w03 * v3 + w04 * v4
                                      + w05 * v5 + w06 * v6 + w07 * v7 + w08 * v8)
                            a1[q] += (w10 * v0 + w11 * v1 + w12 * v2 + w13 * v3 + w14 * v4
                                      + w15 * v5 + w16 * v6 + w17 * v7 + w18 * v8)
                            a2[q] += (w20 * v0 + w21 * v1 + w22 * v2 + w23 * v3 + w24 * v4
                                      + w25 * v5 + w26 * v6 + w27 * v7 + w28 * v8)
                            a3[q] += (w30 * v0 + w31 * v1 + w32 * v2 + w33 * v3 + w34 * v4
                                      + w35 * v5 + w36 * v6 + w37 * v7 + w38 * v8)
                    for j in range(no):
                        _crop(acc[j], out[n, o0 + j], i0, rows, PW)

else:
    _depthwise = _depthwise_same3 = _thin = _shift_rows = _shift_flat = _crop_bias = None


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
        w3 = ww.reshape(Co, ks[0], ks[1])
        if ks == (3, 3) and stride == dilation == (1, 1) and padding == ((1, 1), (1, 1)):
            def planes(a, b):
                _depthwise_same3(xw, w3, bw, y, a, b)
        else:
            args = (xw, w3, bw, y, stride[0], stride[1], dilation[0], dilation[1],
                    padding[0][0], padding[1][0])

            def planes(a, b):
                _depthwise(*args, a, b)
        # planes split over the host's workers: Numba's thread team would hand off faster
        # (~80 us less a call on 2 cores), but its spinning idle threads slow the BLAS and
        # elementwise work after it by more (a MobileNetV2 forward: ~160 ms -> ~200); four
        # ranges a thread, so that the caller takes more of them while a worker wakes up
        _workers.run_split(N * Co, planes, 4 * _workers.THREADS if y.size >= 1 << 15 else 1)
    elif groups == 1 and C <= _THIN and ks == (3, 3) and _thin is not None:
        y = np.empty((N, Co) + out, dtype=wdt)
        args = (xw, ww, bw, y, stride[0], stride[1], dilation[0], dilation[1], padding[0][0],
                padding[1][0])
        _workers.run_split(N, lambda a, b: _thin(*args, a, b), _workers.THREADS)
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
    T = _workers.THREADS
    if T == 1 or v.size < 1 << 18 or v.shape[1] < T:
        np.copyto(out, v)
        return out
    _workers.run_split(v.shape[1], lambda a, b: np.copyto(out[:, a:b], v[:, a:b]), T)
    return out


def _im2col_gemm(x, w, bias, stride, padding, dilation, groups, out):
    N, C = x.shape[:2]
    Co, ks = w.shape[0], tuple(w.shape[2:])
    if (len(out) == 2 and groups == 1 and _workers.THREADS > 1 and C * ks[1] >= _ROWS_MIN_K
            and (ks != (1, 1) or stride != (1, 1) or any(lo or hi for lo, hi in padding))):
        return _rows_gemm(x, w, bias, stride, padding, dilation, out)
    padded = any(lo or hi for lo, hi in padding)
    inner = (slice(None), slice(None)) + tuple(slice(lo, lo + n) for n, (lo, _)
                                               in zip(x.shape[2:], padding))
    L = int(np.prod(out))
    ck = C // groups * int(np.prod(ks))
    wg = w.reshape(groups, Co // groups, ck)
    y = np.empty((N, groups, Co // groups, L), dtype=x.dtype)
    b4 = None if bias is None else bias.reshape(groups, Co // groups, 1)

    def block(n0, n1, copy):
        """Images [n0, n1): zero-padded, viewed as (n, C, *kernel, *out), copied into columns,
        multiplied by the weight into y, the bias added while that slice is in cache."""
        xb = x[n0:n1]
        if padded:
            xb = np.zeros((n1 - n0, C) + tuple(n + lo + hi for n, (lo, hi)
                                               in zip(x.shape[2:], padding)), dtype=x.dtype)
            xb[inner] = x[n0:n1]
        st = xb.strides
        view = as_strided(xb, (n1 - n0, C) + ks + out,
                          st[:2] + tuple(s * d for s, d in zip(st[2:], dilation))
                          + tuple(s * k for s, k in zip(st[2:], stride)), writeable=False)
        np.matmul(wg, copy(view).reshape(n1 - n0, groups, ck, L), out=y[n0:n1])
        if b4 is not None:
            y[n0:n1] += b4

    per = C * int(np.prod(ks)) * L                  # column elements of one image
    T = _workers.THREADS
    lim = _blas_one_thread() if T > 1 and N >= T and N * per >= 1 << 20 else None
    if lim is None:
        step = max(1, _COLS // max(1, per))
        for n0 in range(0, N, step):
            block(n0, min(N, n0 + step), _copy)
    else:
        # images split over the threads, each padding and copying its columns and calling a
        # one-thread BLAS: no barrier inside BLAS, and the copies run in parallel too
        step = max(1, _COLS // (T * per))

        def run(a, b):
            for n0 in range(a, b, step):
                block(n0, min(b, n0 + step), np.ascontiguousarray)
        with lim:
            _workers.run_split(N, run, T)
    return y.reshape((N, Co) + out)


_ROWS = 1 << 20        # column elements per task of _rows_gemm (4 MiB of float32)
_ROWS_MIN_K = 32       # C_in * KW below which its sgemms per kernel row are too thin


def _rows_gemm(x, w, bias, stride, padding, dilation, out):
    """2-d conv, one group: tasks of (image, band of output rows), split over the threads, each
    with a one-thread BLAS. Per image, the zero-padded input split into its stride phases is
    copied once per kernel column t, shifted by that column's offset (``shifted``); the band is
    computed at the phase width (columns past OW dropped), so that the columns of kernel row a
    are a strided slab of ``shifted`` (rows (c, t) at one pitch): one sgemm per kernel row,
    accumulated, then the bias added where the band is cropped into the output. KW copies of
    the input instead of the KH * KW of a full im2col. Stride 1 with Numba copies and crops in
    two small loops (``_shift_rows``, ``_crop_bias``; the kernel rows' products summed in the
    crop), and where the output is as wide as x (``"same"``) at x's own pitch, each row's
    shift zero past its ends (``_shift_flat``), so no product column is scratch; NumPy's
    strided copies otherwise."""
    N, C, H, W = x.shape
    Co, _, KH, KW = w.shape
    OH, OW = out
    sh, sw = stride
    dh, dw = dilation
    (pt, _), (pl, _) = padding
    K = C * KH * KW
    y = np.empty((N, Co, OH, OW), x.dtype)
    PH = -(-max((OH - 1) * sh + (KH - 1) * dh + 1, pt + H) // sh)
    # stride 1 with Numba: the shifted copies straight from x, the bias added in the crop;
    # where the output is as wide as x, at x's pitch (no scratch columns in the products)
    direct = sh == sw == 1 and _shift_rows is not None
    tight = direct and OW == W
    PW = W if tight else -(-max((OW - 1) * sw + (KW - 1) * dw + 1, pl + W) // sw)
    PL = PH * PW + PW + KW * dw           # a phase plane and slack for the wide rows' taps
    R = max(1, min(OH, _ROWS // (K * PW)))
    tasks = [(n, i0) for n in range(N) for i0 in range(0, OH, R)]
    # tasks on threads only where BLAS can be held to one thread a task (threadpoolctl)
    one_blas = _blas_one_thread()
    T = min(_workers.THREADS, len(tasks)) if one_blas is not None else 1
    b3 = None if bias is None else bias.reshape(Co, 1, 1)
    bz = np.zeros(Co, x.dtype) if bias is None else bias
    # rows (c, t) of each kernel row a's columns lie at one pitch in ``shifted`` (a copy of
    # the phases per kernel column t, shifted by its offset), so kernel row a is one sgemm on
    # a strided slab of it, accumulated over a: KW copies of the input instead of KH * KW
    cols = [((t * dw) % sw, (t * dw) // sw) for t in range(KW)]
    row_offsets = [(a * dh) % sh * PL + (a * dh) // sh * PW for a in range(KH)]
    wk = np.ascontiguousarray(w.transpose(2, 0, 1, 3)).reshape(KH, Co, C * KW)

    def run(i):
        # direct: each kernel row's product in its own slab, summed in the crop (no add
        # passes); else the first slab accumulates the products made in the second
        acc = np.empty((KH if direct else min(KH, 2), Co, R * PW), x.dtype)
        shifted = np.zeros((C, KW, sh, PL), x.dtype)
        rows = shifted.reshape(C * KW, sh * PL)
        if not direct:
            phases = np.zeros((C, sh, sw, PL), x.dtype)
            if sh == sw == 1:
                pad = phases[:, 0, 0, :PH * PW].reshape(C, PH, PW)
            else:
                pad = np.zeros((C, PH * sh, PW * sw), x.dtype)
                split = phases[..., :PH * PW].reshape(C, sh, sw, PH, PW)
            inner = pad[:, pt:pt + H, pl:pl + W]
        have = -1
        for n, i0 in tasks[i * len(tasks) // T:(i + 1) * len(tasks) // T]:
            if n != have:
                if tight:
                    _shift_flat(x[n], shifted.reshape(C, KW, PL), pt, pl, dw)
                elif direct:
                    _shift_rows(x[n], shifted.reshape(C, KW, PL), PW, pt, pl, dw)
                else:
                    np.copyto(inner, x[n])
                    if sh != 1 or sw != 1:
                        np.copyto(split, pad.reshape(C, PH, sh, PW, sw).transpose(0, 2, 4, 1, 3))
                    for t, (q, s) in enumerate(cols):
                        np.copyto(shifted[:, t, :, :PL - s], phases[:, :, q, s:])
                have = n
            i1 = min(OH, i0 + R)
            L = (i1 - i0) * PW
            ac = acc[:, :, :L]
            for a, o in enumerate(row_offsets):
                o += i0 * PW
                k = a if direct else min(a, 1)
                np.matmul(wk[a], rows[:, o:o + L], out=ac[k])
                if k and not direct:
                    np.add(ac[0], ac[1], out=ac[0])
            if direct:
                _crop_bias(acc, bz, y[n], i0, PW)
                continue
            ac = ac[0].reshape(Co, i1 - i0, PW)[:, :, :OW]
            if b3 is None:
                np.copyto(y[n, :, i0:i1], ac)
            else:
                np.add(ac, b3, out=y[n, :, i0:i1])
    with one_blas or contextlib.nullcontext():
        _workers.run(run, T)
    return y
