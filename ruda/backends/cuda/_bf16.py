"""bfloat16 on the cuda backend: storage in CuPy, values computed by ruda, ml_dtypes' semantics.

bfloat16 is an extension dtype (``ml_dtypes.bfloat16``, as on the host).  A cuda bfloat16 array
is a plain ``cupy.ndarray`` whose dtype is ``ml_dtypes.bfloat16``: a view (``.view(bfloat16)``,
which CuPy allows for any dtype of the same itemsize) of uint16 storage holding the bits.  So the
frontend's ``Array.dtype`` and every view work unchanged, and nothing here needs CuPy's own
bfloat16 support: transfers (``from_host``/``to_host``) and scalars copy the bits as uint16.
Only DLPack (kDLBfloat, CuPy's exporter and importer) needs a CuPy that knows bfloat16 (CuPy >= 14
with ml_dtypes and NumPy >= 2.1.2).  :func:`unavailable_reason` says why bfloat16 is not offered
(no ml_dtypes); then moving a bfloat16 array to cuda raises TypeError.

CuPy's own bfloat16 *loops* are never used: it compiles every kernel with ``-ftz=true`` and
rounds float64 to bfloat16 twice (through float32), and its batched matmul accumulates in
bfloat16.  Instead every backend op that receives a bfloat16 operand goes to one of four routes
(:mod:`ruda.backends.cuda._bf16_routes`); this module holds the conversions, creation,
products and kernels those routes call.

Promotion is the frontend's (``ruda._dtypes.promote``), the same on every device: bfloat16
with float32 / float64 / complex64 / complex128 gives those; with bool, int8, uint8 and Python
int / float scalars it stays bfloat16; with int16 / uint16 it gives float32 and with wider
integers float64 (NumPy's rule over ml_dtypes: the integers must fit).

Conversion kernels are compiled with ruda's NVRTC options (``_kernels.OPTIONS``: IEEE
subnormals), so bfloat16 subnormals survive ``astype``.  The backend imports this module once
CuPy imports; it also imports without CuPy (the tests compile ``SOURCE`` for the host with g++).
"""
import math

import numpy as np

from ruda import _dtypes
from ruda.backends import arange_length

try:
    import cupy as cp
except Exception:  # noqa: BLE001 - no CuPy: nothing here is called but SOURCE and ROUTES are read
    cp = None

BF16 = _dtypes.bfloat16          # None without ml_dtypes: then guard() changes nothing
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
U16 = np.dtype(np.uint16)
_ndarray = cp.ndarray if cp is not None else type("_NoCupyArray", (), {})

# cudaDataType_t / cublasComputeType_t / cublasGemmAlgo_t / cublasOperation_t / pointer mode
CUDA_R_16BF = 14
CUDA_R_16F = 2
F16 = np.dtype(np.float16)
CUDA_R_32F, CUDA_R_64F = 0, 1
CUBLAS_COMPUTE_32F = 68
CUBLAS_COMPUTE_32F_FAST_TF32 = 77
CUBLAS_COMPUTE_64F = 70
CUBLAS_GEMM_DEFAULT = -1
OP_N, OP_T = 0, 1
POINTER_MODE_HOST = 0
_ONE = np.array(1.0, np.float32)      # alpha, beta: host scalars of the compute type (float)
_ZERO = np.array(0.0, np.float32)

_reason = None
_probed = False


def unavailable_reason():
    """None when CuPy can hold bfloat16 arrays here; else why not (one line)."""
    global _reason, _probed
    if not _probed:
        if BF16 is None:
            _reason = "ml_dtypes is not installed (pip install ruda[bf16])"
        elif cp is None:
            _reason = "CuPy is not installed"
        else:
            try:
                if cp.ndarray((0,), dtype=U16).view(BF16).dtype is not BF16:
                    _reason = f"CuPy {cp.__version__} does not keep the bfloat16 dtype of a view"
            except Exception as e:  # noqa: BLE001 - a CuPy that refuses the view
                _reason = f"CuPy {cp.__version__} cannot view uint16 as bfloat16 ({type(e).__name__}: {e})"
        _probed = True
    return _reason


def extension_dtypes():
    """The extension dtypes the cuda backend lists: (bfloat16,) where CuPy can hold it."""
    return (BF16,) if unavailable_reason() is None else ()


# ---------------------------------------------------------------------------------------
# conversion kernels (NVRTC through _kernels.compile_source: -ftz=false)

_PRELUDE = r"""
typedef unsigned short bf16_t;
#define GRID_LOOP for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; \
                       i += (long long)gridDim.x * blockDim.x)

__device__ __forceinline__ float bf2f(bf16_t b) { return __uint_as_float(((unsigned int)b) << 16); }

// float32 -> bfloat16, round to nearest even; NaN -> quiet NaN of the same sign (ml_dtypes)
__device__ __forceinline__ bf16_t f2bf(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16_t)(((u >> 16) & 0x8000u) | 0x7fc0u);
    return (bf16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// f is x rounded toward zero to float32: round to odd, then to bfloat16 (one correct rounding
// of x, since float32 keeps 16 more bits than bfloat16)
__device__ __forceinline__ bf16_t odd2bf(float f, bool inexact) {
    if (inexact) f = __uint_as_float(__float_as_uint(f) | 1u);
    return f2bf(f);
}

extern "C" __global__ void ruda_bf16_from_f32(const float* __restrict__ x, bf16_t* __restrict__ y, long long n) {
    GRID_LOOP { y[i] = f2bf(x[i]); }
}

extern "C" __global__ void ruda_bf16_from_f64(const double* __restrict__ x, bf16_t* __restrict__ y, long long n) {
    GRID_LOOP {
        double d = x[i];
        if (isnan(d)) { y[i] = signbit(d) ? (bf16_t)0xffc0u : (bf16_t)0x7fc0u; continue; }
        float f = __double2float_rz(d);
        y[i] = odd2bf(f, (double)f != d);
    }
}

extern "C" __global__ void ruda_bf16_from_i64(const long long* __restrict__ x, bf16_t* __restrict__ y, long long n) {
    GRID_LOOP {
        long long v = x[i];
        float f = __ll2float_rz(v);               // |f| <= |v|: converting back cannot overflow
        y[i] = odd2bf(f, (long long)f != v);
    }
}

extern "C" __global__ void ruda_bf16_from_u64(const unsigned long long* __restrict__ x, bf16_t* __restrict__ y,
                                              long long n) {
    GRID_LOOP {
        unsigned long long v = x[i];
        float f = __ull2float_rz(v);
        y[i] = odd2bf(f, (unsigned long long)f != v);
    }
}

// ml_dtypes' nextafter on bit patterns (x, y contiguous, same shape)
extern "C" __global__ void ruda_bf16_nextafter(const bf16_t* __restrict__ x, const bf16_t* __restrict__ y,
                                               bf16_t* __restrict__ out, long long n) {
    GRID_LOOP {
        bf16_t a = x[i], b = y[i];
        float fa = bf2f(a), fb = bf2f(b);
        bf16_t r;
        if (isnan(fa) || isnan(fb)) r = (bf16_t)0x7fc0u;
        else if (a == b) r = b;
        else if (fa == 0.0f) r = (fb == 0.0f) ? b : (bf16_t)((b & 0x8000u) | 1u);
        else {
            unsigned int sa = a & 0x8000u, sb = b & 0x8000u, ma = a & 0x7fffu, mb = b & 0x7fffu;
            r = (bf16_t)(a + ((ma > mb || sa != sb) ? 0xffffu : 1u));
        }
        out[i] = r;
    }
}

// x op y in float32, rounded once (ml_dtypes' arithmetic); sx, sy: 1, or 0 for a 0-d operand
#define RUDA_BF16_BINARY(NAME, EXPR) \
extern "C" __global__ void ruda_bf16_##NAME(const bf16_t* __restrict__ x, const bf16_t* __restrict__ y, \
                                           bf16_t* __restrict__ out, long long n, long long sx, long long sy) { \
    GRID_LOOP { float a = bf2f(x[i * sx]), b = bf2f(y[i * sy]); out[i] = f2bf(EXPR); } \
}
RUDA_BF16_BINARY(add, a + b)
RUDA_BF16_BINARY(subtract, a - b)
RUDA_BF16_BINARY(multiply, a * b)
RUDA_BF16_BINARY(divide, a / b)

extern "C" __global__ void ruda_bf16_to_f32(const bf16_t* __restrict__ x, float* __restrict__ y, long long n) {
    GRID_LOOP { y[i] = bf2f(x[i]); }
}

extern "C" __global__ void ruda_bf16_to_f64(const bf16_t* __restrict__ x, double* __restrict__ y, long long n) {
    GRID_LOOP { y[i] = (double)bf2f(x[i]); }
}
"""

# bfloat16 -> integer: truncate; NaN, infinities and values whose truncation is out of range give
# 0, as ml_dtypes does (the standard leaves those unspecified)
_TO_INT = r"""
extern "C" __global__ void ruda_bf16_to_{name}(const bf16_t* __restrict__ x, {ctype}* __restrict__ y, long long n) {{
    GRID_LOOP {{
        float t = truncf(bf2f(x[i]));
        y[i] = (t >= {lo}f && t < {hi}f) ? ({ctype})t : ({ctype})0;
    }}
}}
"""
_INTS = {np.dtype(d): c for d, c in (
    ("int8", "signed char"), ("int16", "short"), ("int32", "int"), ("int64", "long long"),
    ("uint8", "unsigned char"), ("uint16", "unsigned short"), ("uint32", "unsigned int"),
    ("uint64", "unsigned long long"))}


def _int_bounds(dt):
    bits = dt.itemsize * 8
    if dt.kind == "i":
        return -(2 ** (bits - 1)), 2 ** (bits - 1)
    return 0, 2 ** bits


SOURCE = _PRELUDE + "".join(
    _TO_INT.format(name=dt.name, ctype=c, lo=f"{_int_bounds(dt)[0]:.1f}", hi=f"{_int_bounds(dt)[1]:.1f}")
    for dt, c in _INTS.items())

_BLOCK = 256
_GRID_MAX = 8192
_functions = {}


def _launch(name, *arrays, extra=()):
    """Run kernel ``name`` over contiguous arrays (inputs, then the output, whose size is n), then
    n, then the int64 scalars ``extra``."""
    out = arrays[-1]
    n = out.size
    if n:
        dev = cp.cuda.runtime.getDevice()
        fn = _functions.get((name, dev))
        if fn is None:
            from ruda.backends.cuda import _kernels
            fn = _functions[(name, dev)] = _kernels.compile_source(SOURCE).get_function(name)
        grid = min(-(-n // _BLOCK), _GRID_MAX)
        fn((grid,), (_BLOCK,), (*arrays, np.int64(n), *[np.int64(e) for e in extra]))
    return out


def bits(x):
    """The uint16 view of a bfloat16 array (same memory)."""
    return x.view(U16)


def _contiguous_bits(x):
    return cp.ascontiguousarray(x.view(U16))


def as_bf16(u):
    """The bfloat16 view of a uint16 array (same memory)."""
    return u.view(BF16)


def to_f32(x):
    """bfloat16 -> float32 (exact), a new contiguous array."""
    return _launch("ruda_bf16_to_f32", _contiguous_bits(x), cp.empty(x.shape, F32))


def from_f32(f):
    """float32 -> bfloat16 (round to nearest even, as ml_dtypes), a new contiguous array."""
    return as_bf16(_launch("ruda_bf16_from_f32", cp.ascontiguousarray(f), cp.empty(f.shape, U16)))


def astype(x, dtype, copy=True):
    """``x.astype(dtype)`` where x or dtype is bfloat16; bit-exact with ml_dtypes."""
    src, dst = x.dtype, np.dtype(dtype)
    if src == dst:
        return as_bf16(bits(x).copy()) if copy else x
    shape = x.shape
    if dst == BF16:
        k = src.kind
        if k == "c":                 # as NumPy/ml_dtypes: the real part
            x, src, k = x.real, _dtypes.real_of(src), "f"
        if src == F32:
            return from_f32(x)
        if src == F64:
            name, x = "ruda_bf16_from_f64", cp.ascontiguousarray(x)
        elif k == "u":
            name, x = "ruda_bf16_from_u64", cp.ascontiguousarray(x, dtype=np.uint64)
        elif k in "ib":
            name, x = "ruda_bf16_from_i64", cp.ascontiguousarray(x, dtype=np.int64)
        else:
            raise TypeError(f"ruda: astype: cannot cast {_dtypes.name(src)} to bfloat16 on cuda")
        return as_bf16(_launch(name, x, cp.empty(shape, U16)))
    # from bfloat16
    if dst == F32:
        return to_f32(x)
    if dst == F64:
        return _launch("ruda_bf16_to_f64", _contiguous_bits(x), cp.empty(x.shape, F64))
    if dst.kind == "b":
        return (bits(x) & 0x7FFF) != 0                   # NaN is True, -0.0 is False
    if dst in _INTS:
        return _launch(f"ruda_bf16_to_{dst.name}", _contiguous_bits(x), cp.empty(x.shape, dst))
    if dst.kind == "c":
        wide = F64 if dst.itemsize == 16 else F32
        return astype(x, wide).astype(dst)               # real part exact, imaginary part 0
    raise TypeError(f"ruda: astype: cannot cast bfloat16 to {_dtypes.name(dst)} on cuda")


# ---------------------------------------------------------------------------------------
# creation

def _bf16_bits(value):
    """The bit pattern of ``value`` rounded to bfloat16 by ml_dtypes (on the host)."""
    return int(np.asarray(value, dtype=BF16).view(np.uint16))


def scalar(value):
    """A 0-d bfloat16 array of ``value`` (ml_dtypes' rounding; -0.0 and NaN kept), synchronous."""
    s = cp.empty((), U16)
    s.set(np.asarray(value, dtype=BF16).view(np.uint16))
    return as_bf16(s)


def empty(shape, dtype):
    return as_bf16(cp.empty(shape, U16))


def full(shape, fill_value, dtype):
    return as_bf16(cp.full(shape, _bf16_bits(fill_value), dtype=U16))


def eye(n_rows, n_cols, k, dtype):
    return as_bf16(cp.eye(n_rows, n_cols, k=k, dtype=U16) * np.uint16(_bf16_bits(1.0)))


def arange(start, stop, step, dtype):
    """As NumPy's arange with ml_dtypes' fill: the first two values are start and start + step
    rounded to bfloat16; value i is ``first + i * (second - first)`` in float32, rounded."""
    n = arange_length(start, stop, step)
    first, second = _bf16_bits(start), _bf16_bits(start + step)
    f0 = np.float32(np.asarray(first, np.uint16).view(BF16))
    f1 = np.float32(np.asarray(second, np.uint16).view(BF16))
    delta = np.float32(f1 - f0)
    vals = cp.arange(n, dtype=F32)
    vals *= delta
    vals += f0
    out = from_f32(vals)
    u = bits(out)
    if n > 0:
        u[0] = first
    if n > 1:
        u[1] = second
    return out


def linspace(start, stop, num, dtype, endpoint):
    """In float64 (as NumPy), then rounded once to bfloat16."""
    return astype(cp.linspace(start, stop, num, dtype=F64, endpoint=endpoint), BF16)


# ---------------------------------------------------------------------------------------
# matmul, tensordot, vecdot

def _layout(r, c, sr, sc):
    """(cuBLAS op, ld) that reads the row-major r x c matrix with element strides (sr, sc) as the
    column-major matrix it is stored as (op N: its transpose; op T: itself), or None."""
    if (sc == 1 or c == 1) and (r == 1 or sr >= c):
        return OP_N, (sr if r > 1 else c)
    if (sr == 1 or r == 1) and (c == 1 or sc >= r):
        return OP_T, (sc if c > 1 else r)
    return None


def _operand(x, batch, r, c):
    """(array, op, ld, batch stride in elements) of a GEMM operand of shape ``... r c`` broadcast
    to ``batch``; copies only a layout cuBLAS cannot read.  The caller keeps the returned array
    alive until the GEMM is enqueued (it may be a fresh copy)."""
    dt = x.dtype
    if math.prod(x.shape[:-2]) == 1:
        x3, stride_ok = bits(x).reshape(1, r, c).view(dt), True
    else:
        u = bits(x)
        if x.shape[:-2] != batch:
            u = cp.broadcast_to(u, batch + (r, c))
        x3 = u.reshape(-1, r, c).view(dt)             # a view where the batch dims merge
        stride_ok = x3.strides[0] >= 0
    sb, sr, sc = (s // 2 for s in x3.strides)
    lay = _layout(r, c, sr, sc) if stride_ok and x3.strides[1] % 2 == 0 and x3.strides[2] % 2 == 0 else None
    if lay is None:
        x3 = _contiguous_bits(x3).view(dt)
        sb, lay = r * c, (OP_N, c)
    if x3.shape[0] == 1:
        sb = 0
    return x3, lay[0], lay[1], sb


def _ptr(a):
    return a.data.ptr


def _gemm(a, b, batch, n, k, m):
    """bfloat16 or float16 (a's dtype) (batch..., n, m) = a (..., n, k) @ b (..., k, m), fp32
    accumulation in cuBLAS (for a few rows, ruda's GEMV)."""
    from ruda.backends.cuda import _gemv
    dt = a.dtype
    nb = math.prod(batch)
    if not (nb and n and m and k):
        return cp.zeros(batch + (n, m), U16).view(dt)       # empty, or k == 0: zeros
    a3, opa, lda, sa = _operand(a, batch, n, k)
    b3, opb, ldb, sb = _operand(b, batch, k, m)
    if nb == 1 and _gemv.ENABLED:                           # a few rows: ruda's GEMV
        y = _gemv.gemv(a3, b3, n, k, m, dtype=_GEMM16[dt][0])
        if y is not None:
            return y.reshape(batch + (n, m)).view(dt)
    out = cp.empty(batch + (n, m), U16)
    gemm_ex(opb, opa, m, n, k, _ptr(b3), ldb, sb, _ptr(a3), lda, sa, _ptr(out), nb,
            _GEMM16[dt][1], CUBLAS_COMPUTE_32F, _ONE, _ZERO)
    return out.view(dt)


# dtype -> (GEMV generator name, cudaDataType) of the 16-bit GEMMs
_GEMM16 = {BF16: ("bfloat16", CUDA_R_16BF), F16: ("float16", CUDA_R_16F)}


def gemm_ex(opb, opa, m, n, k, pb, ldb, sb, pa, lda, sa, pc, nb, dtype, compute, one, zero):
    """Row-major ``C (nb, n, m) = A (nb, n, k) B (nb, k, m)`` by cuBLAS: column-major
    ``C^T = B^T A^T``, so cuBLAS gets (B, A) and writes ``C^T``, ``m x n``, ``ldc = m``; batch
    strides ``sa``, ``sb`` in elements (0: one matrix for every batch), C's ``n * m``.
    ``gemmEx`` for one product, else ``gemmStridedBatchedEx``; ``dtype`` the cudaDataType of
    all three, ``compute`` the cublasComputeType, ``one``/``zero`` host scalars of its type;
    through :mod:`_capture` while a CUDA graph is recorded."""
    from cupy.cuda import device as _cp_device
    from cupy_backends.cuda.libs import cublas
    from ruda.backends.cuda import _capture
    handle = _cp_device.get_cublas_handle()
    if _capture.capturing():
        _capture.gemm(handle, opb, opa, m, n, k, one.ctypes.data, pb, dtype, ldb, sb, pa,
                      dtype, lda, sa, zero.ctypes.data, pc, dtype, nb, compute,
                      CUBLAS_GEMM_DEFAULT)
        return
    mode = cublas.getPointerMode(handle)
    if mode != POINTER_MODE_HOST:
        cublas.setPointerMode(handle, POINTER_MODE_HOST)
    try:
        if nb == 1:
            cublas.gemmEx(handle, opb, opa, m, n, k, one.ctypes.data, pb, dtype, ldb, pa,
                          dtype, lda, zero.ctypes.data, pc, dtype, m, compute,
                          CUBLAS_GEMM_DEFAULT)
        else:
            cublas.gemmStridedBatchedEx(handle, opb, opa, m, n, k, one.ctypes.data, pb, dtype,
                                        ldb, sb, pa, dtype, lda, sa, zero.ctypes.data, pc,
                                        dtype, m, n * m, nb, compute, CUBLAS_GEMM_DEFAULT)
    finally:
        if mode != POINTER_MODE_HOST:
            cublas.setPointerMode(handle, mode)


def matmul(x1, x2):
    """The standard's matmul of two bfloat16 (or two float16) arrays: a result of their dtype,
    float32 accumulation."""
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("ruda: matmul: operands must be at least 1-D")
    dt = x1.dtype
    a = bits(x1).reshape(1, -1).view(dt) if x1.ndim == 1 else x1
    b = bits(x2).reshape(-1, 1).view(dt) if x2.ndim == 1 else x2
    n, k = a.shape[-2:]
    k2, m = b.shape[-2:]
    if k != k2:
        raise ValueError(f"ruda: matmul: contracted dimensions differ: shapes {x1.shape} and {x2.shape}")
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    out = bits(_gemm(a, b, batch, n, k, m))
    if x1.ndim == 1 and x2.ndim == 1:
        out = out.reshape(batch)
    elif x1.ndim == 1:
        out = out.reshape(batch + (m,))
    elif x2.ndim == 1:
        out = out.reshape(batch + (n,))
    return out.view(dt)


def float16_matmul(impl):
    """The backend's matmul with two float16 operands through :func:`matmul` (cuBLAS with the
    recording of CUDA graphs, and ruda's GEMV for a few rows); anything else to ``impl``."""
    def op(x1, x2, **kwargs):
        if x1.dtype == F16 and x2.dtype == F16 and not kwargs and x1.ndim and x2.ndim:
            return matmul(x1, x2)
        return impl(x1, x2, **kwargs)
    op.__name__ = "matmul"
    op.__wrapped__ = impl
    return op


def tensordot(x1, x2, axes=2):
    if isinstance(axes, int):
        ax1, ax2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        ax1, ax2 = (tuple(a % x.ndim for a in ax) if x.ndim else tuple(ax)
                    for ax, x in zip(axes, (x1, x2)))
    fa = [i for i in range(x1.ndim) if i not in ax1]
    fb = [i for i in range(x2.ndim) if i not in ax2]
    p = math.prod(x1.shape[i] for i in fa)
    k = math.prod(x1.shape[i] for i in ax1)
    q = math.prod(x2.shape[i] for i in fb)
    a = as_bf16(bits(x1).transpose(fa + list(ax1)).reshape(p, k))
    b = as_bf16(bits(x2).transpose(list(ax2) + fb).reshape(k, q))
    out = bits(_gemm(a, b, (), p, k, q))
    return as_bf16(out.reshape(tuple(x1.shape[i] for i in fa) + tuple(x2.shape[i] for i in fb)))


def nextafter(x1, x2):
    """The next bfloat16 after x1 towards x2 (ml_dtypes' rule; float32 would step too little)."""
    shape = tuple(np.broadcast_shapes(x1.shape, x2.shape))
    a = cp.ascontiguousarray(cp.broadcast_to(bits(x1), shape))
    b = cp.ascontiguousarray(cp.broadcast_to(bits(x2), shape))
    return as_bf16(_launch("ruda_bf16_nextafter", a, b, cp.empty(shape, U16)))


def vecdot(x1, x2, axis=-1):
    """Products exact in float32, summed in float32, rounded once."""
    return from_f32(cp.sum(to_f32(x1) * to_f32(x2), axis=axis))
