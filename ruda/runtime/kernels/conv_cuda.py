"""CUDA C sources of ``ruda.nn``'s convolution on cuda (pure code generation; no device access).

Every convolution is seen as 3-d: x ``(N, C, D, H, W)``, output ``(N, C_out, OD, OH, OW)``, a
kernel of ``ks = (KD, KH, KW)`` taps (compile-time; 1-d and 2-d convolutions have leading
axes of 1).  Types and conversions come from :func:`nn_cuda.head` (``T`` storage, ``A``
accumulation; bfloat16 as its uint16 bits).  Each thread of a grid-stride loop makes one
output element; consecutive threads take consecutive output columns, so loads coalesce.

``depthwise(dtype, ks)``
    ``ruda_conv_dw``: groups == C, ``m = C_out / C`` outputs per input channel, direct: every
    tap read from x (out of range: zero padding), bias added, one rounding.
``im2col(dtype, ks, vec)``
    ``ruda_im2col``: columns ``(N, C * K, L)`` (K taps, L output positions) for a cuBLAS
    product with the weight seen as ``(groups, C_out / groups, C / groups * K)``; a 2-d grid
    (rows on y), ``vec`` columns a thread stored as one 16-byte vector where rows allow.
``bias(dtype)``
    ``ruda_bias``: ``y[n, o, l] += b[o]`` in place (A, one rounding); a 2-d grid.
"""
from ruda.runtime.kernels import nn_cuda

# runtime geometry shared by the kernels: input sizes, output sizes, stride, dilation, padding
_GEO = ("int D, int H, int W, int OD, int OH, int OW, int sd, int sh, int sw, "
        "int dd, int dh, int dw, int pd, int ph, int pw")

_TAPS = r"""
#define KD {kd}
#define KH {kh}
#define KW {kw}
#define KT (KD * KH * KW)
"""

_DW = r"""
extern "C" __global__ void __launch_bounds__(256)
ruda_conv_dw(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
             T* __restrict__ y, long long total, int C, int m, {geo}) {{
    const I stride = (I)gridDim.x * blockDim.x;
    const long long plane = (long long)D * H * W;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)total; i += stride) {{
        const int ow = (int)(i % OW);
        I r = i / OW;
        const int oh = (int)(r % OH); r /= OH;
        const int od = (int)(r % OD); r /= OD;
        const int o = (int)(r % (C * m));
        const long long n = r / (C * m);
        const T* xc = x + (n * C + o / m) * plane;
        const T* wo = w + (long long)o * KT;
        A acc = (A)0;
#pragma unroll
        for (int a = 0; a < KD; ++a) {{
            const int id = od * sd - pd + a * dd;
            if ((unsigned)id >= (unsigned)D) continue;
#pragma unroll
            for (int e = 0; e < KH; ++e) {{
                const int ih = oh * sh - ph + e * dh;
                if ((unsigned)ih >= (unsigned)H) continue;
                const T* row = xc + ((long long)id * H + ih) * W;
#pragma unroll
                for (int t = 0; t < KW; ++t) {{
                    const int iw = ow * sw - pw + t * dw;
                    if ((unsigned)iw < (unsigned)W) acc += ld(row[iw]) * ld(wo[(a * KH + e) * KW + t]);
                }}
            }}
        }}
        if (b) acc += ld(b[o]);
        y[i] = st(acc);
    }}
}}
"""

# im2col and bias run on 2-d grids: blockIdx.y walks rows (one row of columns, or one output
# channel of an image), the threads of x its positions, so each thread divides by runtime
# sizes in 32 bits only (64-bit divisions per element made im2col compute-bound)
_IM2COL = r"""
#define VEC {vec}
extern "C" __global__ void __launch_bounds__(256)
ruda_im2col(const T* __restrict__ x, T* __restrict__ cols, int rows, {geo}) {{
    const int OHW = OH * OW, L = OD * OHW;
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {{
        const int tap = r % KT;                          // r = (n * C + c) * KT + tap
        const int t = tap % KW, e = (tap / KW) % KH, a = tap / (KW * KH);
        const T* xc = x + (long long)(r / KT) * D * H * W;
        T* crow = cols + (long long)r * L;
        for (int l0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC; l0 < L;
             l0 += gridDim.x * blockDim.x * VEC) {{
            union {{ uint4 u; T v[VEC]; }} p;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {{
                const int l = l0 + j;
                const int od = OD == 1 ? 0 : l / OHW;
                const int q = l - od * OHW;
                const int oh = q / OW, ow = q - oh * OW;
                const int id = od * sd - pd + a * dd, ih = oh * sh - ph + e * dh;
                const int iw = ow * sw - pw + t * dw;
                T v = (T)0;
                if ((unsigned)id < (unsigned)D && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W)
                    v = xc[((long long)id * H + ih) * W + iw];
                if (VEC == 1) crow[l] = v; else p.v[j] = v;
            }}
            if (VEC > 1) *reinterpret_cast<uint4*>(crow + l0) = p.u;   // one 16-byte store
        }}
    }}
}}
"""

_BIAS = r"""
extern "C" __global__ void __launch_bounds__(256)
ruda_bias(T* __restrict__ y, const T* __restrict__ b, int rows, int co, int L) {
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {       // r = n * co + o
        const A bo = ld(b[r % co]);
        T* yr = y + (long long)r * L;
        for (int l = blockIdx.x * blockDim.x + threadIdx.x; l < L; l += gridDim.x * blockDim.x)
            yr[l] = st(ld(yr[l]) + bo);
    }
}
"""


def _taps(ks):
    kd, kh, kw = (int(k) for k in ks)
    if min(kd, kh, kw) < 1:
        raise ValueError(f"conv_cuda: ks: expected three positive kernel sizes, got {ks!r}")
    return _TAPS.format(kd=kd, kh=kh, kw=kw)


def depthwise(dtype, ks, wide=False):
    """Direct depthwise convolution, entry ``ruda_conv_dw(x, w, b, y, total, C, m, geometry)``
    (``b`` may be null; ``w`` is ``(C * m, KD * KH * KW)``); output indices of
    ``nn_cuda.index_type(wide)``."""
    return nn_cuda.head(dtype) + _taps(ks) + nn_cuda.index_type(wide) + _DW.format(geo=_GEO)


def im2col(dtype, ks, vec=1):
    """Columns ``(N, C, K, L)`` of x, zero where a tap falls in the padding, entry
    ``ruda_im2col(x, cols, rows, geometry)`` (rows = N * C * K, a 2-d grid whose x axis covers
    L / vec). ``vec`` > 1: each thread makes ``vec`` consecutive columns of 16 bytes and stores
    them at once (needs L % vec == 0 and 16-byte aligned rows: ``vec * sizeof(T) == 16``)."""
    return nn_cuda.head(dtype) + _taps(ks) + _IM2COL.format(geo=_GEO, vec=int(vec))


def bias(dtype):
    """``y (N, co, L) += b (co,)`` in place, entry ``ruda_bias(y, b, rows, co, L)`` (rows =
    N * co, a 2-d grid)."""
    return nn_cuda.head(dtype) + _BIAS
