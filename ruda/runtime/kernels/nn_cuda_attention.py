"""CUDA C sources of ``ruda.nn`` attention (pure code generation; no device access).

``attention(dtype, d, dv, mask, mdtype, bm, bn)``  tiled online softmax on CUDA cores (float32 math)
``attention_mma(d, mask, mdtype, ...)``           16-bit on tensor cores (mma.sync m16n8k16)
``decode(dtype, d, dv, mask, mdtype)``            split-key decode and its merge kernel
``decode_vec(dtype, d, group, mask, mdtype)``     the same with 16-byte loads, a kv head's group per block
Types and 16-bit conversions come from :mod:`ruda.runtime.kernels.nn_cuda`.
"""
from ruda.runtime.kernels.nn_cuda import head

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
    const MT* __restrict__ m_, T* __restrict__ o_, int Hq_, int Hkv_, int L_, int S_, \
    long long q0_, long long q1_, long long q2_, long long k0_, long long k1_, long long k2_, \
    long long v0_, long long v1_, long long v2_, long long m0_, long long m1_, long long m2_, long long m3_, \
    long long o0_, long long o1_, long long o2_, float scale2_, int causal_, int window_
#define ATT_INIT const Att p = {{q_, k_, v_, m_, o_, Hq_, Hkv_, L_, S_, {{q0_, q1_, q2_}}, {{k0_, k1_, k2_}}, \
    {{v0_, v1_, v2_}}, {{m0_, m1_, m2_, m3_}}, {{o0_, o1_, o2_}}, scale2_, causal_, window_}}
// the mask's term (log2 domain) of key j for query i of head h: 0 or -inf (bool), the value
// times log2(e) (additive); 0 without a mask.  A finite value stays finite (clamped to +-FLT_MAX):
// padding masks hold finfo.min, whose product would be -inf and drop the key, where torch adds it
// to the score (a row all finfo.min: equal scores, the mean of V); only -inf removes a key
__device__ __forceinline__ float mask_term(const Att& p, int b, int h, int i, int j) {{
#if MASK == 1
    return p.mask[b * p.ms[0] + h * p.ms[1] + i * p.ms[2] + j * p.ms[3]] ? 0.f : -INFINITY;
#elif MASK == 2
    const float x = ldm(p.mask[b * p.ms[0] + h * p.ms[1] + i * p.ms[2] + j * p.ms[3]]);
    const float t = x * 1.4426950408889634f;
    if (x == -INFINITY || x == INFINITY) return t;
    return t == -INFINITY ? -3.40282347e38f : (t == INFINITY ? 3.40282347e38f : t);
#else
    return 0.f;
#endif
}}
// score (log2 domain) of key j for query i, given the raw dot product and the mask's term; -inf
// when masked
__device__ __forceinline__ float score_with(const Att& p, float dot, int i, int j, float term) {{
    const int off = p.S - p.L;
    if (j >= p.S || (p.causal && j > i + off) || (p.window > 0 && j <= i + off - p.window)) return -INFINITY;
#if MASK == 1
    return term == 0.f ? dot * p.scale2 : -INFINITY;
#elif MASK == 2
    return dot * p.scale2 + term;
#else
    return dot * p.scale2;
#endif
}}
__device__ __forceinline__ float score(const Att& p, float dot, int b, int h, int i, int j) {{
    return score_with(p, dot, i, j, j < p.S ? mask_term(p, b, h, i, j) : 0.f);
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
        bool any = false;               // a key not masked out: NaN counts (fmaxf skips it in mt)
#pragma unroll
        for (int r = 0; r < BN; ++r) {{
            float dot = 0.f;
#pragma unroll 16
            for (int c = 0; c < D; ++c) dot += qs[t * (D + 1) + c] * ks[r * D + c];
            s[r] = i < p.L ? score(p, dot, b, h, i, j0 + r) : -INFINITY;
            mt = fmaxf(mt, s[r]);
            any = any || s[r] != -INFINITY;
        }}
        // skipped only when every key is masked out: a tile of NaN scores is not empty (its
        // weights, and corr where mt stays -inf, are NaN: the row is NaN, as torch's)
        if (!any) continue;
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
ruda_decode(ATT_ARGS, float* __restrict__ part, int chunk) {
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
    for (int j = j_begin + w; j < j_end; j += NW) {
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
    }
    if (lane == 0) { sm[w] = m; sl[w] = l; }
#pragma unroll
    for (int c = 0; c < DVC; ++c) if (lane + 32 * c < DV) so[w * DV + lane + 32 * c] = acc[c];
    __syncthreads();
    float M = sm[0];
    for (int x = 1; x < NW; ++x) M = fmaxf(M, sm[x]);
    float* out = part + ((long long)(b * gridDim.y + hi) * nsplit + split) * (DV + 2);
    for (int c = threadIdx.x; c < DV + 2; c += 32 * NW) {
        float r = 0.f;
        if (c == 0) r = M;
        for (int x = 0; x < NW; ++x) {
            const float f = sm[x] == -INFINITY ? 0.f : exp2f(sm[x] - M);
            if (c == 1) r += sl[x] * f;
            else if (c >= 2) r += so[x * DV + c - 2] * f;
        }
        out[c] = r;
    }
}

// one block per (b, h, i) row: out = sum_s o_s 2^(m_s - M) / sum_s l_s 2^(m_s - M).  A split
// with no key left has l_s == 0 and is skipped; one whose scores were all NaN has m_s == -inf
// and l_s NaN, and makes the row NaN (2^(m_s - M) is then 0 or NaN; NaN times either is NaN)
extern "C" __global__ void __launch_bounds__(128)
ruda_decode_merge(const float* __restrict__ part, T* __restrict__ o, int nsplit, int L, int Hq,
                  long long os0, long long os1, long long os2) {
    const int row = blockIdx.x;                     // (b * Hq + h) * L + i
    const int i = row % L, h = (row / L) % Hq, b = row / (L * Hq);
    const float* pr = part + (long long)row * nsplit * (DV + 2);
    float M = -INFINITY;
    for (int s = 0; s < nsplit; ++s) M = fmaxf(M, pr[s * (DV + 2)]);
    float lsum = 0.f;
    for (int s = 0; s < nsplit; ++s) {
        const float ls = pr[s * (DV + 2) + 1];
        if (ls != 0.f) lsum += ls * exp2f(pr[s * (DV + 2)] - M);
    }
    const float r = lsum > 0.f ? 1.f / lsum : 0.f;
    for (int c = threadIdx.x; c < DV; c += blockDim.x) {
        float acc = 0.f;
        for (int s = 0; s < nsplit; ++s) {
            if (pr[s * (DV + 2) + 1] != 0.f) acc += pr[s * (DV + 2) + 2 + c] * exp2f(pr[s * (DV + 2)] - M);
        }
        o[b * os0 + h * os1 + i * os2 + c] = st(acc * r);
    }
}
"""

# Decode with 16-byte loads, all G query heads of one kv head per block: each K/V row is read
# once for the group. LPK lanes hold one key's row (VEC elements each), a warp takes 32 / LPK keys
# per step; running (m, l, acc) per lane and head, merged across the warp's keys by shuffles and
# across the NWV warps through shared memory into the same partial layout as ruda_decode.
_DECODE_VEC = r"""
#define G {g}
#define NWV 8
#define LPK (D / VEC)
#define KPW (32 / LPK)
extern "C" __global__ void __launch_bounds__(32 * NWV)
ruda_decode_vec(ATT_ARGS, float* __restrict__ part, int chunk) {{
    ATT_INIT;
    __shared__ float sm[NWV][G], sl[NWV][G];
    __shared__ float so[NWV][G][DV];
    const int split = blockIdx.x, nsplit = gridDim.x;
    const int hk = blockIdx.y / p.L, i = blockIdx.y % p.L, b = blockIdx.z;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int sub = lane % LPK, grp = lane / LPK, e0 = sub * VEC;
    float qr[G][VEC], acc[G][VEC], m[G], l[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {{
        Pack u;
        u.u = *reinterpret_cast<const uint4*>(p.q + b * p.qs[0] + (hk * G + g) * p.qs[1] + i * p.qs[2] + e0);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {{ qr[g][e] = ld(u.v[e]); acc[g][e] = 0.f; }}
        m[g] = -INFINITY;
        l[g] = 0.f;
    }}
    const T* kk = p.k + b * p.ks[0] + hk * p.ks[1] + e0;
    const T* vv = p.v + b * p.vs[0] + hk * p.vs[1] + e0;
    const int j_begin = split * chunk, j_end = min(p.S, j_begin + chunk);
    // with a group (G > 1: arithmetic-bound), the next step's K and V rows are requested before
    // this step's arithmetic; one head keeps the registers low for more blocks in flight instead
    constexpr bool PF = G > 1;
    Pack ku, vu, kn, vn;
    float mt[G], mn[G];                 // the mask's terms of this step's key (and the next's)
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
    if (PF) {{
        const int j = j_begin + w * KPW + grp;
        kn.u = j < j_end ? *reinterpret_cast<const uint4*>(kk + j * p.ks[2]) : zero;
        vn.u = j < j_end ? *reinterpret_cast<const uint4*>(vv + j * p.vs[2]) : zero;
#pragma unroll
        for (int g = 0; g < G; ++g) mn[g] = j < j_end ? mask_term(p, b, hk * G + g, i, j) : 0.f;
    }}
    for (int j0 = j_begin + w * KPW; j0 < j_end; j0 += NWV * KPW) {{
        const int j = j0 + grp, jl = PF ? j + NWV * KPW : j;
        const bool valid = j < j_end;
        if (PF) {{
            ku = kn; vu = vn;
#pragma unroll
            for (int g = 0; g < G; ++g) mt[g] = mn[g];
        }}
        Pack& kl = PF ? kn : ku;
        Pack& vl = PF ? vn : vu;
        float (&ml)[G] = PF ? mn : mt;
        // K, V and the mask's terms requested together, one round trip a step
        kl.u = jl < j_end ? *reinterpret_cast<const uint4*>(kk + jl * p.ks[2]) : zero;
        vl.u = jl < j_end ? *reinterpret_cast<const uint4*>(vv + jl * p.vs[2]) : zero;
#pragma unroll
        for (int g = 0; g < G; ++g) ml[g] = jl < j_end ? mask_term(p, b, hk * G + g, i, jl) : 0.f;
        float s[G];
        bool any = false;
#pragma unroll
        for (int g = 0; g < G; ++g) {{
            float dot = 0.f;
#pragma unroll
            for (int e = 0; e < VEC; ++e) dot += qr[g][e] * ld(ku.v[e]);
#pragma unroll
            for (int o = LPK / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
            s[g] = valid ? score_with(p, dot, i, j, mt[g]) : -INFINITY;
            any = any || s[g] != -INFINITY;
        }}
        if (!any) continue;
#pragma unroll
        for (int g = 0; g < G; ++g) {{
            if (s[g] == -INFINITY) continue;
            const float mn = fmaxf(m[g], s[g]), corr = exp2f(m[g] - mn), pr = exp2f(s[g] - mn);
            l[g] = l[g] * corr + pr;
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[g][e] = acc[g][e] * corr + pr * ld(vu.v[e]);
            m[g] = mn;
        }}
    }}
#pragma unroll
    for (int g = 0; g < G; ++g) {{
#pragma unroll
        for (int off = LPK; off < 32; off <<= 1) {{
            const float mo = __shfl_xor_sync(0xffffffffu, m[g], off);
            const float lo = __shfl_xor_sync(0xffffffffu, l[g], off);
            const float mn = fmaxf(m[g], mo);
            const float ca = m[g] == -INFINITY ? 0.f : exp2f(m[g] - mn);
            const float cb = mo == -INFINITY ? 0.f : exp2f(mo - mn);
            l[g] = l[g] * ca + lo * cb;
#pragma unroll
            for (int e = 0; e < VEC; ++e) {{
                const float ao = __shfl_xor_sync(0xffffffffu, acc[g][e], off);
                acc[g][e] = acc[g][e] * ca + ao * cb;
            }}
            m[g] = mn;
        }}
        if (grp == 0) {{
#pragma unroll
            for (int e = 0; e < VEC; ++e) so[w][g][e0 + e] = acc[g][e];
            if (sub == 0) {{ sm[w][g] = m[g]; sl[w][g] = l[g]; }}
        }}
    }}
    __syncthreads();
    if (nsplit == 1) {{                 // one block holds every key: the output, no merge
        for (int x = threadIdx.x; x < G * DV; x += 32 * NWV) {{
            const int g = x / DV, c = x % DV;
            float M = sm[0][g];
            for (int u = 1; u < NWV; ++u) M = fmaxf(M, sm[u][g]);
            float ls = 0.f, acc = 0.f;
            for (int u = 0; u < NWV; ++u) {{
                const float f = sm[u][g] == -INFINITY ? 0.f : exp2f(sm[u][g] - M);
                ls += sl[u][g] * f;
                acc += so[u][g][c] * f;
            }}
            p.o[b * p.os[0] + (hk * G + g) * p.os[1] + i * p.os[2] + c] = st(acc * (ls > 0.f ? 1.f / ls : 0.f));
        }}
        return;
    }}
    for (int x = threadIdx.x; x < G * (DV + 2); x += 32 * NWV) {{
        const int g = x / (DV + 2), c = x % (DV + 2);
        float M = sm[0][g];
        for (int u = 1; u < NWV; ++u) M = fmaxf(M, sm[u][g]);
        float r = M;
        if (c > 0) {{
            r = 0.f;
            for (int u = 0; u < NWV; ++u) {{
                const float f = sm[u][g] == -INFINITY ? 0.f : exp2f(sm[u][g] - M);
                r += (c == 1 ? sl[u][g] : so[u][g][c - 2]) * f;
            }}
        }}
        const long long row = ((long long)b * p.Hq + hk * G + g) * p.L + i;
        part[(row * nsplit + split) * (DV + 2) + c] = r;
    }}
}}
"""

# bfloat16 / float16 attention on tensor cores (FlashAttention-2 style): a block of NW warps
# takes BM query rows of one (batch, head), 16 * MI rows a warp (each K or V fragment read from shared memory
# serves MI row tiles).  Q stays in shared memory; K and V tiles of BN keys follow it (rows
# padded by 16 bytes: conflict-free ldmatrix), loaded with cp.async so that V's tile arrives
# during S = Q K^T and the next K tile during the softmax and O += P V (mma.sync m16n8k16, 16-bit
# in, float32 accumulate); the online softmax runs on the accumulator fragments (a row is spread
# over the 4 lanes of a quad).  Causal: the grid's first blocks take the last (longest) query
# tiles, and a warp whose rows all precede a key tile skips it.  Dynamic shared memory:
# (BM + 2 BN) (D + 8) * 2 bytes.  Needs D == DV, a multiple of 16, rows 16-byte aligned.
_ATT_MMA = r"""
#define LD (D + 8)
#define NW (BM / (16 * MI))
#define NT (NW * 32)
__device__ __forceinline__ void ldsm4(unsigned* r, const void* p) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void ldsm4t(unsigned* r, const void* p) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void mma16816(float* c, const unsigned* a, unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.MMA_T.MMA_T.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.MMA_Tx2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// 2^x for the softmax weights (below 2^-126 they flush to 0: nothing next to the row's 1)
__device__ __forceinline__ float ex2(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
    return r;
}
// 16 bytes from global to shared memory without passing through registers; zeros when !ok
__device__ __forceinline__ void cp16(void* sm, const void* g, bool ok) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(sm);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(a), "l"(g), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
// starts loading rows [r0, r0 + R) of a (n, D) matrix with row stride rs into shared memory
// (rows >= n: zeros); cp_wait and __syncthreads make them visible
template <int R> __device__ __forceinline__ void load_rows(unsigned short* sm, const T* g, long long rs, int r0, int n) {
    constexpr int CPR = D / 8;                      // 16-byte chunks per row
#pragma unroll
    for (int c = threadIdx.x; c < R * CPR; c += NT) {
        const int r = c / CPR, k = (c % CPR) * 8;
        const bool ok = r0 + r < n;
        cp16(sm + r * LD + k, g + (ok ? r0 + r : 0) * rs + k, ok);
    }
    asm volatile("cp.async.commit_group;\n" ::);
}
#if MINB
extern "C" __global__ void __launch_bounds__(NT, MINB)
#else
extern "C" __global__ void __launch_bounds__(NT)
#endif
ruda_attention_mma(ATT_ARGS) {
    ATT_INIT;
    extern __shared__ __align__(16) unsigned short sm[];
    unsigned short* qs = sm;
    unsigned short* ks = sm + BM * LD;
    unsigned short* vs = ks + BN * LD;
    const int b = blockIdx.z, h = blockIdx.y;
    const int i0 = (p.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int wr = warp * 16 * MI, w0 = i0 + wr;    // the warp's first row: local, global
    const int hk = h / (p.Hq / p.Hkv);
    const T* kk = p.k + b * p.ks[0] + hk * p.ks[1];
    const T* vv = p.v + b * p.vs[0] + hk * p.vs[1];
    const int off = p.S - p.L;
    int j_end = p.S, j_begin = 0;
    if (p.causal) j_end = min(p.S, i0 + BM + off);
    if (p.window > 0) j_begin = max(0, i0 + off - p.window + 1) / BN * BN;
    load_rows<BM>(qs, p.q + b * p.qs[0] + h * p.qs[1], p.qs[2], i0, p.L);
    if (j_begin < j_end) load_rows<BN>(ks, kk, p.ks[2], j_begin, p.S);
    float o[MI][D / 8][4];
    float m[MI][2], l[MI][2];                       // rows g and g + 8 of each row tile
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n) o[mi][n][0] = o[mi][n][1] = o[mi][n][2] = o[mi][n][3] = 0.f;
        m[mi][0] = m[mi][1] = -INFINITY;
        l[mi][0] = l[mi][1] = 0.f;
    }
    for (int j0 = j_begin; j0 < j_end; j0 += BN) {
        cp_wait();
        __syncthreads();                            // K tile (and Q) in; every warp done with the last V
        load_rows<BN>(vs, vv, p.vs[2], j0, p.S);
        // a warp whose last row precedes every key of the tile (causal) or whose first row is
        // past the window of every key has nothing to add
        const bool busy = (!p.causal || j0 <= w0 + 16 * MI - 1 + off) &&
                          (p.window <= 0 || j0 + BN - 1 > w0 + off - p.window);
        float s[MI][BN / 8][4];
        if (busy) {
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int n = 0; n < BN / 8; ++n) s[mi][n][0] = s[mi][n][1] = s[mi][n][2] = s[mi][n][3] = 0.f;
#pragma unroll
            for (int kc = 0; kc < D / 16; ++kc) {
                unsigned a[MI][4];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
                    ldsm4(a[mi], qs + (wr + mi * 16 + (lane & 15)) * LD + kc * 16 + (lane >> 4) * 8);
#pragma unroll
                for (int n = 0; n < BN / 16; ++n) {
                    unsigned f[4];
                    ldsm4(f, ks + (n * 16 + (lane & 7) + ((lane >> 4) << 3)) * LD + kc * 16 + ((lane >> 3) & 1) * 8);
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) {
                        mma16816(s[mi][2 * n], a[mi], f[0], f[1]);
                        mma16816(s[mi][2 * n + 1], a[mi], f[2], f[3]);
                    }
                }
            }
            const bool edge = MASK != 0 || j0 + BN > p.S || (p.causal && j0 + BN - 1 > w0 + off) ||
                              (p.window > 0 && j0 <= w0 + 16 * MI - 1 + off - p.window);
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                const int ra = w0 + mi * 16 + g;
                float mx0 = m[mi][0], mx1 = m[mi][1];
#pragma unroll
                for (int n = 0; n < BN / 8; ++n) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int j = j0 + n * 8 + 2 * t + (e & 1), i = e < 2 ? ra : ra + 8;
                        float v = edge ? (i < p.L ? score(p, s[mi][n][e], b, h, i, j) : -INFINITY)
                                       : s[mi][n][e] * p.scale2;
                        s[mi][n][e] = v;
                        if (e < 2) mx0 = fmaxf(mx0, v); else mx1 = fmaxf(mx1, v);
                    }
                }
#pragma unroll
                for (int x = 1; x < 4; x <<= 1) {
                    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, x));
                    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, x));
                }
                const float u0 = mx0 == -INFINITY ? 0.f : mx0, u1 = mx1 == -INFINITY ? 0.f : mx1;
                const float c0 = ex2(m[mi][0] - u0), c1 = ex2(m[mi][1] - u1);
                m[mi][0] = mx0; m[mi][1] = mx1;
                float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
                for (int n = 0; n < BN / 8; ++n) {
                    s[mi][n][0] = ex2(s[mi][n][0] - u0); s[mi][n][1] = ex2(s[mi][n][1] - u0);
                    s[mi][n][2] = ex2(s[mi][n][2] - u1); s[mi][n][3] = ex2(s[mi][n][3] - u1);
                    sum0 += s[mi][n][0] + s[mi][n][1]; sum1 += s[mi][n][2] + s[mi][n][3];
                }
                l[mi][0] = l[mi][0] * c0 + sum0;       // quad-partial sums; reduced at the end
                l[mi][1] = l[mi][1] * c1 + sum1;
#pragma unroll
                for (int n = 0; n < D / 8; ++n) {
                    o[mi][n][0] *= c0; o[mi][n][1] *= c0; o[mi][n][2] *= c1; o[mi][n][3] *= c1;
                }
            }
        }
        cp_wait();
        __syncthreads();                            // V tile in; every warp done with K
        if (j0 + BN < j_end) load_rows<BN>(ks, kk, p.ks[2], j0 + BN, p.S);
        if (busy) {
#pragma unroll
            for (int kc = 0; kc < BN / 16; ++kc) {
                unsigned pa[MI][4];
#pragma unroll
                for (int mi = 0; mi < MI; ++mi) {
                    pa[mi][0] = pack2(s[mi][2 * kc][0], s[mi][2 * kc][1]);
                    pa[mi][1] = pack2(s[mi][2 * kc][2], s[mi][2 * kc][3]);
                    pa[mi][2] = pack2(s[mi][2 * kc + 1][0], s[mi][2 * kc + 1][1]);
                    pa[mi][3] = pack2(s[mi][2 * kc + 1][2], s[mi][2 * kc + 1][3]);
                }
#pragma unroll
                for (int n = 0; n < D / 16; ++n) {
                    unsigned f[4];
                    ldsm4t(f, vs + (kc * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + n * 16 + (lane >> 4) * 8);
#pragma unroll
                    for (int mi = 0; mi < MI; ++mi) {
                        mma16816(o[mi][2 * n], pa[mi], f[0], f[1]);
                        mma16816(o[mi][2 * n + 1], pa[mi], f[2], f[3]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi) {
        float l0 = l[mi][0], l1 = l[mi][1];
#pragma unroll
        for (int x = 1; x < 4; x <<= 1) {
            l0 += __shfl_xor_sync(0xffffffffu, l0, x);
            l1 += __shfl_xor_sync(0xffffffffu, l1, x);
        }
        const float r0 = l0 > 0.f ? 1.f / l0 : 0.f, r1 = l1 > 0.f ? 1.f / l1 : 0.f;
        const int ra = w0 + mi * 16 + g;
        T* oa = p.o + b * p.os[0] + h * p.os[1] + ra * p.os[2];
        T* ob = oa + 8 * p.os[2];
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
            const int c = n * 8 + 2 * t;
            if (ra < p.L) *reinterpret_cast<unsigned*>(oa + c) = pack2(o[mi][n][0] * r0, o[mi][n][1] * r0);
            if (ra + 8 < p.L) *reinterpret_cast<unsigned*>(ob + c) = pack2(o[mi][n][2] * r1, o[mi][n][3] * r1);
        }
    }
}
"""


MASK_TYPES = {"float32": ("float", "(v)"), "float64": ("double", "(v)"), "bfloat16": ("unsigned short", "bf2f(v)"),
              "float16": ("unsigned short", "h2f(v)")}


def _att_head(dtype, d, dv, mask, mdtype):
    mt, ldm = MASK_TYPES.get(mdtype, ("unsigned char", "(v)"))
    kind = 0 if mask is None else (1 if mask == "bool" else 2)
    return head(dtype) + _ATT_HEAD.format(d=d, dv=dv, mask=kind, mt=mt, ldm=ldm)


def attention(dtype, d, dv, mask=None, mdtype=None, bm=64, bn=16):
    """Tiled attention (``mask``: None, "bool" or "add" with mask dtype ``mdtype``).  Entry
    ``ruda_attention(ATT_ARGS)``; grid (ceil(L / bm), Hq, B), block bm."""
    return _att_head(dtype, d, dv, mask, mdtype) + _ATT_TILE.format(bm=bm, bn=bn)


def attention_mma(d, mask=None, mdtype=None, bm=64, mi=1, bn=64, minb=0, dtype="bfloat16"):
    """bfloat16 or float16 (``dtype``) tensor-core attention (D == DV, a multiple of 16, at most
    128) over tiles of ``bm`` query rows, ``16 * mi`` a warp, and ``bn`` keys (multiples of
    16), registers bounded for ``minb`` blocks a multiprocessor (0: the compiler's choice).
    Entry ``ruda_attention_mma(ATT_ARGS)``; grid (ceil(L / bm), Hq, B), block bm / mi * 2
    threads, dynamic shared memory :func:`attention_mma_smem` bytes."""
    defs = f"#define BM {bm}\n#define MI {mi}\n#define BN {bn}\n#define MINB {minb}\n"
    return _att_head(dtype, d, d, mask, mdtype) + defs + _ATT_MMA.replace("MMA_T", _MMA_TYPES[dtype])


_MMA_TYPES = {"bfloat16": "bf16", "float16": "f16"}


def attention_mma_smem(d, bm=64, bn=64):
    """Bytes of dynamic shared memory of :func:`attention_mma`: Q, a K and a V tile."""
    return (bm + 2 * bn) * (d + 8) * 2


def decode_vec(dtype, d, group, mask=None, mdtype=None):
    """Decode with 16-byte loads and the ``group`` query heads of a kv head in one block (D ==
    DV, D / VEC a power of two at most 32, rows 16-byte aligned): entry
    ``ruda_decode_vec(ATT_ARGS, part, chunk)``, grid (nsplit, Hkv * L, B), block 256; the
    partials are merged by :func:`decode`'s ``ruda_decode_merge`` (nsplit 1: the block writes
    the output itself and ``part`` is not read)."""
    return _att_head(dtype, d, d, mask, mdtype) + _DECODE_VEC.format(g=group)


def decode(dtype, d, dv, mask=None, mdtype=None):
    """Split-key decode attention and its merge: entries ``ruda_decode(ATT_ARGS, part, chunk)`` (grid
    (nsplit, Hq * L, B), block 128) and ``ruda_decode_merge`` (grid B * Hq * L, block 128)."""
    return _att_head(dtype, d, dv, mask, mdtype) + _DECODE
