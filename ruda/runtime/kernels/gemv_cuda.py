"""CUDA C of the bfloat16 / float16 GEMV (pure code generation; no device access): ``y = x @
W.T`` for a few rows of ``x``, the shape of decoding, where cuBLAS's GEMM kernels leave
bandwidth unused and add a split-K reduction launch.

``gemv(m)``: entry ``ruda_gemv(x, ldx, w, ldw, y, ldy, N, K)`` for ``m`` rows of x (M, K), W
(N, K) row-major, y (M, N); 16-bit values in and out (``T`` and the conversions of
:func:`ruda.runtime.kernels.nn_cuda.head`), float32 accumulation, rounded to nearest even once.
Needs K % 8 == 0, row strides multiples of 8 elements and 16-byte aligned pointers.
A warp takes ``ROWS`` rows of W: each lane reads 16-byte vectors (8 values) of them,
``UNROLL`` vectors per row in flight (weights read once, evict-first), and the same columns of
the x rows through the read-only cache; shuffles reduce, one lane per output writes it.
Launch: grid ceil(N / (ROWS * WARPS)), block 32 * WARPS.

``gemv(m, swiglu=True)``: the same entry for W = [gate; up] (N = 2 I rows) giving y (M, I) =
``silu(g) * u`` of the two halves, each rounded to the dtype first as the unfused GEMV and swiglu
kernels round (same values): a warp takes gate row j and up row j + I.  Grid ceil(I / WARPS).
"""
from ruda.runtime.kernels.nn_cuda import head

ROWS = 2       # rows of W per warp (the swiglu variant's gate and up rows: must be 2)
WARPS = 4      # warps per block
UNROLL = 4     # 16-byte vectors per row of W in flight per lane

_GEMV = r"""
#define M {m}
#define ROWS {rows}
#define WARPS {warps}
#define UNROLL {unroll}
#define SWIGLU {swiglu}
#define BF16 {bf16}
// dot of 8 pairs of 16-bit values packed in two uint4, added to acc
__device__ __forceinline__ float dot8(uint4 a, uint4 b, float acc) {{
#if BF16                                // a bfloat16 pair widens by a shift and a mask
    const unsigned* pa = reinterpret_cast<const unsigned*>(&a);
    const unsigned* pb = reinterpret_cast<const unsigned*>(&b);
#pragma unroll
    for (int i = 0; i < 4; ++i) {{
        acc = fmaf(__uint_as_float(pa[i] << 16), __uint_as_float(pb[i] << 16), acc);
        acc = fmaf(__uint_as_float(pa[i] & 0xffff0000u), __uint_as_float(pb[i] & 0xffff0000u), acc);
    }}
#else
    const T* pa = reinterpret_cast<const T*>(&a);
    const T* pb = reinterpret_cast<const T*>(&b);
#pragma unroll
    for (int i = 0; i < 8; ++i) acc = fmaf(ld(pa[i]), ld(pb[i]), acc);
#endif
    return acc;
}}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
ruda_gemv(const T* __restrict__ x, long long ldx, const T* __restrict__ w, long long ldw,
          T* __restrict__ y, long long ldy, int N, int K) {{
    const int lane = threadIdx.x & 31;
    const T* wr[ROWS];
#if SWIGLU
    const int n0 = blockIdx.x * WARPS + (threadIdx.x >> 5);     // gate row n0, up row n0 + N / 2
    if (n0 >= N / 2) return;
    wr[0] = w + (long long)n0 * ldw;
    wr[1] = w + (long long)(n0 + N / 2) * ldw;
#else
    const int n0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    if (n0 >= N) return;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) wr[r] = w + (long long)min(n0 + r, N - 1) * ldw;   // a row past N repeats the last, unwritten
#endif
    float acc[ROWS][M];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) acc[r][m] = 0.f;
    int k = lane * 8;
    for (; k + (UNROLL - 1) * 256 < K; k += UNROLL * 256) {{
        uint4 wv[UNROLL][ROWS];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int r = 0; r < ROWS; ++r) wv[u][r] = __ldcs(reinterpret_cast<const uint4*>(wr[r] + k + u * 256));
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int m = 0; m < M; ++m) {{
                const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + m * ldx + k + u * 256));
#pragma unroll
                for (int r = 0; r < ROWS; ++r) acc[r][m] = dot8(wv[u][r], xv, acc[r][m]);
            }}
    }}
    for (; k < K; k += 256) {{
        uint4 wv[ROWS];
#pragma unroll
        for (int r = 0; r < ROWS; ++r) wv[r] = __ldcs(reinterpret_cast<const uint4*>(wr[r] + k));
#pragma unroll
        for (int m = 0; m < M; ++m) {{
            const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + m * ldx + k));
#pragma unroll
            for (int r = 0; r < ROWS; ++r) acc[r][m] = dot8(wv[r], xv, acc[r][m]);
        }}
    }}
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) {{
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) acc[r][m] += __shfl_xor_sync(0xffffffffu, acc[r][m], o);
        }}
#if SWIGLU
#pragma unroll
    for (int m = 0; m < M; ++m)
        if (lane == m) {{
            const float g = ld(st(acc[0][m])), u = ld(st(acc[1][m]));
            y[m * ldy + n0] = st(g / (1.f + expf(-g)) * u);
        }}
#else
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m)
            if (lane == (r * M + m) % 32 && n0 + r < N) y[m * ldy + n0 + r] = st(acc[r][m]);
#endif
}}
"""


def gemv(m, swiglu=False, dtype="bfloat16"):
    """The GEMV module for ``m`` rows of x (1 <= m <= 8) of ``dtype`` (bfloat16 or float16);
    ``swiglu``: the gate/up variant."""
    if not 1 <= m <= 8:
        raise ValueError(f"ruda.runtime.kernels.gemv_cuda.gemv: m: expected 1 to 8 rows, got {m}")
    return head(dtype) + _GEMV.format(m=m, rows=ROWS, warps=WARPS, unroll=UNROLL,
                                      swiglu=int(bool(swiglu)), bf16=int(dtype == "bfloat16"))
