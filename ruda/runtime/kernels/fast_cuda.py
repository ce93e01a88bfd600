"""CUDA C of the cuda backend's own vectorized kernels (pure code generation; no device access).

Ufuncs as data: ``BINARY`` maps an op name to a C expression of ``x`` and ``y``;
``source(kind, name, dtype, config)`` renders one kernel family -- "binary" (add, subtract,
multiply, divide of one shape), "sum" (a full float sum) or "arg" (argmax/argmin of rows) -- for
one dtype as CUDA C.  Kernels
are vectorized (16-byte loads and stores: 4 float32, 2 float64, 16 int8, ...), grid-stride loops
unrolled ``unroll`` times for memory-level parallelism; ``CONFIG`` holds the launch
configuration per kind.  ``ruda.backends.cuda._kernels`` compiles them (NVRTC, ``-ftz=false``)
and ``ruda.backends.cuda._fast`` routes the backend's ops to them.
"""
import numpy as np

# dtype -> (C type, unsigned C type used for integer arithmetic: wraps instead of signed overflow UB)
CTYPES = {
    np.dtype("float32"): ("float", None),
    np.dtype("float64"): ("double", None),
    np.dtype("int8"): ("signed char", "unsigned int"),
    np.dtype("uint8"): ("unsigned char", "unsigned int"),
    np.dtype("int16"): ("short", "unsigned int"),
    np.dtype("uint16"): ("unsigned short", "unsigned int"),
    np.dtype("int32"): ("int", "unsigned int"),
    np.dtype("uint32"): ("unsigned int", "unsigned int"),
    np.dtype("int64"): ("long long", "unsigned long long"),
    np.dtype("uint64"): ("unsigned long long", "unsigned long long"),
}
FLOATS = frozenset({np.dtype("float32"), np.dtype("float64")})

# op -> (C expression of x, y; dtypes it applies to)
BINARY = {
    "add": ("x + y", None),
    "subtract": ("x - y", None),
    "multiply": ("x * y", None),
    "divide": ("x / y", FLOATS),
}

# Launch configuration per kernel kind: the fastest of the ``bench/bench_cuda.py --tune`` sweep
# (unroll x blocks per SM x cache hints) on an H200; add is insensitive to it, sum is not.
CONFIG = {
    "binary": {"block": 256, "unroll": 1, "blocks_per_sm": 4, "load": "plain", "store": "stcs"},
    "sum": {"block": 256, "unroll": 4, "blocks_per_sm": 16, "load": "ldcs", "store": "plain"},
    "arg": {"block": 1024, "unroll": 4, "blocks_per_sm": 1, "load": "ldg", "store": "plain"},
}

_LOADS = {"plain": "(*(p))", "ldg": "__ldg(p)", "ldcs": "__ldcs(p)", "ldlu": "__ldlu(p)"}
_STORES = {"plain": "(*(p) = (v))", "stcs": "__stcs(p, v)", "stwt": "__stwt(p, v)"}

_PRELUDE = r"""
typedef {ctype} T;
#define VEC (16 / (int)sizeof(T))
#define UNROLL {unroll}
#define LOAD(p) {load}
#define STORE(p, v) {store}
union Pack {{ uint4 u; T v[16 / sizeof(T)]; }};
"""

_BINARY = r"""
__device__ __forceinline__ T op(T x, T y) {{ return {expr}; }}

extern "C" __global__ void __launch_bounds__({block})
ruda_{name}_vv(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, long long n) {{
    const long long nv = n / VEC;
    const uint4* __restrict__ a4 = reinterpret_cast<const uint4*>(a);
    const uint4* __restrict__ b4 = reinterpret_cast<const uint4*>(b);
    uint4* __restrict__ o4 = reinterpret_cast<uint4*>(out);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long i = tid;
    for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {{
        Pack pa[UNROLL], pb[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{ pa[u].u = LOAD(a4 + i + u * stride); pb[u].u = LOAD(b4 + i + u * stride); }}
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
#pragma unroll
            for (int k = 0; k < VEC; ++k) pa[u].v[k] = op(pa[u].v[k], pb[u].v[k]);
            STORE(o4 + i + u * stride, pa[u].u);
        }}
    }}
    for (; i < nv; i += stride) {{
        Pack pa, pb;
        pa.u = LOAD(a4 + i); pb.u = LOAD(b4 + i);
#pragma unroll
        for (int k = 0; k < VEC; ++k) pa.v[k] = op(pa.v[k], pb.v[k]);
        STORE(o4 + i, pa.u);
    }}
    const long long t = nv * VEC + tid;
    if (t < n) out[t] = op(a[t], b[t]);
}}

// one operand is a 0-d array (a scalar): SCALAR_FIRST says which
template <bool SCALAR_FIRST>
__device__ __forceinline__ void scalar_body(const T* __restrict__ a, T s, T* __restrict__ out, long long n) {{
    const long long nv = n / VEC;
    const uint4* __restrict__ a4 = reinterpret_cast<const uint4*>(a);
    uint4* __restrict__ o4 = reinterpret_cast<uint4*>(out);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long i = tid;
    for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {{
        Pack pa[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) pa[u].u = LOAD(a4 + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
#pragma unroll
            for (int k = 0; k < VEC; ++k) pa[u].v[k] = SCALAR_FIRST ? op(s, pa[u].v[k]) : op(pa[u].v[k], s);
            STORE(o4 + i + u * stride, pa[u].u);
        }}
    }}
    for (; i < nv; i += stride) {{
        Pack pa;
        pa.u = LOAD(a4 + i);
#pragma unroll
        for (int k = 0; k < VEC; ++k) pa.v[k] = SCALAR_FIRST ? op(s, pa.v[k]) : op(pa.v[k], s);
        STORE(o4 + i, pa.u);
    }}
    const long long t = nv * VEC + tid;
    if (t < n) out[t] = SCALAR_FIRST ? op(s, a[t]) : op(a[t], s);
}}

extern "C" __global__ void __launch_bounds__({block})
ruda_{name}_vs(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, long long n) {{
    scalar_body<false>(a, b[0], out, n);
}}

extern "C" __global__ void __launch_bounds__({block})
ruda_{name}_sv(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out, long long n) {{
    scalar_body<true>(b, a[0], out, n);
}}
"""

# Full sum: stage 1 gives one partial per block (accumulated in ACC), stage 2 sums the partials.
_SUM = r"""
typedef {acc} ACC;

__device__ __forceinline__ ACC block_sum(ACC v) {{
    __shared__ ACC warp_sums[32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x >> 5)) ? warp_sums[lane] : (ACC)0;
    if (warp == 0) {{
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    }}
    return v;
}}

extern "C" __global__ void __launch_bounds__({block})
ruda_sum_stage1(const T* __restrict__ x, long long n, ACC* __restrict__ partial) {{
    const long long nv = n / VEC;
    const uint4* __restrict__ x4 = reinterpret_cast<const uint4*>(x);
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    ACC acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0;
    long long i = tid;
    for (; i + (UNROLL - 1) * stride < nv; i += UNROLL * stride) {{
        Pack p[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) p[u].u = LOAD(x4 + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {{
#pragma unroll
            for (int k = 0; k < VEC; ++k) acc[u] += (ACC)p[u].v[k];
        }}
    }}
    for (; i < nv; i += stride) {{
        Pack p;
        p.u = LOAD(x4 + i);
#pragma unroll
        for (int k = 0; k < VEC; ++k) acc[0] += (ACC)p.v[k];
    }}
    const long long t = nv * VEC + tid;
    if (t < n) acc[0] += (ACC)x[t];
#pragma unroll
    for (int u = 1; u < UNROLL; ++u) acc[0] += acc[u];
    ACC s = block_sum(acc[0]);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}}

extern "C" __global__ void __launch_bounds__(1024)
ruda_sum_stage2(const ACC* __restrict__ partial, int m, T* __restrict__ out) {{
    ACC v = 0;
    for (int i = threadIdx.x; i < m; i += blockDim.x) v += partial[i];
    v = block_sum(v);
    if (threadIdx.x == 0) out[0] = (T)v;
}}
"""

SUM_ACC = {np.dtype("float32"): "double", np.dtype("float64"): "double"}

# argmax/argmin of each contiguous row of n elements: a block per row (grid = rows), each thread
# folds a strided share of the row, then warp shuffles and one warp.  NumPy's rule: the first
# NaN wins, else the first extreme.  Few long rows: ``_split`` (grid (nsplit, rows)) folds
# chunks of a row into (value, index) partials, ``_merge`` (a warp per row) folds those.
_ARG = r"""
__device__ __forceinline__ bool better(T va, long long ia, T vb, long long ib) {{
    const bool na = va != va, nb = vb != vb;
    if (na || nb) return na && (!nb || ia < ib);
    return va {cmp} vb || (va == vb && ia < ib);
}}

__device__ __forceinline__ void warp_best(T& v, long long& i) {{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {{
        const T vo = __shfl_down_sync(0xffffffffu, v, o);
        const long long io = __shfl_down_sync(0xffffffffu, i, o);
        if (better(vo, io, v, i)) {{ v = vo; i = io; }}
    }}
}}

// the block's best (value, index) of row[lo, hi) (lo < hi), in thread 0
__device__ __forceinline__ void block_best(const T* __restrict__ row, long long lo, long long hi, T& v, long long& i) {{
    __shared__ T sv[32];
    __shared__ long long si[32];
    v = row[lo];
    i = lo;
#pragma unroll {unroll}
    for (long long j = lo + threadIdx.x; j < hi; j += blockDim.x) {{
        const T u = LOAD(row + j);
        if (better(u, j, v, i)) {{ v = u; i = j; }}
    }}
    warp_best(v, i);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {{ sv[warp] = v; si[warp] = i; }}
    __syncthreads();
    if (warp == 0) {{
        v = sv[0]; i = si[0];
        if (lane < (blockDim.x >> 5)) {{ v = sv[lane]; i = si[lane]; }}
        warp_best(v, i);
    }}
}}

extern "C" __global__ void __launch_bounds__({block})
ruda_{name}_rows(const T* __restrict__ x, long long n, long long* __restrict__ out) {{
    T v;
    long long i;
    block_best(x + (long long)blockIdx.x * n, 0, n, v, i);
    if (threadIdx.x == 0) out[blockIdx.x] = i;
}}

extern "C" __global__ void __launch_bounds__({block})
ruda_{name}_split(const T* __restrict__ x, long long n, long long chunk, T* __restrict__ pv,
                  long long* __restrict__ pi) {{
    const long long lo = blockIdx.x * chunk, hi = min(n, lo + chunk);
    T v;
    long long i;
    block_best(x + (long long)blockIdx.y * n, lo, hi, v, i);
    if (threadIdx.x == 0) {{ pv[blockIdx.y * gridDim.x + blockIdx.x] = v; pi[blockIdx.y * gridDim.x + blockIdx.x] = i; }}
}}

extern "C" __global__ void __launch_bounds__(32)
ruda_{name}_merge(const T* __restrict__ pv, const long long* __restrict__ pi, int nsplit,
                  long long* __restrict__ out) {{
    const T* rv = pv + (long long)blockIdx.x * nsplit;
    const long long* ri = pi + (long long)blockIdx.x * nsplit;
    T v = rv[0];
    long long i = ri[0];
    for (int s = threadIdx.x; s < nsplit; s += 32)
        if (better(rv[s], ri[s], v, i)) {{ v = rv[s]; i = ri[s]; }}
    warp_best(v, i);
    if (threadIdx.x == 0) out[blockIdx.x] = i;
}}
"""


def _expr(expr, dtype):
    ctype, utype = CTYPES[dtype]
    if utype is None:
        return expr
    return f"(T)(({utype})x {expr[2]} ({utype})y)"  # "x + y" -> wrapped unsigned arithmetic


def source(kind, name, dtype, config=None):
    """CUDA C of one kernel family: ``kind`` is "binary" (op ``name``), "sum" or "arg" (``name``
    argmax or argmin)."""
    if kind not in CONFIG:
        raise ValueError(f"ruda.runtime.kernels.fast_cuda.source: unknown kind {kind!r}")
    cfg = dict(CONFIG[kind], **(config or {}))
    ctype = CTYPES[dtype][0]
    head = _PRELUDE.format(ctype=ctype, unroll=cfg["unroll"], load=_LOADS[cfg["load"]],
                           store=_STORES[cfg["store"]])
    if kind == "binary":
        return head + _BINARY.format(name=name, expr=_expr(BINARY[name][0], dtype), block=cfg["block"])
    if kind == "arg":
        return head + _ARG.format(name=name, cmp=">" if name == "argmax" else "<", block=cfg["block"],
                                  unroll=cfg["unroll"])
    return head + _SUM.format(acc=SUM_ACC[dtype], block=cfg["block"])


def supports_binary(name, dtype):
    entry = BINARY.get(name)
    return entry is not None and dtype in CTYPES and (entry[1] is None or dtype in entry[1])
