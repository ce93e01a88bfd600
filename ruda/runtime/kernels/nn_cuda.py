"""CUDA C sources of the fused ``ruda.nn`` kernels (pure code generation; no device access).

Every generator returns one self-contained module (NVRTC, no includes) for one configuration;
``T`` is the storage type, ``A`` the accumulation type (float for float32 and bfloat16, double
for float64).  bfloat16 is handled as raw ``unsigned short`` bits (widened exactly, rounded to
nearest even; NaN stays a quiet NaN of its sign), so no CUDA header is needed.

``rows(op, dtype, tpr, rpb, vpt, vec, has_w, has_b)``
    softmax / log_softmax / layer_norm / rms_norm over rows of ``n`` elements, the row held in
    registers: ``tpr`` threads per row (32: one warp per row, ``rpb`` rows per block; more: one
    block per row), each holding ``vpt`` units (a unit is a 16-byte vector when ``vec``, else one
    element).  Entry ``ruda_rows(x, w, b, y, rows, n, eps)``.
``rows_long(op, dtype, vec, has_w, has_b)``
    the same for rows too long for registers: 1024 threads per row, two passes over global
    memory (three for layer_norm: mean, then the centred sum of squares, exact).
``swiglu(dtype, vec)``, ``rope(dtype, cdtype, interleaved)``, ``top_k(dtype, kb)``,
``attention(dtype, d, dv, mask_kind, bm, bn)``, ``decode(dtype, d, dv, mask_kind)``,
``decode_merge(dtype)``: see each function.
"""
import numpy as np

OPS = {"softmax": 0, "log_softmax": 1, "layer_norm": 2, "rms_norm": 3}

# dtype name -> (storage C type, accumulation C type, to-A expression of v, to-T expression of a)
TYPES = {
    "float32": ("float", "float", "(v)", "(a)"),
    "float64": ("double", "double", "(v)", "(a)"),
    "bfloat16": ("unsigned short", "float", "bf2f(v)", "f2bf(a)"),
}
ITEMSIZE = {"float32": 4, "float64": 8, "bfloat16": 2}

_HEAD = r"""
typedef {t} T;
typedef {a} A;
__device__ __forceinline__ float bf2f(unsigned short h) {{ return __uint_as_float(((unsigned)h) << 16); }}
__device__ __forceinline__ unsigned short f2bf(float f) {{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}}
__device__ __forceinline__ A ld(T v) {{ return (A){lda}; }}
__device__ __forceinline__ T st(A a) {{ return (T){sta}; }}
#define VEC (16 / (int)sizeof(T))
union Pack {{ uint4 u; T v[16 / sizeof(T)]; }};
__device__ __forceinline__ A neg_inf() {{ return -(A)INFINITY; }}
"""


def head(dtype):
    t, a, lda, sta = TYPES[dtype]
    return _HEAD.format(t=t, a=a, lda=lda.replace("v", "v"), sta=sta)


# Warp / row reductions.  SH holds one slot per warp of every row of the block.
_REDUCE = r"""
struct Sum {{ __device__ static A op(A a, A b) {{ return a + b; }} }};
struct Max {{ __device__ static A op(A a, A b) {{ return a > b ? a : b; }} }};
template <class R> __device__ __forceinline__ A warp_reduce(A v) {{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = R::op(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}}
// all TPR threads of a row get the result; TPR > 32 means one row per block (RPB == 1)
template <class R> __device__ __forceinline__ A row_reduce(A v, A* sh) {{
    v = warp_reduce<R>(v);
    if (TPR > 32) {{
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        if (lane == 0) sh[warp] = v;
        __syncthreads();
        v = sh[0];
#pragma unroll
        for (int i = 1; i < TPR / 32; ++i) v = R::op(v, sh[i]);
        __syncthreads();
    }}
    return v;
}}
"""

_ROWS = r"""
#define TPR {tpr}
#define RPB {rpb}
#define VPT {vpt}
#define VECZ {vec}
#define OP {op}
#define HAS_W {has_w}
#define HAS_B {has_b}
#define UNIT (VECZ ? VEC : 1)
#define EPT (VPT * UNIT)
""" + _REDUCE + r"""
// element k of thread-slot u: index in the row
__device__ __forceinline__ int elem(int t, int u, int k) {{ return VECZ ? (u * TPR + t) * VEC + k : u * TPR + t; }}

extern "C" __global__ void __launch_bounds__(TPR * RPB)
ruda_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
          long long rows, int n, double eps) {{
    __shared__ A sh[32];
    const int t = threadIdx.x % TPR;
    const long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
    if (row >= rows) return;          // TPR == 32 here, or the whole block leaves together
    const T* xr = x + row * n;
    T* yr = y + row * n;
    A v[EPT];
#pragma unroll
    for (int u = 0; u < VPT; ++u) {{
        if (VECZ) {{
            Pack p;
            const int e = elem(t, u, 0);
            if (e < n) p.u = __ldcs(reinterpret_cast<const uint4*>(xr + e));
#pragma unroll
            for (int k = 0; k < UNIT; ++k) v[u * UNIT + k] = e < n ? ld(p.v[k]) : (A)0;
        }} else {{
            const int e = elem(t, u, 0);
            v[u] = e < n ? ld(__ldcs(xr + e)) : (A)0;
        }}
    }}
#if OP <= 1
    A m = neg_inf();
#pragma unroll
    for (int i = 0; i < EPT; ++i) if (elem(t, i / UNIT, i % UNIT) < n) m = v[i] > m ? v[i] : m;
    m = row_reduce<Max>(m, sh);
    const A mm = m == neg_inf() ? (A)0 : m;       // a row of -inf: exp(-inf) = 0, no NaN from inf - inf
    A s = 0;
#pragma unroll
    for (int i = 0; i < EPT; ++i) if (elem(t, i / UNIT, i % UNIT) < n) {{
        A ev = exp(v[i] - mm);
        s += ev;
        if (OP == 0) v[i] = ev;
    }}
    s = row_reduce<Sum>(s, sh);
#if OP == 0
    const A r = (A)1 / s;
#pragma unroll
    for (int i = 0; i < EPT; ++i) v[i] *= r;
#else
    const A ls = mm + log(s);
#pragma unroll
    for (int i = 0; i < EPT; ++i) v[i] -= ls;
#endif
#else
    A s = 0;
#if OP == 2
#pragma unroll
    for (int i = 0; i < EPT; ++i) s += v[i];
    const A mean = row_reduce<Sum>(s, sh) / (A)n;
    s = 0;
#pragma unroll
    for (int i = 0; i < EPT; ++i) if (elem(t, i / UNIT, i % UNIT) < n) {{ v[i] -= mean; s += v[i] * v[i]; }}
#else
#pragma unroll
    for (int i = 0; i < EPT; ++i) s += v[i] * v[i];
#endif
    const A rstd = (A)1 / sqrt(row_reduce<Sum>(s, sh) / (A)n + (A)eps);
#pragma unroll
    for (int i = 0; i < EPT; ++i) v[i] *= rstd;
#endif
#pragma unroll
    for (int u = 0; u < VPT; ++u) {{
        const int e = elem(t, u, 0);
        if (e >= n) continue;
        if (VECZ) {{
            Pack p;
#if OP >= 2 && (HAS_W || HAS_B)
            Pack pw, pb;
            if (HAS_W) pw.u = __ldg(reinterpret_cast<const uint4*>(w + e));
            if (HAS_B) pb.u = __ldg(reinterpret_cast<const uint4*>(b + e));
#endif
#pragma unroll
            for (int k = 0; k < UNIT; ++k) {{
                A o = v[u * UNIT + k];
#if OP >= 2 && HAS_W
                o *= ld(pw.v[k]);
#endif
#if OP >= 2 && HAS_B
                o += ld(pb.v[k]);
#endif
                p.v[k] = st(o);
            }}
            __stcs(reinterpret_cast<uint4*>(yr + e), p.u);
        }} else {{
            A o = v[u];
#if OP >= 2 && HAS_W
            o *= ld(w[e]);
#endif
#if OP >= 2 && HAS_B
            o += ld(b[e]);
#endif
            yr[e] = st(o);
        }}
    }}
}}
"""

# Rows longer than the register budget: 1024 threads per row, loops over global memory.
_ROWS_LONG = r"""
#define TPR 1024
#define OP {op}
#define HAS_W {has_w}
#define HAS_B {has_b}
""" + _REDUCE + r"""
extern "C" __global__ void __launch_bounds__(TPR)
ruda_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
          long long rows, int n, double eps) {{
    __shared__ A sh[32];
    const int t = threadIdx.x;
    const T* xr = x + (long long)blockIdx.x * n;
    T* yr = y + (long long)blockIdx.x * n;
#if OP <= 1
    A m = neg_inf(), s = 0;            // online max and sum of exp(x - m) of this thread's elements
    for (int e = t; e < n; e += TPR) {{
        const A xv = ld(xr[e]);
        if (xv > m) {{ s = (m == neg_inf() ? (A)0 : s * exp(m - xv)) + (A)1; m = xv; }}
        else if (xv != neg_inf()) s += exp(xv - m);
    }}
    const A rm = row_reduce<Max>(m, sh);
    const A mm = rm == neg_inf() ? (A)0 : rm;
    s = row_reduce<Sum>(m == neg_inf() ? (A)0 : s * exp(m - mm), sh);
    const A r = (A)1 / s, ls = mm + log(s);
    for (int e = t; e < n; e += TPR) {{
        const A xv = ld(xr[e]);
        yr[e] = st(OP == 0 ? exp(xv - mm) * r : xv - ls);
    }}
#else
    A s = 0, mean = 0;
#if OP == 2
    for (int e = t; e < n; e += TPR) s += ld(xr[e]);
    mean = row_reduce<Sum>(s, sh) / (A)n;
    s = 0;
#endif
    for (int e = t; e < n; e += TPR) {{ const A d = ld(xr[e]) - mean; s += d * d; }}
    const A rstd = (A)1 / sqrt(row_reduce<Sum>(s, sh) / (A)n + (A)eps);
    for (int e = t; e < n; e += TPR) {{
        A o = (ld(xr[e]) - mean) * rstd;
#if HAS_W
        o *= ld(w[e]);
#endif
#if HAS_B
        o += ld(b[e]);
#endif
        yr[e] = st(o);
    }}
#endif
}}
"""


def rows(op, dtype, tpr, rpb, vpt, vec, has_w=False, has_b=False):
    """Row kernel with the row in registers (see the module docstring)."""
    assert tpr % 32 == 0 and tpr <= 1024 and (tpr == 32 or rpb == 1)
    return head(dtype) + _ROWS.format(tpr=tpr, rpb=rpb, vpt=vpt, vec=int(vec), op=OPS[op],
                                      has_w=int(has_w), has_b=int(has_b))


def rows_long(op, dtype, has_w=False, has_b=False):
    """Row kernel for long rows (global-memory passes)."""
    return head(dtype) + _ROWS_LONG.format(op=OPS[op], has_w=int(has_w), has_b=int(has_b))


_SWIGLU = r"""
#define VECZ {vec}
__device__ __forceinline__ T f(T g, T u) {{ const A a = ld(g); return st(a / ((A)1 + exp(-a)) * ld(u)); }}
extern "C" __global__ void __launch_bounds__(256)
ruda_swiglu(const T* __restrict__ g, const T* __restrict__ u, T* __restrict__ y, long long n) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (VECZ) {{
        const long long nv = n / VEC;
        for (long long j = i; j < nv; j += stride) {{
            Pack pg, pu;
            pg.u = __ldcs(reinterpret_cast<const uint4*>(g) + j);
            pu.u = __ldcs(reinterpret_cast<const uint4*>(u) + j);
#pragma unroll
            for (int k = 0; k < VEC; ++k) pg.v[k] = f(pg.v[k], pu.v[k]);
            __stcs(reinterpret_cast<uint4*>(y) + j, pg.u);
        }}
        i += nv * VEC;
    }}
    for (; i < n; i += stride) y[i] = f(g[i], u[i]);
}}
"""


def swiglu(dtype, vec):
    """``y = silu(g) * u`` elementwise, grid-stride, 16-byte vectors when ``vec`` (n any: scalar tail)."""
    return head(dtype) + _SWIGLU.format(vec=int(vec))


_ROPE = r"""
typedef {ct} CT;
__device__ __forceinline__ A ldc(CT v) {{ return (A){ldc}; }}
#define INTERLEAVED {inter}
// x: (rows, T, D) contiguous; cos, sin: (T, R / 2); one thread per element of x
extern "C" __global__ void __launch_bounds__(256)
ruda_rope(const T* __restrict__ x, const CT* __restrict__ cs, const CT* __restrict__ sn, T* __restrict__ y,
          long long total, int tlen, int d, int r) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    const int half = r / 2;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {{
        const int c = (int)(i % d);
        if (c >= r) {{ y[i] = x[i]; continue; }}
        const int t = (int)((i / d) % tlen);
        int p, k; bool first;
        if (INTERLEAVED) {{ k = c >> 1; first = !(c & 1); p = c ^ 1; }}
        else {{ first = c < half; k = first ? c : c - half; p = first ? c + half : c - half; }}
        const A xv = ld(x[i]), xp = ld(x[i - c + p]);
        const A co = ldc(cs[(long long)t * half + k]), si = ldc(sn[(long long)t * half + k]);
        y[i] = st(first ? xv * co - xp * si : xv * co + xp * si);
    }}
}}
"""


def rope(dtype, cdtype, interleaved):
    """Rotary embedding over the last axis (first ``r`` features rotated, the rest copied)."""
    ct, _, ldc, _ = TYPES[cdtype]
    return head(dtype) + _ROPE.format(ct=ct, ldc=ldc, inter=int(interleaved))


_TOPK = r"""
#define KB {kb}
#define RPB 4
// NaN is largest (as torch.topk); equal values: the lower index first
__device__ __forceinline__ bool gt(A a, int ia, A b, int ib) {{
    const bool na = a != a, nb = b != b;
    if (na != nb) return na;
    if (!na && a != b) return a > b;
    return ia < ib;
}}
extern "C" __global__ void __launch_bounds__(32 * RPB)
ruda_top_k(const T* __restrict__ x, T* __restrict__ vals, long long* __restrict__ idx, long long rows, int n, int k) {{
    const int lane = threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * RPB + (threadIdx.x >> 5);
    if (row >= rows) return;
    const T* xr = x + row * n;
    A lv[KB]; int li[KB];                          // this lane's best KB, sorted, sentinel-filled
#pragma unroll
    for (int j = 0; j < KB; ++j) {{ lv[j] = neg_inf(); li[j] = 0x7fffffff; }}
    for (int e = lane; e < n; e += 32) {{
        const A v = ld(xr[e]);
        if (gt(v, e, lv[KB - 1], li[KB - 1])) {{
            lv[KB - 1] = v; li[KB - 1] = e;
#pragma unroll
            for (int j = KB - 1; j > 0; --j) if (gt(lv[j], li[j], lv[j - 1], li[j - 1])) {{
                const A tv = lv[j]; lv[j] = lv[j - 1]; lv[j - 1] = tv;
                const int ti = li[j]; li[j] = li[j - 1]; li[j - 1] = ti;
            }}
        }}
    }}
    for (int r = 0; r < k; ++r) {{                // k rounds of a warp arg-max over the list heads
        A bv = lv[0]; int bi = li[0];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {{
            const A ov = __shfl_xor_sync(0xffffffffu, bv, o);
            const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (gt(ov, oi, bv, bi)) {{ bv = ov; bi = oi; }}
        }}
        if (li[0] == bi) {{
#pragma unroll
            for (int j = 0; j < KB - 1; ++j) {{ lv[j] = lv[j + 1]; li[j] = li[j + 1]; }}
            lv[KB - 1] = neg_inf(); li[KB - 1] = 0x7fffffff;
        }}
        if (lane == 0) {{ vals[row * k + r] = xr[bi]; idx[row * k + r] = bi; }}
    }}
}}
"""


def top_k(dtype, kb):
    """Per-row top ``k <= kb`` (one warp per row; each lane keeps its best ``kb``, then k merge rounds)."""
    return head(dtype) + _TOPK.format(kb=kb)


# Attention: shared pieces.  Masked-out scores are -inf; a query whose keys are all masked gets 0.
# Causal is lower-right aligned: key j is kept for query i when j <= i + S - L; a sliding window
# W keeps only j > i + S - L - W.  MASK: 0 none, 1 bool (True keeps), 2 additive of type MT.
_ATT_HEAD = r"""
#define D {d}
#define DV {dv}
#define MASK {mask}
typedef {mt} MT;
__device__ __forceinline__ float ldm(MT v) {{ return (float){ldm}; }}
struct Att {{
    const T* q; const T* k; const T* v; const MT* mask; T* o;
    int Hq, Hkv, L, S;
    long long qs[3], ks[3], vs[3], ms[4], os[3];    // strides (elements) of b, h, row (mask: b, h, i, j)
    float scale2;                                   // scale * log2(e)
    int causal, window;                             // window <= 0: none
}};
// kernel parameters (flat: CuPy passes scalars and pointers) and the struct built from them
#define ATT_ARGS const T* __restrict__ q_, const T* __restrict__ k_, const T* __restrict__ v_, \
    const MT* __restrict__ m_, T* __restrict__ o_, int Hq, int Hkv, int L, int S, \
    long long q0, long long q1, long long q2, long long k0, long long k1, long long k2, \
    long long v0, long long v1, long long v2, long long m0, long long m1, long long m2, long long m3, \
    long long o0, long long o1, long long o2, float scale2, int causal, int window
#define ATT_INIT const Att p = {{q_, k_, v_, m_, o_, Hq, Hkv, L, S, {{q0, q1, q2}}, {{k0, k1, k2}}, \
    {{v0, v1, v2}}, {{m0, m1, m2, m3}}, {{o0, o1, o2}}, scale2, causal, window}}
// score (log2 domain) of key j for query i, given the raw dot product; -inf when masked
__device__ __forceinline__ float score(const Att& p, float dot, int b, int h, int i, int j) {{
    const int off = p.S - p.L;
    if (j >= p.S || (p.causal && j > i + off) || (p.window > 0 && j <= i + off - p.window)) return -INFINITY;
    float s = dot * p.scale2;
#if MASK == 1
    if (!p.mask[b * p.ms[0] + h * p.ms[1] + i * p.ms[2] + j * p.ms[3]]) return -INFINITY;
#elif MASK == 2
    s += ldm(p.mask[b * p.ms[0] + h * p.ms[1] + i * p.ms[2] + j * p.ms[3]]) * 1.4426950408889634f;
#endif
    return s;
}}
"""

# Tiled online-softmax attention on CUDA cores (float32 math): a block of BM threads, one query row
# each, streams BN-key tiles of K and V through shared memory; the query row lives in shared memory
# (stride D + 1: no bank conflicts), the output row in registers.
_ATT_TILE = r"""
#define BM {bm}
#define BN {bn}
extern "C" __global__ void __launch_bounds__(BM)
ruda_attention(ATT_ARGS) {{
    ATT_INIT;
    __shared__ float qs[BM * (D + 1)];
    __shared__ float ks[BN * D];
    __shared__ float vs[BN * DV];
    const int b = blockIdx.z, h = blockIdx.y, i0 = blockIdx.x * BM, t = threadIdx.x, i = i0 + t;
    const int hk = h / (p.Hq / p.Hkv);
    const T* q = p.q + b * p.qs[0] + h * p.qs[1];
    const T* kk = p.k + b * p.ks[0] + hk * p.ks[1];
    const T* vv = p.v + b * p.vs[0] + hk * p.vs[1];
    for (int e = t; e < BM * D; e += BM) {{
        const int r = e / D, c = e % D;
        qs[r * (D + 1) + c] = i0 + r < p.L ? ld(q[(i0 + r) * p.qs[2] + c]) : 0.f;
    }}
    const int off = p.S - p.L;
    int j_end = p.S, j_begin = 0;
    if (p.causal) j_end = min(p.S, i0 + BM + off);
    if (p.window > 0) j_begin = max(0, i0 + off - p.window + 1);
    j_begin = j_begin / BN * BN;
    float acc[DV];
#pragma unroll
    for (int c = 0; c < DV; ++c) acc[c] = 0.f;
    float m = -INFINITY, l = 0.f;
    for (int j0 = j_begin; j0 < j_end; j0 += BN) {{
        __syncthreads();
        for (int e = t; e < BN * D; e += BM) {{
            const int r = e / D, c = e % D;
            ks[e] = j0 + r < p.S ? ld(kk[(j0 + r) * p.ks[2] + c]) : 0.f;
        }}
        for (int e = t; e < BN * DV; e += BM) {{
            const int r = e / DV, c = e % DV;
            vs[e] = j0 + r < p.S ? ld(vv[(j0 + r) * p.vs[2] + c]) : 0.f;
        }}
        __syncthreads();
        float s[BN];
        float mt = m;
#pragma unroll
        for (int r = 0; r < BN; ++r) {{
            float dot = 0.f;
#pragma unroll 16
            for (int c = 0; c < D; ++c) dot += qs[t * (D + 1) + c] * ks[r * D + c];
            s[r] = i < p.L ? score(p, dot, b, h, i, j0 + r) : -INFINITY;
            mt = fmaxf(mt, s[r]);
        }}
        if (mt == -INFINITY) continue;
        const float corr = exp2f(m - mt);
        l *= corr;
#pragma unroll
        for (int c = 0; c < DV; ++c) acc[c] *= corr;
#pragma unroll
        for (int r = 0; r < BN; ++r) {{
            const float pr = exp2f(s[r] - mt);
            l += pr;
#pragma unroll
            for (int c = 0; c < DV; ++c) acc[c] += pr * vs[r * DV + c];
        }}
        m = mt;
    }}
    if (i < p.L) {{
        const float r = l > 0.f ? 1.f / l : 0.f;
        T* o = p.o + b * p.os[0] + h * p.os[1] + i * p.os[2];
#pragma unroll
        for (int c = 0; c < DV; ++c) o[c] = st(acc[c] * r);
    }}
}}
"""

# Decode (few queries, long S): split the keys over gridDim.x blocks of 4 warps; each warp takes
# every 4th key, lanes split the feature axis (D / 32 each), one shuffle reduction per key.  Each
# block writes its (max, sum, unnormalized output) to ``part``; ``ruda_decode_merge`` combines.
_DECODE = r"""
#define DC ((D + 31) / 32)
#define DVC ((DV + 31) / 32)
#define NW 4
extern "C" __global__ void __launch_bounds__(32 * NW)
ruda_decode(ATT_ARGS, float* __restrict__ part, int chunk) {{
    ATT_INIT;
    __shared__ float sm[NW], sl[NW], so[NW * DV];
    const int split = blockIdx.x, nsplit = gridDim.x;
    const int hi = blockIdx.y, h = hi / p.L, i = hi % p.L, b = blockIdx.z;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int hk = h / (p.Hq / p.Hkv);
    const T* q = p.q + b * p.qs[0] + h * p.qs[1] + i * p.qs[2];
    const T* kk = p.k + b * p.ks[0] + hk * p.ks[1];
    const T* vv = p.v + b * p.vs[0] + hk * p.vs[1];
    float qr[DC], acc[DVC];
#pragma unroll
    for (int c = 0; c < DC; ++c) qr[c] = lane + 32 * c < D ? ld(q[lane + 32 * c]) : 0.f;
#pragma unroll
    for (int c = 0; c < DVC; ++c) acc[c] = 0.f;
    float m = -INFINITY, l = 0.f;
    const int j_begin = split * chunk, j_end = min(p.S, j_begin + chunk);
    for (int j = j_begin + w; j < j_end; j += NW) {{
        const T* kr = kk + j * p.ks[2];
        float dot = 0.f;
#pragma unroll
        for (int c = 0; c < DC; ++c) if (lane + 32 * c < D) dot += qr[c] * ld(kr[lane + 32 * c]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const float s = score(p, dot, b, h, i, j);
        if (s == -INFINITY) continue;
        const float mn = fmaxf(m, s), corr = exp2f(m - mn), pr = exp2f(s - mn);
        l = l * corr + pr;
        const T* vr = vv + j * p.vs[2];
#pragma unroll
        for (int c = 0; c < DVC; ++c) acc[c] = acc[c] * corr + (lane + 32 * c < DV ? pr * ld(vr[lane + 32 * c]) : 0.f);
        m = mn;
    }}
    if (lane == 0) {{ sm[w] = m; sl[w] = l; }}
#pragma unroll
    for (int c = 0; c < DVC; ++c) if (lane + 32 * c < DV) so[w * DV + lane + 32 * c] = acc[c];
    __syncthreads();
    float M = sm[0];
    for (int x = 1; x < NW; ++x) M = fmaxf(M, sm[x]);
    float* out = part + ((long long)(b * gridDim.y + hi) * nsplit + split) * (DV + 2);
    for (int c = threadIdx.x; c < DV + 2; c += 32 * NW) {{
        float r = 0.f;
        if (c == 0) r = M;
        for (int x = 0; x < NW; ++x) {{
            const float f = sm[x] == -INFINITY ? 0.f : exp2f(sm[x] - M);
            if (c == 1) r += sl[x] * f;
            else if (c >= 2) r += so[x * DV + c - 2] * f;
        }}
        out[c] = r;
    }}
}}

// one block per (b, h, i) row: out = sum_s o_s 2^(m_s - M) / sum_s l_s 2^(m_s - M)
extern "C" __global__ void __launch_bounds__(128)
ruda_decode_merge(const float* __restrict__ part, T* __restrict__ o, int nsplit, int L, int Hq,
                  long long os0, long long os1, long long os2) {{
    const int row = blockIdx.x;                     // (b * Hq + h) * L + i
    const int i = row % L, h = (row / L) % Hq, b = row / (L * Hq);
    const float* pr = part + (long long)row * nsplit * (DV + 2);
    float M = -INFINITY;
    for (int s = 0; s < nsplit; ++s) M = fmaxf(M, pr[s * (DV + 2)]);
    float lsum = 0.f;
    for (int s = 0; s < nsplit; ++s) {{
        const float ms = pr[s * (DV + 2)];
        if (ms != -INFINITY) lsum += pr[s * (DV + 2) + 1] * exp2f(ms - M);
    }}
    const float r = lsum > 0.f ? 1.f / lsum : 0.f;
    for (int c = threadIdx.x; c < DV; c += blockDim.x) {{
        float acc = 0.f;
        for (int s = 0; s < nsplit; ++s) {{
            const float ms = pr[s * (DV + 2)];
            if (ms != -INFINITY) acc += pr[s * (DV + 2) + 2 + c] * exp2f(ms - M);
        }}
        o[b * os0 + h * os1 + i * os2 + c] = st(acc * r);
    }}
}}
"""

MASK_TYPES = {"float32": ("float", "(v)"), "float64": ("double", "(v)"), "bfloat16": ("unsigned short", "bf2f(v)")}


def _att_head(dtype, d, dv, mask, mdtype):
    mt, ldm = MASK_TYPES.get(mdtype, ("unsigned char", "(v)"))
    kind = 0 if mask is None else (1 if mask == "bool" else 2)
    return head(dtype) + _ATT_HEAD.format(d=d, dv=dv, mask=kind, mt=mt, ldm=ldm)


def attention(dtype, d, dv, mask=None, mdtype=None, bm=64, bn=16):
    """Tiled attention (``mask``: None, "bool" or "add" with mask dtype ``mdtype``).  Entry
    ``ruda_attention(ATT_ARGS)``; grid (ceil(L / bm), Hq, B), block bm."""
    return _att_head(dtype, d, dv, mask, mdtype) + _ATT_TILE.format(bm=bm, bn=bn)


def decode(dtype, d, dv, mask=None, mdtype=None):
    """Split-key decode attention and its merge: entries ``ruda_decode(ATT_ARGS, part, chunk)`` (grid
    (nsplit, Hq * L, B), block 128) and ``ruda_decode_merge`` (grid B * Hq * L, block 128)."""
    return _att_head(dtype, d, dv, mask, mdtype) + _DECODE


def kbucket(k):
    """The smallest list length (power of two, <= 32) holding ``k``, or None."""
    for kb in (1, 2, 4, 8, 16, 32):
        if k <= kb:
            return kb
    return None


def np_name(dtype):
    """Name used by these generators for a NumPy (or ml_dtypes) dtype, or None."""
    name = np.dtype(dtype).name
    return name if name in TYPES else None
