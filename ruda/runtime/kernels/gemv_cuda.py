"""CUDA C of the bfloat16 / float16 GEMV (pure code generation; no device access): ``y = x @
W.T`` for a few rows of ``x``, the shape of decoding, where cuBLAS's GEMM kernels leave
bandwidth unused and add a split-K reduction launch.

``gemv(m)``: entry ``ruda_gemv(x, ldx, w, ldw, y, ldy, N, K)`` for ``m`` rows of x (M, K), W
(N, K) row-major, y (M, N); 16-bit values in and out (``T`` and the conversions of
:func:`ruda.runtime.kernels.nn_cuda.head`), float32 accumulation, rounded to nearest even once.
Needs K % 8 == 0, row strides multiples of 8 elements and 16-byte aligned pointers.
A warp takes ``ROWS`` rows of W: each lane reads 16-byte vectors (8 values) of them,
``UNROLL`` vectors per row requested together (weights read once, evict-first), and the same
columns of the x rows through the read-only cache; shuffles reduce, one lane per output writes it.
Launch: grid ceil(N / (ROWS * WARPS)), block 32 * WARPS.

The entry also takes ``(g, eps, res, ldr)``, read only by the variants that use them:

``gemv(m, norm=True)``: x's rows replaced by ``rms_norm(x) * g`` over K (K <= 256 UNROLL), each
value rounded to the dtype exactly as ``nn_cuda.rows`` with one warp a row computes and rounds it
(same bits as the norm kernel followed by the plain GEMV); a block normalizes the rows once into
shared memory for its warps. ``gemv(m, residual=True)``: y = ``res +
x @ W.T`` (res (M, N), row stride ``ldr``), the product rounded first as the two calls round.

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
#define NORM {norm}
#define RES {res}
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

union Pack8 {{ uint4 u; T v[8]; }};

// UNROLL vectors of each row from column k, those past K predicated off (zeros): all requested
// at once, so a short row (K <= 256 UNROLL) costs one memory round trip
__device__ __forceinline__ void load_w(uint4 (&wv)[UNROLL][ROWS], const T* const (&wr)[ROWS], int k, int K) {{
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
            wv[u][r] = k + u * 256 < K ? __ldcs(reinterpret_cast<const uint4*>(wr[r] + k + u * 256))
                                       : make_uint4(0u, 0u, 0u, 0u);
}}

extern "C" __global__ void __launch_bounds__(32 * WARPS)
ruda_gemv(const T* __restrict__ x, long long ldx, const T* __restrict__ w, long long ldw,
          T* __restrict__ y, long long ldy, int N, int K,
          const T* __restrict__ g, float eps, const T* __restrict__ res, long long ldr) {{
    const int lane = threadIdx.x & 31;
    const T* wr[ROWS];
    // a warp past the last row stays for the block's barriers (NORM) but reads and writes nothing
#if SWIGLU
    const int n0 = blockIdx.x * WARPS + (threadIdx.x >> 5);     // gate row n0, up row n0 + N / 2
    const bool active = n0 < N / 2;
    wr[0] = w + (long long)min(n0, N / 2 - 1) * ldw;
    wr[1] = w + (long long)(min(n0, N / 2 - 1) + N / 2) * ldw;
#else
    const int n0 = (blockIdx.x * WARPS + (threadIdx.x >> 5)) * ROWS;
    const bool active = n0 < N;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) wr[r] = w + (long long)min(n0 + r, N - 1) * ldw;   // a row past N repeats the last, unwritten
#endif
#if !NORM
    if (!active) return;
#endif
    float acc[ROWS][M];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < M; ++m) acc[r][m] = 0.f;
    int k = lane * 8;
    uint4 wv[UNROLL][ROWS];
    if (active) load_w(wv, wr, k, K);
#if NORM
    // x's rows rms-normalized with weight g once per block into shared memory, rounded to T as
    // the rows kernel rounds them: a warp a row for the sum of squares (the rows kernel's
    // element order, fma chain and shuffle tree, so the same bits), then every thread scales
    // its share; the weights, x and g are all requested first.  K <= 256 UNROLL.
    __shared__ uint4 hs[M][UNROLL * 32];
    __shared__ float rs[M];
    constexpr int PER = (M * UNROLL * 32 + 32 * WARPS - 1) / (32 * WARPS);  // h chunks a thread
    const int kc = K / 8;
    Pack8 xh[PER], gh[PER];
#pragma unroll
    for (int c = 0; c < PER; ++c) {{
        const int idx = threadIdx.x + c * 32 * WARPS, m = idx / kc, e = (idx % kc) * 8;
        if (idx < M * kc) {{
            xh[c].u = __ldg(reinterpret_cast<const uint4*>(x + m * ldx + e));
            gh[c].u = __ldg(reinterpret_cast<const uint4*>(g + e));
        }}
    }}
#pragma unroll
    for (int m0 = 0; m0 < M; m0 += WARPS) {{
        const int m = m0 + (threadIdx.x >> 5);
        if (m < M) {{
            Pack8 p[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                if (k + u * 256 < K) p[u].u = __ldg(reinterpret_cast<const uint4*>(x + m * ldx + k + u * 256));
            float ss = 0.f;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u)
                if (k + u * 256 < K) {{
#pragma unroll
                    for (int i = 0; i < 8; ++i) {{ const float v = ld(p[u].v[i]); ss = fmaf(v, v, ss); }}
                }}
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) ss = ss + __shfl_xor_sync(0xffffffffu, ss, o);
            if (lane == 0) rs[m] = 1.f / sqrtf(ss / (float)K + eps);
        }}
    }}
    __syncthreads();
#pragma unroll
    for (int c = 0; c < PER; ++c) {{
        const int idx = threadIdx.x + c * 32 * WARPS, m = idx / kc;
        if (idx < M * kc) {{
            const float r = rs[m];
#pragma unroll
            for (int i = 0; i < 8; ++i) xh[c].v[i] = st(ld(xh[c].v[i]) * r * ld(gh[c].v[i]));
            hs[m][idx % kc] = xh[c].u;
        }}
    }}
    __syncthreads();
    if (!active) return;
#endif
    for (;;) {{
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            if (k + u * 256 < K) {{
#pragma unroll
                for (int m = 0; m < M; ++m) {{
#if NORM
                    const uint4 xv = hs[m][(k >> 3) + u * 32];
#else
                    const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + m * ldx + k + u * 256));
#endif
#pragma unroll
                    for (int r = 0; r < ROWS; ++r) acc[r][m] = dot8(wv[u][r], xv, acc[r][m]);
                }}
            }}
        k += UNROLL * 256;
        if (k >= K) break;
        load_w(wv, wr, k, K);
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
            if (lane == (r * M + m) % 32 && n0 + r < N) {{
#if RES                                 // res + the product, each rounded as the two calls round
                y[m * ldy + n0 + r] = st(ld(res[m * ldr + n0 + r]) + ld(st(acc[r][m])));
#else
                y[m * ldy + n0 + r] = st(acc[r][m]);
#endif
            }}
#endif
}}
"""


def gemv(m, swiglu=False, dtype="bfloat16", norm=False, residual=False):
    """The GEMV module for ``m`` rows of x (1 <= m <= 8) of ``dtype`` (bfloat16 or float16);
    ``swiglu``: the gate/up variant; ``norm``: x rms-normalized first; ``residual``: ``res +``
    the product (not with ``swiglu``)."""
    fn = "ruda.runtime.kernels.gemv_cuda.gemv"
    if not 1 <= m <= 8:
        raise ValueError(f"{fn}: m: expected 1 to 8 rows, got {m}")
    if swiglu and residual:
        raise ValueError(f"{fn}: residual: expected False with swiglu, got True")
    return head(dtype) + _GEMV.format(m=m, rows=ROWS, warps=WARPS, unroll=UNROLL,
                                      swiglu=int(bool(swiglu)), norm=int(bool(norm)),
                                      res=int(bool(residual)), bf16=int(dtype == "bfloat16"))
