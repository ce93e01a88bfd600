"""CUDA C sources of ``ruda.nn``'s convolution on cuda (pure code generation; no device access).

Every convolution is seen as 3-d: x ``(N, C, D, H, W)``, output ``(N, C_out, OD, OH, OW)``, a
kernel of ``ks = (KD, KH, KW)`` taps (compile-time; 1-d and 2-d convolutions have leading
axes of 1).  Types and conversions come from :func:`nn_cuda.head` (``T`` storage, ``A``
accumulation; bfloat16 as its uint16 bits).  Each thread of a grid-stride loop makes one
output element; consecutive threads take consecutive output columns, so loads coalesce.

``depthwise(dtype, ks)``
    ``ruda_conv_dw``: groups == C, ``m = C_out / C`` outputs per input channel, direct: every
    tap read from x (out of range: zero padding), bias added, one rounding.
``depthwise_plane(dtype, ks, vec)``
    ``ruda_conv_dw_plane``: the same by output planes (a 2-d grid, the plane's taps in
    registers, ``vec`` positions a thread), for planes of many positions.
``im2col(dtype, ks, vec)``
    ``ruda_im2col``: columns ``(N, C * K, L)`` (K taps, L output positions) for a cuBLAS
    product with the weight seen as ``(groups, C_out / groups, C / groups * K)``; a 2-d grid
    (rows on y), ``vec`` columns a thread stored as one 16-byte vector where rows allow.
``im2col_plane(dtype, ks, vec, cap)``
    ``ruda_im2col_plane``: the same columns, a block per plane of x held zero-padded in
    shared memory (padded planes up to ``PLANE_BYTES``): each input element read once.
``bias(dtype, vec)``
    ``ruda_bias``: ``y[n, o, l] += b[o]`` in place (A, one rounding); a 2-d grid, ``vec``
    elements a thread as one 16-byte vector where rows allow.
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

# the taps of one depthwise output (od, oh, ow) of plane xc summed into acc; WEIGHT(k): tap k's
_DW_TAPS = r"""
#pragma unroll
        for (int a = 0; a < KD; ++a) {
            const int id = od * sd - pd + a * dd;
            if ((unsigned)id >= (unsigned)D) continue;
#pragma unroll
            for (int e = 0; e < KH; ++e) {
                const int ih = oh * sh - ph + e * dh;
                if ((unsigned)ih >= (unsigned)H) continue;
                const T* row = xc + ((long long)id * H + ih) * W;
#pragma unroll
                for (int t = 0; t < KW; ++t) {
                    const int iw = ow * sw - pw + t * dw;
                    if ((unsigned)iw < (unsigned)W) acc += ld(row[iw]) * WEIGHT((a * KH + e) * KW + t);
                }
            }
        }
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
{taps}        if (b) acc += ld(b[o]);
        y[i] = st(acc);
    }}
}}
"""

# Depthwise by planes: a 2-d grid (as im2col's) whose y axis walks the output planes (n, o) and
# x axis a plane's positions, VEC consecutive ones a thread: the plane's taps in registers, one
# division a thread instead of four per output
_DW_PLANE = r"""
#define VEC {vec}
extern "C" __global__ void __launch_bounds__(256)
ruda_conv_dw_plane(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                   T* __restrict__ y, int planes, int C, int m, {geo}) {{
    const int OHW = OH * OW, L = OD * OHW, Cm = C * m;
    for (int r = blockIdx.y; r < planes; r += gridDim.y) {{
        const int o = r % Cm;
        const T* xc = x + ((long long)(r / Cm) * C + o / m) * D * H * W;
        T* yr = y + (long long)r * L;
        A wk[KT];
#pragma unroll
        for (int k = 0; k < KT; ++k) wk[k] = ld(w[(long long)o * KT + k]);
        for (int l0 = (blockIdx.x * blockDim.x + threadIdx.x) * VEC; l0 < L;
             l0 += gridDim.x * blockDim.x * VEC) {{
            int od = OD == 1 ? 0 : l0 / OHW;
            const int q = l0 - od * OHW;
            int oh = q / OW, ow = q - oh * OW;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {{
                if (l0 + j < L) {{
                    A acc = (A)0;
{taps}                    if (b) acc += ld(b[o]);
                    yr[l0 + j] = st(acc);
                }}
                if (++ow == OW) {{ ow = 0; if (++oh == OH) {{ oh = 0; ++od; }} }}
            }}
        }}
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
            int od = OD == 1 ? 0 : l0 / OHW;             // one division a thread, then steps
            const int q = l0 - od * OHW;
            int oh = q / OW, ow = q - oh * OW;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {{
                const int id = od * sd - pd + a * dd, ih = oh * sh - ph + e * dh;
                const int iw = ow * sw - pw + t * dw;
                T v = (T)0;
                if ((unsigned)id < (unsigned)D && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W)
                    v = xc[((long long)id * H + ih) * W + iw];
                if (VEC == 1) crow[l0] = v; else p.v[j] = v;
                if (++ow == OW) {{ ow = 0; if (++oh == OH) {{ oh = 0; ++od; }} }}
            }}
            if (VEC > 1) *reinterpret_cast<uint4*>(crow + l0) = p.u;   // one 16-byte store
        }}
    }}
}}
"""

# One block a plane (n, c) of x: the plane read once into shared memory, zero-padded to the
# extents the taps reach (a warp a row), so that the columns need no bounds checks; then all
# its KT rows of columns written from there, the (tap, vector) pairs of the plane shared out
# over the threads as one range (no idle lanes at the end of each row)
_IM2COL_PLANE = r"""
#define VEC {vec}
#define PCAP {cap}
typedef {vt} VT;                                      // VEC elements
extern "C" __global__ void __launch_bounds__(256)
ruda_im2col_plane(const T* __restrict__ x, T* __restrict__ cols, int planes, {geo}) {{
    __shared__ uint4 sraw[PCAP * sizeof(T) / 16];
    T* sx = reinterpret_cast<T*>(sraw);
    const int OHW = OH * OW, L = OD * OHW, NV = L / VEC;
    const int Dp = (OD - 1) * sd + (KD - 1) * dd + 1, Hp = (OH - 1) * sh + (KH - 1) * dh + 1;
    const int Wp = (OW - 1) * sw + (KW - 1) * dw + 1, HWp = Hp * Wp;
    const int RW = blockDim.x < 32 ? blockDim.x : 32;      // threads a padded row
    const int lane = threadIdx.x % RW, warp = threadIdx.x / RW, warps = blockDim.x / RW;
    for (int pl = blockIdx.x; pl < planes; pl += gridDim.x) {{
        const T* xp = x + (long long)pl * D * H * W;
        __syncthreads();                                  // the last plane's reads are done
        for (int r = warp; r < Dp * Hp; r += warps) {{
            const int z = r / Hp, id = z - pd, ih = r - z * Hp - ph;
            const bool in = (unsigned)id < (unsigned)D && (unsigned)ih < (unsigned)H;
            const T* xr = xp + ((long long)id * H + ih) * W;
            for (int c = lane; c < Wp; c += RW) {{
                const int iw = c - pw;
                sx[r * Wp + c] = in && (unsigned)iw < (unsigned)W ? xr[iw] : (T)0;
            }}
        }}
        __syncthreads();
        T* cp = cols + (long long)pl * KT * L;
        for (int k = threadIdx.x; k < KT * NV; k += blockDim.x) {{
            const int tap = k / NV, l0 = (k - tap * NV) * VEC;
            const int t = tap % KW, e = (tap / KW) % KH, a = tap / (KW * KH);
            union {{ VT u; T v[VEC]; }} p;
            int od = OD == 1 ? 0 : l0 / OHW;
            const int q = l0 - od * OHW;
            int oh = q / OW, ow = q - oh * OW;
            int s = ((od * sd + a * dd) * Hp + oh * sh + e * dh) * Wp + ow * sw + t * dw;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {{
                p.v[j] = sx[s];
                s += sw;
                if (++ow == OW) {{
                    ow = 0;
                    s += sh * Wp - OW * sw;
                    if (++oh == OH) {{ oh = 0; s += sd * HWp - OH * sh * Wp; }}
                }}
            }}
            *reinterpret_cast<VT*>(cp + (long long)tap * L + l0) = p.u;
        }}
    }}
}}
"""

_BIAS = r"""
#define VEC {vec}
extern "C" __global__ void __launch_bounds__(256)
ruda_bias(T* __restrict__ y, const T* __restrict__ b, int rows, int co, int L) {{
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {{       // r = n * co + o
        const A bo = ld(b[r % co]);
        T* yr = y + (long long)r * L;
        for (int l = (blockIdx.x * blockDim.x + threadIdx.x) * VEC; l < L;
             l += gridDim.x * blockDim.x * VEC) {{
            if (VEC == 1) {{
                yr[l] = st(ld(yr[l]) + bo);
            }} else {{                                            // 16 bytes at once
                union {{ uint4 u; T v[VEC]; }} p;
                p.u = *reinterpret_cast<const uint4*>(yr + l);
#pragma unroll
                for (int j = 0; j < VEC; ++j) p.v[j] = st(ld(p.v[j]) + bo);
                *reinterpret_cast<uint4*>(yr + l) = p.u;
            }}
        }}
    }}
}}
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
    taps = "#define WEIGHT(k) ld(wo[k])" + _DW_TAPS + "#undef WEIGHT\n"
    return nn_cuda.head(dtype) + _taps(ks) + nn_cuda.index_type(wide) + _DW.format(geo=_GEO, taps=taps)


def depthwise_plane(dtype, ks, vec=4):
    """Direct depthwise convolution by output planes, entry ``ruda_conv_dw_plane(x, w, b, y,
    planes, C, m, geometry)`` (planes = N * C * m), a 2-d grid: x over a plane's positions,
    ``vec`` consecutive ones a thread, y over the planes (both axes looped)."""
    taps = "#define WEIGHT(k) wk[k]" + _DW_TAPS + "#undef WEIGHT\n"
    return nn_cuda.head(dtype) + _taps(ks) + _DW_PLANE.format(geo=_GEO, vec=int(vec), taps=taps)


def im2col(dtype, ks, vec=1):
    """Columns ``(N, C, K, L)`` of x, zero where a tap falls in the padding, entry
    ``ruda_im2col(x, cols, rows, geometry)`` (rows = N * C * K, a 2-d grid whose x axis covers
    L / vec). ``vec`` > 1: each thread makes ``vec`` consecutive columns of 16 bytes and stores
    them at once (needs L % vec == 0 and 16-byte aligned rows: ``vec * sizeof(T) == 16``)."""
    return nn_cuda.head(dtype) + _taps(ks) + _IM2COL.format(geo=_GEO, vec=int(vec))


PLANE_BYTES = 48 << 10          # the largest plane ``im2col_plane`` holds in shared memory


def plane_cap(out, ks, stride, dilation, itemsize):
    """The shared-memory capacity (elements) ``im2col_plane`` is generated with for a conv of
    these output sizes, kernel sizes, strides and dilations: its padded plane (the extents the
    taps reach), rounded up to 2 KiB so that a few sizes share one build; None where that does
    not fit ``PLANE_BYTES``."""
    elements = 1
    for o, k, s, d in zip(out, ks, stride, dilation):
        elements *= (o - 1) * s + (k - 1) * d + 1
    cap = -(-elements * itemsize // 2048) * 2048 // itemsize
    return cap if cap * itemsize <= PLANE_BYTES else None


def im2col_plane(dtype, ks, vec, cap):
    """``im2col``'s columns by planes, entry ``ruda_im2col_plane(x, cols, planes, geometry)``
    (planes = N * C, a 1-d grid; one block a plane, held zero-padded in shared memory of
    ``cap`` elements: see ``plane_cap``). ``vec`` as for ``im2col``: one column a thread, or
    16 bytes of consecutive columns stored at once (needs L % vec == 0)."""
    size = int(vec) * nn_cuda.ITEMSIZE[dtype]
    if vec > 1 and size != 16:
        raise ValueError(f"conv_cuda: im2col_plane: vec * itemsize must be 16, got {size}")
    return nn_cuda.head(dtype) + _taps(ks) + _IM2COL_PLANE.format(
        geo=_GEO, vec=int(vec), cap=int(cap), vt="uint4" if vec > 1 else "T")


def bias(dtype, vec=1):
    """``y (N, co, L) += b (co,)`` in place, entry ``ruda_bias(y, b, rows, co, L)`` (rows =
    N * co, a 2-d grid). ``vec`` > 1: ``vec`` elements a thread as one 16-byte vector (needs
    L % vec == 0, ``vec * sizeof(T) == 16`` and y 16-byte aligned)."""
    return nn_cuda.head(dtype) + _BIAS.format(vec=int(vec))
