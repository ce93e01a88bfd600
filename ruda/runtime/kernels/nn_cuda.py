"""CUDA C sources of the fused ``ruda.nn`` kernels (pure code generation; no device access).

Every generator returns one self-contained module (NVRTC, no includes) for one configuration;
``T`` is the storage type, ``A`` the accumulation type (float for float32, bfloat16 and
float16, double for float64).  bfloat16 and float16 are handled as raw ``unsigned short`` bits
(widened exactly, rounded to nearest even; NaN stays a quiet NaN of its sign), so no CUDA
header is needed.

``rows(op, dtype, tpr, rpb, vpt, vec, has_w, has_b, has_r)``
    softmax / log_softmax / layer_norm / rms_norm over rows of ``n`` elements, the row held in
    registers: ``tpr`` threads per row (8 or 16: rows sharing a warp; 32: one warp per row;
    ``rpb`` rows per block; more: one block per row), each holding ``vpt`` units (a unit is a 16-byte vector when ``vec``, else one
    element).  Entry ``ruda_rows(x, w, b, y, rows, n, eps)``; ``has_r`` adds ``(res, sum)``:
    the row is ``sum = x + res`` (rounded to the dtype, then normalized), a residual add fused in.
``rows_long(op, dtype, vec, has_w, has_b)``
    the same for rows too long for registers: 1024 threads per row, two passes over global
    memory (three for layer_norm: mean, then the centred sum of squares, exact).
``swiglu(dtype, vec)``, ``rope(dtype, cdtype, interleaved)``, ``rope_kv(dtype, cdtype)``,
``top_k(dtype, kb)``, ``activation(dtype, name, vec)`` (the elementwise kernel of one of
``ACTIVATIONS``' bodies): see each function; attention is in
:mod:`ruda.runtime.kernels.nn_cuda_attention`.
"""
import numpy as np

OPS = {"softmax": 0, "log_softmax": 1, "layer_norm": 2, "rms_norm": 3}

# dtype name -> (storage C type, accumulation C type, to-A expression of v, to-T expression of a)
TYPES = {
    "float32": ("float", "float", "(v)", "(a)"),
    "float64": ("double", "double", "(v)", "(a)"),
    "bfloat16": ("unsigned short", "float", "bf2f(v)", "f2bf(a)"),
    "float16": ("unsigned short", "float", "h2f(v)", "f2h(a)"),
}
ITEMSIZE = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2}

_HEAD = r"""
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)   // NVRTC has no <math.h>
#endif
typedef {t} T;
typedef {a} A;
__device__ __forceinline__ float bf2f(unsigned short h) {{ return __uint_as_float(((unsigned)h) << 16); }}
__device__ __forceinline__ unsigned short f2bf(float f) {{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}}
// float16 bits: the GPU's conversions; the same in integer code elsewhere (host emulation)
__device__ __forceinline__ float h2f(unsigned short h) {{
#ifdef __CUDA_ARCH__
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    const unsigned s = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return __uint_as_float(s | 0x7f800000u | (m << 13));
    if (e) return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));
    const float f = (float)m * 5.9604644775390625e-08f;           // subnormal: m * 2^-24
    return s ? -f : f;
#endif
}}
__device__ __forceinline__ unsigned short f2h(float f) {{          // rounded to nearest even
#ifdef __CUDA_ARCH__
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    const unsigned u = __float_as_uint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned short)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);     // from 65520: infinity
    if (a >= 0x38800000u) return (unsigned short)(s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13));
    if (a < 0x33000000u) return (unsigned short)s;                  // up to 2^-25: zero
    const unsigned sh = 126u - (a >> 23), mant = (a & 0x7fffffu) | 0x800000u;
    unsigned q = mant >> sh;
    const unsigned rem = mant & ((1u << sh) - 1u), half = 1u << (sh - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (unsigned short)(s | q);
#endif
}}
__device__ __forceinline__ A ld(T v) {{ return (A){lda}; }}
__device__ __forceinline__ T st(A a) {{ return (T){sta}; }}
#define VEC (16 / (int)sizeof(T))
union Pack {{ uint4 u; T v[16 / sizeof(T)]; }};
__device__ __forceinline__ A neg_inf() {{ return -(A)INFINITY; }}
"""


def head(dtype):
    t, a, lda, sta = TYPES[dtype]
    return _HEAD.format(t=t, a=a, lda=lda, sta=sta)


# Warp / row reductions.  SH holds one slot per warp of every row of the block.
_REDUCE = r"""
struct Sum {{ __device__ static A op(A a, A b) {{ return a + b; }} }};
struct Max {{ __device__ static A op(A a, A b) {{ return a > b ? a : b; }} }};
// over the TPR lanes of a row where TPR < 32 (aligned groups: the xor stays inside them)
template <class R> __device__ __forceinline__ A warp_reduce(A v) {{
#pragma unroll
    for (int o = (TPR < 32 ? TPR : 32) / 2; o > 0; o >>= 1) v = R::op(v, __shfl_xor_sync(0xffffffffu, v, o));
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
#define HAS_R {has_r}
#define UNIT (VECZ ? VEC : 1)
#define EPT (VPT * UNIT)
""" + _REDUCE + r"""
// element k of thread-slot u: index in the row
__device__ __forceinline__ int elem(int t, int u, int k) {{ return VECZ ? (u * TPR + t) * VEC + k : u * TPR + t; }}

#if HAS_R
#define RES_ARGS , const T* __restrict__ res, T* __restrict__ sum
#else
#define RES_ARGS
#endif
// HAS_R: the row is x + res, rounded to T as a separate add would, and also written to sum
extern "C" __global__ void __launch_bounds__(TPR * RPB)
ruda_rows(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
          long long rows, int n, double eps RES_ARGS) {{
    __shared__ A sh[32];
    const int t = threadIdx.x % TPR;
    long long row = (long long)blockIdx.x * RPB + threadIdx.x / TPR;
    // past the last row: TPR >= 32 leaves (a whole warp, or the whole block); a smaller row
    // group shares its warp's shuffles, so it redoes the last row and stores nothing
    const bool live = row < rows;
    if (!live && TPR >= 32) return;
    if (!live) row = rows - 1;
    const T* xr = x + row * n;
    T* yr = y + row * n;
    A v[EPT];
#if OP >= 2 && (HAS_W || HAS_B)
    // the affine vectors requested with the row, not after its reduction: one round trip less
    Pack pw[VECZ ? VPT : 1], pb[VECZ ? VPT : 1];
#pragma unroll
    for (int u = 0; u < (VECZ ? VPT : 0); ++u) {{
        const int e = elem(t, u, 0);
        if (HAS_W && e < n) pw[u].u = __ldg(reinterpret_cast<const uint4*>(w + e));
        if (HAS_B && e < n) pb[u].u = __ldg(reinterpret_cast<const uint4*>(b + e));
    }}
#endif
#pragma unroll
    for (int u = 0; u < VPT; ++u) {{
        if (VECZ) {{
            Pack p;
            const int e = elem(t, u, 0);
            if (e < n) p.u = __ldcs(reinterpret_cast<const uint4*>(xr + e));
#if HAS_R
            if (e < n) {{
                Pack pr;
                pr.u = __ldcs(reinterpret_cast<const uint4*>(res + row * n + e));
#pragma unroll
                for (int k = 0; k < UNIT; ++k) p.v[k] = st(ld(p.v[k]) + ld(pr.v[k]));
                if (live) *reinterpret_cast<uint4*>(sum + row * n + e) = p.u;
            }}
#endif
#pragma unroll
            for (int k = 0; k < UNIT; ++k) v[u * UNIT + k] = e < n ? ld(p.v[k]) : (A)0;
        }} else {{
            const int e = elem(t, u, 0);
            v[u] = e < n ? ld(__ldcs(xr + e)) : (A)0;
#if HAS_R
            if (e < n) {{
                const T sv = st(v[u] + ld(__ldcs(res + row * n + e)));
                if (live) sum[row * n + e] = sv;
                v[u] = ld(sv);
            }}
#endif
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
    const A ls = log(s);         // (x - max) - log(sum), as torch: x - (max + log(sum)) rounds at max's size
#pragma unroll
    for (int i = 0; i < EPT; ++i) v[i] = (v[i] - mm) - ls;
#endif
#else
    A s = 0;
#if OP == 2
    // sums of x - x[0]: a constant row centres to exact zeros (the rounded mean of x is an ulp off,
    // which eps 1e-12 blew up to +-1), and a large mean does not cancel
#if HAS_R
    const A k0 = ld(st(ld(xr[0]) + ld(res[row * n])));
#else
    const A k0 = ld(xr[0]);
#endif
#pragma unroll
    for (int i = 0; i < EPT; ++i) if (elem(t, i / UNIT, i % UNIT) < n) {{ v[i] -= k0; s += v[i]; }}
    const A mean = row_reduce<Sum>(s, sh) / (A)n;
    s = 0;
#pragma unroll
    for (int i = 0; i < EPT; ++i) if (elem(t, i / UNIT, i % UNIT) < n) {{ v[i] -= mean; s += v[i] * v[i]; }}
#else
#pragma unroll
    for (int i = 0; i < EPT; ++i) s = fma(v[i], v[i], s);    // the fused GEMV's order (gemv_cuda)
#endif
    const A rstd = (A)1 / sqrt(row_reduce<Sum>(s, sh) / (A)n + (A)eps);
#pragma unroll
    for (int i = 0; i < EPT; ++i) v[i] *= rstd;
#endif
#pragma unroll
    for (int u = 0; u < VPT; ++u) {{
        const int e = elem(t, u, 0);
        if (e >= n || !live) continue;
        if (VECZ) {{
            Pack p;
#pragma unroll
            for (int k = 0; k < UNIT; ++k) {{
                A o = v[u * UNIT + k];
#if OP >= 2 && HAS_W
                o *= ld(pw[u].v[k]);
#endif
#if OP >= 2 && HAS_B
                o += ld(pb[u].v[k]);
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
        // while m is -inf, s is 0 or NaN (a NaN met first): kept, so the row's sum is NaN
        if (xv > m) {{ s = (m == neg_inf() ? s : s * exp(m - xv)) + (A)1; m = xv; }}
        else if (xv != neg_inf()) s += exp(xv - m);
    }}
    const A rm = row_reduce<Max>(m, sh);
    const A mm = rm == neg_inf() ? (A)0 : rm;
    s = row_reduce<Sum>(m == neg_inf() ? s : s * exp(m - mm), sh);
    const A r = (A)1 / s, ls = log(s);
    for (int e = t; e < n; e += TPR) {{
        const A xv = ld(xr[e]);
        yr[e] = st(OP == 0 ? exp(xv - mm) * r : (xv - mm) - ls);
    }}
#else
    A s = 0, mean = 0;
    const A k0 = OP == 2 ? ld(xr[0]) : (A)0;       // layer_norm: sums of x - x[0], as above
#if OP == 2
    for (int e = t; e < n; e += TPR) s += ld(xr[e]) - k0;
    mean = row_reduce<Sum>(s, sh) / (A)n;
    s = 0;
#endif
    for (int e = t; e < n; e += TPR) {{ const A d = (ld(xr[e]) - k0) - mean; s += d * d; }}
    const A rstd = (A)1 / sqrt(row_reduce<Sum>(s, sh) / (A)n + (A)eps);
    for (int e = t; e < n; e += TPR) {{
        A o = ((ld(xr[e]) - k0) - mean) * rstd;
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


def rows(op, dtype, tpr, rpb, vpt, vec, has_w=False, has_b=False, has_r=False):
    """Row kernel with the row in registers (see the module docstring)."""
    assert tpr in (8, 16) or (tpr % 32 == 0 and tpr <= 1024 and (tpr == 32 or rpb == 1))
    return head(dtype) + _ROWS.format(tpr=tpr, rpb=rpb, vpt=vpt, vec=int(vec), op=OPS[op],
                                      has_w=int(has_w), has_b=int(has_b), has_r=int(has_r))


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
// x: (B, H, T, D) at element strides (sb, sh, ts), the last axis contiguous (a permuted view of
// a fused projection is read in place); y: the same shape, contiguous; cos, sin: (T, R / 2); one
// thread per element of y
extern "C" __global__ void __launch_bounds__(256)
ruda_rope(const T* __restrict__ x, const CT* __restrict__ cs, const CT* __restrict__ sn, T* __restrict__ y,
          long long total, int tlen, int d, int r, int heads, long long sb, long long sh, long long ts) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    const int half = r / 2;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {{
        const int c = (int)(i % d);
        const long long row = i / d / tlen;                 // b * heads + h
        const int t = (int)((i / d) % tlen);
        const long long xi = row / heads * sb + row % heads * sh + t * ts + c;
        if (c >= r) {{ y[i] = x[xi]; continue; }}
        int p, k; bool first;
        if (INTERLEAVED) {{ k = c >> 1; first = !(c & 1); p = c ^ 1; }}
        else {{ first = c < half; k = first ? c : c - half; p = first ? c + half : c - half; }}
        const A xv = ld(x[xi]), xp = ld(x[xi - c + p]);
        const A co = ldc(cs[(long long)t * half + k]), si = ldc(sn[(long long)t * half + k]);
        y[i] = st(first ? xv * co - xp * si : xv * co + xp * si);
    }}
}}
"""


def rope(dtype, cdtype, interleaved):
    """Rotary embedding over the last axis (first ``r`` features rotated, the rest copied)."""
    ct, _, ldc, _ = TYPES[cdtype]
    return head(dtype) + _ROPE.format(ct=ct, ldc=ldc, inter=int(interleaved))


_ROPE_KV = r"""
typedef {ct} CT;
__device__ __forceinline__ A ldc(CT v) {{ return (A){ldc}; }}
// One decode step from a fused projection: qkv rows (B, (HQ + 2 HK) * D) at row stride ldq; q
// and k heads rotated (half-split pairs, cos/sin (D / 2) of one position), q written to
// q (B, HQ, D), k and v to the caches (B, HK, T, D) at row pos[0].  One thread per element.
extern "C" __global__ void __launch_bounds__(256)
ruda_rope_kv(const T* __restrict__ qkv, long long ldq, const CT* __restrict__ cs, const CT* __restrict__ sn,
             const int* __restrict__ pos, T* __restrict__ q, T* __restrict__ kc, T* __restrict__ vc,
             int nb, int hq, int hk, int d, int tlen) {{
    const int width = (hq + 2 * hk) * d, half = d / 2;
    const long long total = (long long)nb * width, p = pos[0];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {{
        const int b = (int)(i / width), e = (int)(i % width), h = e / d, c = e % d;
        const T* row = qkv + b * ldq;
        if (h >= hq + hk) {{
            vc[(((long long)b * hk + h - hq - hk) * tlen + p) * d + c] = row[e];
            continue;
        }}
        const bool first = c < half;
        const int k = first ? c : c - half;
        const A xv = ld(row[e]), xp = ld(row[e + (first ? half : -half)]);
        const A co = ldc(cs[k]), si = ldc(sn[k]);
        const T out = st(first ? xv * co - xp * si : xv * co + xp * si);
        if (h < hq) q[((long long)b * hq + h) * d + c] = out;
        else kc[(((long long)b * hk + h - hq) * tlen + p) * d + c] = out;
    }}
}}
"""


def rope_kv(dtype, cdtype):
    """A decode step's rotary embedding and cache write from a fused q/k/v projection (see the
    source): q and k rotated as :func:`rope` rotates them, v copied."""
    ct, _, ldc, _ = TYPES[cdtype]
    return head(dtype) + _ROPE_KV.format(ct=ct, ldc=ldc)


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


# The body of each ``activation`` (over ``T x`` with double parameters p1, p2 giving ``T y``; T is
# the compute type), in CUDA's math library (erf, expm1, log1p, tanh: within 2 ulp). NaN
# propagates: comparisons are written so that a NaN x takes the arithmetic branch.
ACTIVATIONS = {
    "leaky_relu": "y = x > (T)0 ? x : (T)p1 * x",
    "elu": "y = x > (T)0 ? x : (T)p1 * expm1(x)",
    "gelu": "y = (T)0.5 * x * ((T)1 + erf(x * (T)0.7071067811865476))",
    # (1 + tanh(u)) / 2 = sigmoid(2 u): no cancellation for x < 0
    "gelu_tanh": "y = x / ((T)1 + exp((T)-1.5957691216057308 * x * ((T)1 + (T)0.044715 * x * x)))",
    "silu": "y = x / ((T)1 + exp(-x))",
    "sigmoid": "y = (T)1 / ((T)1 + exp(-x))",
    # log1p(exp(bx)) overflowed past bx = 88.7 below the threshold: max(bx, 0) + log1p(exp(-|bx|))
    "softplus": "const T bx = (T)p1 * x; y = bx > (T)p2 ? x : (fmax(bx, (T)0) + log1p(exp(-fabs(bx)))) / (T)p1",
    "hardsigmoid": "y = x <= (T)-3 ? (T)0 : (x >= (T)3 ? (T)1 : (x + (T)3) / (T)6)",
    "hardswish": "y = x * (fmin(fmax(x + (T)3, (T)0), (T)6) / (T)6)",   # -inf: NaN, -4: -0, as torch
    "relu6": "y = x < (T)0 ? (T)0 : (x > (T)6 ? (T)6 : x)",          # -0 stays -0, as torch
    "erf": "y = erf(x)",
}


_ACTIVATION = r"""
#define VECZ {vec}
__device__ __forceinline__ A act(A x, double p1, double p2) {{
    typedef A T;        // the bodies compute in T: float32 for bfloat16
    T y;
    {body};
    return y;
}}
extern "C" __global__ void __launch_bounds__(256)
ruda_activation(const T* __restrict__ x, T* __restrict__ y, long long n, double p1, double p2) {{
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (VECZ) {{
        const long long nv = n / VEC;
        for (long long j = i; j < nv; j += stride) {{
            Pack p;
            p.u = __ldcs(reinterpret_cast<const uint4*>(x) + j);
#pragma unroll
            for (int k = 0; k < VEC; ++k) p.v[k] = st(act(ld(p.v[k]), p1, p2));
            __stcs(reinterpret_cast<uint4*>(y) + j, p.u);
        }}
        i += nv * VEC;
    }}
    for (; i < n; i += stride) y[i] = st(act(ld(x[i]), p1, p2));
}}
"""


_AFFINE = r"""
extern "C" __global__ void __launch_bounds__(256)
ruda_channel_affine(const T* __restrict__ x, const A* __restrict__ scale,
                    const A* __restrict__ shift, T* __restrict__ y, long long total, int C, int L) {
    const I stride = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)total; i += stride) {
        const int c = (int)((i / L) % C);
        y[i] = st(ld(x[i]) * scale[c] + shift[c]);
    }
}
"""


_BATCH_NORM = r"""
extern "C" __global__ void __launch_bounds__(256)
ruda_batch_norm(const T* __restrict__ x, const A* __restrict__ mean, const A* __restrict__ var,
                const A* __restrict__ w, const A* __restrict__ b, T* __restrict__ y, int rows,
                int C, int L, A eps) {
    for (int r = blockIdx.y; r < rows; r += gridDim.y) {       // r = n * C + c
        const int c = r % C;
        const A sd = sqrt(var[c] + eps);
        const A s = w ? w[c] / sd : (A)1 / sd;
        const A m = mean[c] * s;
        const A h = b ? b[c] - m : -m;
        const T* xr = x + (long long)r * L;
        T* yr = y + (long long)r * L;
        for (int l = blockIdx.x * blockDim.x + threadIdx.x; l < L; l += gridDim.x * blockDim.x)
            yr[l] = st(ld(xr[l]) * s + h);
    }
}
"""


def batch_norm(dtype):
    """Inference batch_norm over x ``(N, C, L)``: per row (n, c) ``scale = w / sqrt(var + eps)``
    (``1 / sqrt`` without w), ``shift = b - mean * scale`` (``-mean * scale`` without b), then
    ``x * scale + shift``, as ruda.nn composes it, in one launch (composed, each (C,) op is a
    launch of its own); mean, var, w, b in A, w and b may be null. Entry ``ruda_batch_norm(x,
    mean, var, w, b, y, rows, C, L, eps)`` on a 2-d grid: y over the rows, x over a row."""
    return head(dtype) + _BATCH_NORM


def index_type(wide):
    """``I``, a grid-stride kernel's element index: 32 bits (its divisions cost several times
    less than 64-bit ones) unless ``wide`` (see ``WIDE``)."""
    return "typedef long long I;\n" if wide else "typedef int I;\n"


WIDE = 1 << 30          # elements from which a kernel takes 64-bit indices (room for the stride)


def channel_affine(dtype, wide=False):
    """``y = x * scale[c] + shift[c]`` over x ``(N, C, L)`` (scale, shift in A), grid-stride;
    entry ``ruda_channel_affine(x, scale, shift, y, total, C, L)``; ``index_type(wide)``."""
    return head(dtype) + index_type(wide) + _AFFINE


def activation(dtype, name, vec):
    """``y = f(x)`` elementwise for ``f`` = ``ACTIVATIONS[name]``, grid-stride, 16-byte vectors
    when ``vec`` (scalar tail); entry ``ruda_activation(x, y, n, p1, p2)``."""
    return head(dtype) + _ACTIVATION.format(vec=int(vec), body=ACTIVATIONS[name])
