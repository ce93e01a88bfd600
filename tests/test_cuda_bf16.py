"""bfloat16 on the cuda backend (ruda/backends/cuda/_bf16.py).

The conversion kernels' CUDA C (``_bf16.SOURCE``) is compiled for the host with g++ and checked
bit for bit against ml_dtypes everywhere; everything else runs where a cuda device exists whose
CuPy holds bfloat16, against the host backend (ml_dtypes) and float64 oracles.
"""
import ctypes
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import ruda as xp
from ruda._devices import unavailable
from ruda.backends import OPS

ml_dtypes = pytest.importorskip("ml_dtypes")
from ruda.backends.cuda import _bf16, _bf16_routes  # noqa: E402 - import without CuPy

BF16 = np.dtype(ml_dtypes.bfloat16)
CUDA_REASON = unavailable("cuda")
# NumPy warns where it casts NaN or infinities (the references); the results are what is compared
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def _bf16_reason():
    if CUDA_REASON is not None:
        return f"no cuda device: {CUDA_REASON}"
    return _bf16.unavailable_reason()


BF16_REASON = _bf16_reason()
needs_cuda_bf16 = pytest.mark.skipif(BF16_REASON is not None, reason=f"no cuda bfloat16: {BF16_REASON}")


def all_bits():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def ulps(a, b):
    """Distance in bfloat16 units in the last place (NaN positions must agree: checked apart)."""
    def key(u):
        u = u.view(np.uint16).astype(np.int64)
        return np.where(u & 0x8000, -(u & 0x7FFF), u)
    return np.abs(key(np.asarray(a, BF16)) - key(np.asarray(b, BF16)))


def assert_close_bf16(got, want, max_ulps=1, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == BF16 and want.dtype == BF16, (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    gf, wf = got.astype(np.float32), want.astype(np.float32)
    assert (np.isnan(gf) == np.isnan(wf)).all(), f"{what}: NaN positions differ"
    ok = ~np.isnan(wf)
    d = ulps(got[ok], want[ok])
    assert d.size == 0 or d.max() <= max_ulps, \
        f"{what}: {d.max()} ulps at {np.flatnonzero(ok)[d.argmax()]}: {gf[ok][d.argmax()]} vs {wf[ok][d.argmax()]}"


def test_routes_cover_every_op():
    assert set(_bf16_routes.ROUTES) == set(OPS)
    assert set(_bf16_routes.ROUTES.values()) <= {"own", "bits", "f32", "raise"}
    for name in ("matmul", "tensordot", "vecdot", "astype", "full", "arange", "nextafter"):
        assert _bf16_routes.ROUTES[name] == "own"
    for name in ("linalg_inv", "linalg_solve", "linalg_svd", "fft_fft"):
        assert _bf16_routes.ROUTES[name] == "raise"


# ---------------------------------------------------------------------------------------
# the kernels' CUDA C, compiled for the host

_STUBS = r"""
#include <cmath>
#include <cfenv>
#include <cstring>
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
struct Dim3 { unsigned x; };
static const Dim3 blockIdx = {0}, blockDim = {1}, threadIdx = {0}, gridDim = {1};
using std::isnan; using std::signbit;
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
#define RZ(T, x) ({ int m_ = fegetround(); fesetround(FE_TOWARDZERO); volatile T v_ = (x); \
                    volatile float f_ = (float)v_; fesetround(m_); (float)f_; })
static inline float __double2float_rz(double d) { return RZ(double, d); }
static inline float __ll2float_rz(long long v) { return RZ(long long, v); }
static inline float __ull2float_rz(unsigned long long v) { return RZ(unsigned long long, v); }
"""


def build_host_kernels(directory):
    """``_bf16.SOURCE`` compiled for the host with g++ (CUDA intrinsics stubbed): a ctypes CDLL whose
    kernels run their grid-stride loop serially, or None without g++."""
    gxx = shutil.which("g++")
    if gxx is None:
        return None
    src, lib = directory / "bf16.cpp", directory / "bf16.so"
    src.write_text(_STUBS + _bf16.SOURCE)
    subprocess.run([gxx, "-O1", "-frounding-math", "-fPIC", "-shared", "-o", str(lib), str(src)],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(lib))


def call_host_kernel(dll, name, *arrays, extra=()):
    """Run kernel ``name`` of ``dll`` over contiguous arrays (inputs, then the output), as _bf16._launch."""
    fn = getattr(dll, name)
    fn.restype = None
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrays], ctypes.c_longlong(arrays[-1].size),
       *[ctypes.c_longlong(e) for e in extra])
    return arrays[-1]


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    dll = build_host_kernels(tmp_path_factory.mktemp("bf16"))
    if dll is None:
        pytest.skip("no g++ to compile the bfloat16 kernels for the host")

    def run(name, out_dtype, *inputs, extra=()):
        inputs = [np.ascontiguousarray(a) for a in inputs]
        return call_host_kernel(dll, name, *inputs, np.empty(inputs[0].shape, out_dtype), extra=extra)
    return run


def _mlbits(a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            a = np.asarray(a)
            if a.dtype == np.float64:
                a = _to_odd_f32(a)
            return a.astype(BF16).view(np.uint16)


def _to_odd_f32(a):
    """float64 -> float32 rounded to odd, so that float32 -> bfloat16 (nearest even) rounds the
    float64 value once, as ml_dtypes 0.7 does (0.6 rounds twice, through float32's nearest)."""
    f = a.astype(np.float32)
    f64 = f.astype(np.float64)
    inexact = np.isfinite(f) & (f64 != a)
    bits = f.view(np.uint32).copy()
    bits[inexact & (np.abs(f64) > np.abs(a))] -= 1          # toward zero: one ulp down in magnitude
    bits[inexact] |= 1
    return bits.view(np.float32)


def test_host_kernel_from_f32_matches_ml_dtypes(host_kernels):
    rng = np.random.default_rng(0)
    u = np.concatenate([rng.integers(0, 1 << 32, 400_000, dtype=np.uint64).astype(np.uint32),
                        np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                                  0x00000001, 0x807FFFFF, 0x7F7FFFFF, 0x7F7F8000, 0x3F808000, 0x3F818000],
                                 np.uint32)])
    f = u.view(np.float32)
    np.testing.assert_array_equal(host_kernels("ruda_bf16_from_f32", np.uint16, f), _mlbits(f))


def test_host_kernel_from_f64_rounds_once_as_ml_dtypes(host_kernels):
    rng = np.random.default_rng(1)
    d = np.concatenate([
        rng.integers(0, 1 << 63, 200_000, dtype=np.int64).astype(np.uint64).view(np.float64),
        rng.standard_normal(100_000) * np.exp(rng.uniform(-110, 110, 100_000)),
        1 + rng.integers(0, 1 << 20, 50_000) * 2.0 ** -40,          # double-rounding traps
        [1 + 2 ** -8 + 2 ** -30, -(1 + 2 ** -8 + 2 ** -30), 1e39, -1e39, 3.3961e38, 1e-46, -1e-46,
         2.0 ** -133, 2.0 ** -134, 2.0 ** -134 * 1.0000001, np.inf, -np.inf, np.nan, -np.nan, -0.0]])
    if _mlbits(np.array([1 + 2 ** -8 + 2 ** -30]))[0] != 0x3F81:
        pytest.skip("this ml_dtypes rounds float64 through float32 (twice)")
    want = _mlbits(d)
    np.testing.assert_array_equal(host_kernels("ruda_bf16_from_f64", np.uint16, d), want)


@pytest.mark.parametrize("dt", ["int64", "uint64"])
def test_host_kernel_from_64_bit_integers(host_kernels, dt):
    rng = np.random.default_rng(2)
    info = np.iinfo(dt)
    v = np.concatenate([rng.integers(info.min, info.max, 200_000, dtype=dt, endpoint=True),
                        rng.integers(-70_000 if info.min else 0, 70_000, 10_000).astype(dt),
                        np.array([info.min, info.max, 0, 1, 2 ** 60 + 2 ** 52 + 1, 2 ** 40 + 2 ** 32 + 1], dt)])
    name = "ruda_bf16_from_i64" if dt == "int64" else "ruda_bf16_from_u64"
    if _mlbits(np.array([2 ** 60 + 2 ** 52 + 1], np.int64))[0] != 23937:
        pytest.skip("this ml_dtypes rounds integers through float32")
    want = _mlbits(v)
    np.testing.assert_array_equal(host_kernels(name, np.uint16, v), want)


def test_host_kernel_to_floats_and_integers(host_kernels):
    b = all_bits()
    x = b.view(BF16)
    f = host_kernels("ruda_bf16_to_f32", np.float32, b)
    np.testing.assert_array_equal(f.view(np.uint32), x.astype(np.float32).view(np.uint32))
    d = host_kernels("ruda_bf16_to_f64", np.float64, b)
    np.testing.assert_array_equal(d.view(np.uint64), x.astype(np.float32).astype(np.float64).view(np.uint64))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml_zero_out_of_range = np.asarray([300.0], BF16).astype(np.int8)[0] == 0
        t = np.trunc(f.astype(np.float64))
    for dt in _bf16._INTS:
        got = host_kernels(f"ruda_bf16_to_{dt.name}", dt, b)
        lo, hi = _bf16._int_bounds(dt)
        with np.errstate(invalid="ignore"):
            inside = (t >= lo) & (t < hi)
        np.testing.assert_array_equal(got[inside], t[inside].astype(dt), err_msg=dt.name)
        assert (got[~inside] == 0).all(), dt.name
        if ml_zero_out_of_range:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.testing.assert_array_equal(got, x.astype(dt), err_msg=dt.name)


def test_host_kernel_nextafter(host_kernels):
    rng = np.random.default_rng(3)
    special = np.array([0, 0x8000, 0x0001, 0x8001, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80, 0xBF80],
                       np.uint16)
    a = np.concatenate([rng.integers(0, 1 << 16, 100_000).astype(np.uint16), np.repeat(special, special.size)])
    b = np.concatenate([rng.integers(0, 1 << 16, 100_000).astype(np.uint16), np.tile(special, special.size)])
    b[:3000] = a[:3000]
    got = host_kernels("ruda_bf16_nextafter", np.uint16, a, b)
    want = np.nextafter(a.view(BF16), b.view(BF16)).view(np.uint16)
    nan = np.isnan(want.view(BF16).astype(np.float32))
    assert (np.isnan(got.view(BF16).astype(np.float32)) == nan).all()
    np.testing.assert_array_equal(got[~nan], want[~nan])


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
def test_host_kernel_fused_binary_as_ml_dtypes(host_kernels, name):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 1 << 16, 200_000).astype(np.uint16)
    b = rng.integers(0, 1 << 16, 200_000).astype(np.uint16)
    b[:1000] = a[:1000]
    f = getattr(np, name)
    with np.errstate(all="ignore"):
        want = f(a.view(BF16), b.view(BF16)).view(np.uint16)
        want_s = f(a.view(BF16), b[7:8].view(BF16)).view(np.uint16)
    got = host_kernels(f"ruda_bf16_{name}", np.uint16, a, b, extra=(1, 1))
    got_s = host_kernels(f"ruda_bf16_{name}", np.uint16, a, b[7:8], extra=(1, 0))
    for g, w in ((got, want), (got_s, want_s)):
        nan = np.isnan(w.view(BF16).astype(np.float32))
        assert (np.isnan(g.view(BF16).astype(np.float32)) == nan).all()
        np.testing.assert_array_equal(g[~nan], w[~nan])


# ---------------------------------------------------------------------------------------
# on the GPU

def cuda(a):
    return xp.asarray(a, device="cuda")


def host(x):
    return np.asarray(x.to_device("cpu"))


def rand_bf16(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(BF16)


@needs_cuda_bf16
def test_listed_and_round_trip_every_bit_pattern():
    dev = xp.device("cuda")
    assert dev.backend.supports(BF16)
    assert BF16 in dev.backend.dtypes()
    b = all_bits()
    x = cuda(b.view(BF16))
    assert x.dtype == xp.bfloat16 and x.device == dev
    np.testing.assert_array_equal(host(x).view(np.uint16), b)
    big = np.tile(b, 16).view(BF16).reshape(256, -1)          # > 1 MiB: pinned staging both ways
    y = cuda(big)
    np.testing.assert_array_equal(host(y).view(np.uint16), big.view(np.uint16))
    np.testing.assert_array_equal(host(y.T).view(np.uint16), big.T.view(np.uint16))   # strided
    np.testing.assert_array_equal(host(y[::3, 1::7]).view(np.uint16), big[::3, 1::7].view(np.uint16))
    z = xp.asarray([1.5, -0.0, 3.14159], dtype=xp.bfloat16, device="cuda")
    np.testing.assert_array_equal(host(z).view(np.uint16),
                                  np.asarray([1.5, -0.0, 3.14159], BF16).view(np.uint16))
    assert float(z[0]) == 1.5 and "bfloat16" in repr(z)


@needs_cuda_bf16
@pytest.mark.parametrize("src", ["float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                                 "uint16", "uint32", "uint64", "bool"])
def test_astype_to_bf16_bits_as_ml_dtypes(src):
    rng = np.random.default_rng(4)
    dt = np.dtype(src)
    if dt.kind == "f":
        a = np.concatenate([rng.standard_normal(20_000) * np.exp(rng.uniform(-80, 80, 20_000)),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1 + 2 ** -8, 1 + 2 ** -8 + 2 ** -30,
                             3.4e38, 1e-40, -1e-45]]).astype(dt)
    elif dt.kind == "b":
        a = rng.integers(0, 2, 1000).astype(bool)
    else:
        info = np.iinfo(dt)
        a = np.concatenate([rng.integers(info.min, info.max, 20_000, dtype=dt, endpoint=True),
                            np.array([info.min, info.max, 0, 1], dt)])
    want = _mlbits(a)
    got = host(xp.astype(cuda(a), xp.bfloat16)).view(np.uint16)
    nan = np.isnan(want.view(BF16).astype(np.float32))
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(got[nan].view(BF16).astype(np.float32)).all()
    # strided and 0-d sources
    np.testing.assert_array_equal(host(xp.astype(cuda(a)[::3], xp.bfloat16)).view(np.uint16)[~nan[::3]],
                                  want[::3][~nan[::3]])
    assert host(xp.astype(cuda(a[5]), xp.bfloat16)).shape == ()


@needs_cuda_bf16
@pytest.mark.parametrize("dst", ["float32", "float64", "bool", "int8", "int32", "int64", "uint8",
                                 "uint64", "complex64", "complex128"])
def test_astype_from_bf16_as_ml_dtypes(dst):
    b = all_bits()
    x = b.view(BF16)
    f = x.astype(np.float32)
    got = host(xp.astype(cuda(x), getattr(xp, dst)))
    dt = np.dtype(dst)
    assert got.dtype == dt
    if dt.kind in "iu":
        t = np.trunc(f.astype(np.float64))
        lo, hi = _bf16._int_bounds(dt)
        inside = (t >= lo) & (t < hi)
        np.testing.assert_array_equal(got[inside], t[inside].astype(dt))
    elif dt.kind == "b":
        np.testing.assert_array_equal(got, x.astype(bool))
    else:
        np.testing.assert_array_equal(got, f.astype(dt))
        if dt.kind == "f":
            np.testing.assert_array_equal(np.signbit(got), np.signbit(f))


@needs_cuda_bf16
def test_creation_matches_host():
    for make in (lambda d: xp.zeros((3, 4), dtype=xp.bfloat16, device=d),
                 lambda d: xp.ones(5, dtype=xp.bfloat16, device=d),
                 lambda d: xp.full((2, 2), -0.0, dtype=xp.bfloat16, device=d),
                 lambda d: xp.full(3, 0.1, dtype=xp.bfloat16, device=d),
                 lambda d: xp.full(3, float("nan"), dtype=xp.bfloat16, device=d),
                 lambda d: xp.eye(4, 5, k=1, dtype=xp.bfloat16, device=d),
                 lambda d: xp.arange(0, 10, 0.1, dtype=xp.bfloat16, device=d),
                 lambda d: xp.arange(-3, 300, 1.1, dtype=xp.bfloat16, device=d),
                 lambda d: xp.arange(5, dtype=xp.bfloat16, device=d),
                 lambda d: xp.linspace(0, 1, 11, dtype=xp.bfloat16, device=d),
                 lambda d: xp.linspace(-7.3, 2.2, 1000, endpoint=False, dtype=xp.bfloat16, device=d),
                 lambda d: xp.zeros_like(xp.ones(3, dtype=xp.bfloat16, device=d))):
        h, c = make("cpu"), make("cuda")
        assert c.dtype == xp.bfloat16 and c.shape == h.shape
        hb, cb = np.asarray(h).view(np.uint16), host(c).view(np.uint16)
        nan = np.isnan(np.asarray(h).astype(np.float32))
        np.testing.assert_array_equal(cb[~nan], hb[~nan])
    e = xp.empty((2, 3), dtype=xp.bfloat16, device="cuda")
    assert e.dtype == xp.bfloat16 and e.shape == (2, 3)


def _pair(rng, shape=(257,), scale=3.0):
    a = rand_bf16(rng, shape, scale)
    b = rand_bf16(rng, shape, scale)
    a[:4] = np.array([0.0, -0.0, np.inf, np.nan], BF16)
    b[:4] = np.array([-0.0, 2.0, -np.inf, 1.0], BF16)
    return a, b


UNARY = ["abs", "negative", "positive", "exp", "expm1", "log", "log1p", "log2", "sqrt", "sin",
         "cos", "tanh", "atan", "floor", "ceil", "trunc", "round", "sign", "square", "reciprocal",
         "isnan", "isinf", "isfinite", "signbit"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "atan2", "hypot",
          "copysign", "floor_divide", "remainder", "logaddexp", "nextafter", "equal", "less",
          "greater_equal", "not_equal"]


@needs_cuda_bf16
@pytest.mark.parametrize("name", UNARY)
def test_unary_as_host(name):
    rng = np.random.default_rng(5)
    a, _ = _pair(rng)
    if name in ("log", "log1p", "log2", "sqrt"):
        a = np.abs(a.astype(np.float32)).astype(BF16)
    f = getattr(xp, name)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.asarray(f(xp.asarray(a)))
    got = host(f(cuda(a)))
    if want.dtype == bool:
        np.testing.assert_array_equal(got, want)
    else:
        assert_close_bf16(got, want, what=name)


@needs_cuda_bf16
@pytest.mark.parametrize("name", BINARY)
def test_binary_as_host(name):
    rng = np.random.default_rng(6)
    a, b = _pair(rng)
    if name == "pow":
        a = np.abs(a.astype(np.float32)).astype(BF16)
    f = getattr(xp, name)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = np.asarray(f(xp.asarray(a), xp.asarray(b)))
        want_b = np.asarray(f(xp.asarray(a.reshape(-1, 1)[:16]), xp.asarray(b[:8])))   # broadcast
    got = host(f(cuda(a), cuda(b)))
    got_b = host(f(cuda(a.reshape(-1, 1)[:16]), cuda(b[:8])))
    if want.dtype == bool:
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_b, want_b)
    else:
        assert_close_bf16(got, want, what=name)
        assert_close_bf16(got_b, want_b, what=name + " broadcast")


@needs_cuda_bf16
def test_python_scalars_and_operators():
    rng = np.random.default_rng(7)
    a = rand_bf16(rng, (100,))
    h, c = xp.asarray(a), cuda(a)
    for f in (lambda x: x + 1.5, lambda x: 2 * x, lambda x: x / 3, lambda x: -x, lambda x: x ** 2,
              lambda x: x - 0.1, lambda x: abs(x), lambda x: x * x + x):
        assert_close_bf16(host(f(c)), np.asarray(f(h)))
        assert f(c).dtype == xp.bfloat16
    np.testing.assert_array_equal(host(c > 0.5), np.asarray(h > 0.5))


@needs_cuda_bf16
def test_promotion_same_as_host():
    rng = np.random.default_rng(8)
    a = rand_bf16(rng, (6,))
    for dt in ("bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64",
               "complex64", "complex128"):
        other = np.asarray([1, 0, 1, 1, 0, 1]).astype(dt)
        h = xp.asarray(a) + xp.asarray(other)
        c = cuda(a) + cuda(other)
        assert c.dtype == h.dtype, dt
        if h.dtype == xp.bfloat16:
            assert_close_bf16(host(c), np.asarray(h), what=dt)
        else:
            np.testing.assert_array_equal(host(c), np.asarray(h), err_msg=dt)
    assert (cuda(a) + cuda(a.astype(np.float32))).dtype == xp.float32
    assert (cuda(a) * 2.5).dtype == xp.bfloat16 and (cuda(a) + 1).dtype == xp.bfloat16
    assert xp.result_type(xp.bfloat16, xp.float32) == xp.float32
    assert xp.isdtype(xp.bfloat16, "real floating")
    assert xp.can_cast(xp.bfloat16, xp.float32)


@needs_cuda_bf16
def test_reductions():
    rng = np.random.default_rng(9)
    small = np.array([[1, 2, 3.5, -4], [0.25, 8, -1, 2]], BF16)        # exact in bfloat16
    for f in (xp.sum, xp.prod, xp.max, xp.min, xp.mean):
        for kw in ({}, {"axis": 1}, {"axis": 0, "keepdims": True}):
            h, c = f(xp.asarray(small), **kw), f(cuda(small), **kw)
            assert c.dtype == xp.bfloat16
            np.testing.assert_array_equal(host(c).view(np.uint16), np.asarray(h).view(np.uint16))
    np.testing.assert_array_equal(host(xp.cumulative_sum(cuda(small), axis=1)).view(np.uint16),
                                  np.asarray(xp.cumulative_sum(xp.asarray(small), axis=1)).view(np.uint16))
    a = rand_bf16(rng, (64, 1000))
    ref = a.astype(np.float64)
    for f, r in ((xp.sum, ref.sum(axis=1)), (xp.mean, ref.mean(axis=1)), (xp.std, ref.std(axis=1)),
                 (xp.var, ref.var(axis=1)), (xp.max, ref.max(axis=1))):
        assert_close_bf16(host(f(cuda(a), axis=1)), r.astype(BF16), what=f.__name__)
    s32 = xp.sum(cuda(a), dtype=xp.float32)                 # an explicit wider dtype is kept
    assert s32.dtype == xp.float32
    np.testing.assert_allclose(float(s32), ref.sum(), rtol=1e-4, atol=1e-2)
    assert xp.sum(cuda(a.astype(np.float32)), dtype=xp.bfloat16).dtype == xp.bfloat16
    assert int(xp.argmax(cuda(a))) == int(np.argmax(a.astype(np.float32)))
    z = np.array([0.0, -0.0, 1.0, -0.0], BF16)
    assert int(xp.count_nonzero(cuda(z))) == 1
    np.testing.assert_array_equal(host(xp.nonzero(cuda(z))[0]), [2])
    assert bool(xp.any(cuda(z))) and not bool(xp.all(cuda(z)))


@needs_cuda_bf16
def test_data_movement_keeps_bits():
    rng = np.random.default_rng(10)
    a = rand_bf16(rng, (6, 8))
    a[0, :3] = np.array([-0.0, np.nan, -np.inf], BF16)
    h, c = xp.asarray(a), cuda(a)
    for f in (lambda x: x[::2, 1:], lambda x: x[1], lambda x: x[x > 0], lambda x: x.T, lambda x: x.mT,
              lambda x: xp.reshape(x, (4, 12)), lambda x: xp.flip(x, axis=0), lambda x: xp.roll(x, 3),
              lambda x: xp.concat([x, x], axis=1), lambda x: xp.stack([x, x]), lambda x: xp.tril(x),
              lambda x: xp.triu(x, k=1), lambda x: xp.repeat(x, 2, axis=0), lambda x: xp.tile(x, (2, 1)),
              lambda x: xp.take(x, xp.asarray([0, 5, 2], device=x.device), axis=1),
              lambda x: xp.where(x > 0, x, -x), lambda x: xp.permute_dims(x, (1, 0)),
              lambda x: xp.expand_dims(x, axis=0), lambda x: xp.broadcast_to(x[0], (3, 8)),
              lambda x: xp.sort(x, axis=1), lambda x: xp.sort(xp.unique_values(x)),   # order unspecified
              lambda x: xp.linalg.diagonal(x)):
        got, want = host(f(c)), np.asarray(f(h))
        assert got.dtype == BF16
        nan = np.isnan(want.astype(np.float32))
        np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
        assert np.isnan(got.astype(np.float32)[nan]).all()
    np.testing.assert_array_equal(host(xp.argsort(c, axis=1, stable=True)),
                                  np.asarray(xp.argsort(h, axis=1, stable=True)))
    c2 = xp.asarray(c, copy=True)
    c2[0, 0] = 7.0
    c2[1] = cuda(np.full(8, -2.5, BF16))
    c2[c2 < -2] = 0.5
    h2 = xp.asarray(h, copy=True)
    h2[0, 0] = 7.0
    h2[1] = xp.asarray(np.full(8, -2.5, BF16))
    h2[h2 < -2] = 0.5
    np.testing.assert_array_equal(host(c2).view(np.uint16)[1:], np.asarray(h2).view(np.uint16)[1:])
    assert float(c2[0, 0]) == 7.0


def _oracle(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _check_matmul(got, a, b):
    ref = _oracle(a, b)
    bound = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    g = np.asarray(got).astype(np.float64)
    assert np.asarray(got).dtype == BF16 and g.shape == ref.shape
    # bfloat16 output: rounding alone is 2^-9 relative; allow fp32 accumulation noise
    assert (np.abs(g - ref) <= 2.0 ** -7 * bound + 1e-30).all()
    if ref.size:
        assert np.linalg.norm(g - ref) <= 2.0 ** -7 * np.linalg.norm(ref) + 1e-30


@needs_cuda_bf16
@pytest.mark.parametrize("sa,sb", [((64, 32), (32, 48)), ((33, 17), (17, 5)), ((1, 7), (7, 1)), ((7,), (7,)),
                                   ((7,), (7, 3)), ((4, 7), (7,)), ((5, 6, 7), (5, 7, 3)),
                                   ((5, 6, 7), (7, 3)), ((6, 7), (5, 7, 3)), ((3, 1, 4, 5), (1, 2, 5, 6)),
                                   ((2, 3, 0), (0, 4)), ((0, 3), (3, 4)), ((1024, 512), (512, 768))])
def test_matmul_against_float64(sa, sb):
    rng = np.random.default_rng(11)
    a, b = rand_bf16(rng, sa), rand_bf16(rng, sb)
    got = host(xp.matmul(cuda(a), cuda(b)))
    _check_matmul(got, a, b)
    assert got.shape == np.matmul(a.astype(np.float32), b.astype(np.float32)).shape


@needs_cuda_bf16
def test_matmul_transposed_and_strided_operands():
    rng = np.random.default_rng(12)
    a, b = rand_bf16(rng, (40, 24)), rand_bf16(rng, (40, 56))
    ca, cb = cuda(a), cuda(b)
    _check_matmul(host(ca.T @ cb), a.T, b)                   # column-major operand: no copy
    _check_matmul(host(ca.T @ cb[:, ::2]), a.T, b[:, ::2])   # strided: copied
    _check_matmul(host(cb.T @ ca), b.T, a)
    s = rand_bf16(rng, (4, 24, 40))
    _check_matmul(host(xp.matmul(cuda(s).mT, cuda(s))), np.swapaxes(s, -1, -2), s)
    _check_matmul(host(cuda(a)[::-1].T @ cuda(b)), a[::-1].T, b)   # negative strides: copied


@needs_cuda_bf16
@pytest.mark.parametrize("rows", [1, 2, 3, 8, 9])
@pytest.mark.parametrize("n,k", [(1, 8), (5, 24), (576, 576), (963, 1544), (4099, 264), (129, 2056)])
def test_matmul_decode_shapes_as_linear_reads_them(rows, n, k):
    """x (rows, k) @ W.T with W (n, k) row-major: ruda's GEMV up to 8 rows (odd n, k past its
    unrolled steps, rows of x that are a strided view), cuBLAS beyond; the same bound."""
    from ruda.backends.cuda import _gemv
    rng = np.random.default_rng(n * 7 + k + rows)
    x, w = rand_bf16(rng, (rows, k)), rand_bf16(rng, (n, k))
    _check_matmul(host(cuda(x) @ cuda(w).T), x, w.T)
    _check_matmul(host(xp.reshape(cuda(x), (1, rows, k)) @ cuda(w).T), x[None], w.T)
    wide = rand_bf16(rng, (rows, k + 16))
    _check_matmul(host(cuda(wide)[:, :k] @ cuda(w).T), wide[:, :k], w.T)
    if _gemv.ENABLED:           # (off where NumPy poses as CuPy: no NVRTC)
        a3 = _bf16.as_bf16(_bf16.bits(cuda(x)._data).reshape(1, rows, k))
        b3 = _bf16.as_bf16(_bf16.bits(cuda(w)._data).T.reshape(1, k, n))
        assert (_gemv.gemv(a3, b3, rows, k, n) is not None) == (rows <= 8)


@needs_cuda_bf16
def test_float16_matmul_takes_the_16_bit_gemm():
    """float16 matmul through the same cuBLAS call and operand layouts as bfloat16 (and the
    GEMV for a few rows where it is on): a float16 result, float32 accumulation."""
    rng = np.random.default_rng(14)
    F16 = np.float16

    def check(got, a, b):
        ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
        bound = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        g = np.asarray(got)
        assert g.dtype == F16 and g.shape == ref.shape
        assert (np.abs(g.astype(np.float64) - ref) <= 2.0 ** -10 * bound + 1e-30).all()

    a, b = rng.standard_normal((40, 24)).astype(F16), rng.standard_normal((40, 56)).astype(F16)
    check(host(cuda(a).T @ cuda(b)), a.T, b)
    check(host(cuda(a).T @ cuda(b)[:, ::2]), a.T, b[:, ::2])
    s = rng.standard_normal((4, 24, 40)).astype(F16)
    check(host(xp.matmul(cuda(s).mT, cuda(s))), np.swapaxes(s, -1, -2), s)
    x, w = rng.standard_normal((3, 264)).astype(F16), rng.standard_normal((37, 264)).astype(F16)
    check(host(cuda(x) @ cuda(w).T), x, w.T)
    v = rng.standard_normal(24).astype(F16)
    check(host(cuda(a) @ cuda(v)), a, v)


@needs_cuda_bf16
def test_tensordot_vecdot_and_big_matmul():
    rng = np.random.default_rng(13)
    a, b = rand_bf16(rng, (3, 4, 5)), rand_bf16(rng, (4, 5, 6))
    got = host(xp.tensordot(cuda(a), cuda(b), axes=2))
    ref = np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=2)
    assert got.dtype == BF16 and got.shape == ref.shape
    assert np.allclose(got.astype(np.float64), ref, rtol=2 ** -7, atol=2 ** -7 * np.abs(ref).max())
    got = host(xp.tensordot(cuda(a), cuda(b), axes=([1], [0])))
    ref = np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=([1], [0]))
    assert np.allclose(got.astype(np.float64), ref, rtol=2 ** -7, atol=2 ** -7 * np.abs(ref).max())
    x, y = rand_bf16(rng, (8, 300)), rand_bf16(rng, (300,))
    v = host(xp.vecdot(cuda(x), cuda(y)))
    assert v.dtype == BF16
    assert_close_bf16(v, (x.astype(np.float64) @ y.astype(np.float64)).astype(BF16), what="vecdot")
    n = 2048
    a, b = rand_bf16(rng, (n, n)), rand_bf16(rng, (n, n))
    _check_matmul(host(cuda(a) @ cuda(b)), a, b)
    o = host(xp.linalg.outer(cuda(y[:10]), cuda(y[:7])))
    assert_close_bf16(o, np.asarray(xp.linalg.outer(xp.asarray(y[:10]), xp.asarray(y[:7]))), what="outer")


@needs_cuda_bf16
def test_unimplemented_ops_raise_naming_the_function():
    x = xp.eye(3, dtype=xp.bfloat16, device="cuda")
    for f, name in ((xp.linalg.inv, "linalg.inv"), (xp.linalg.det, "linalg.det"),
                    (xp.linalg.cholesky, "linalg.cholesky"), (xp.linalg.svdvals, "linalg.svdvals")):
        with pytest.raises((NotImplementedError, TypeError), match=name.replace(".", r"\.")):
            f(x)
    with pytest.raises(TypeError):
        xp.bitwise_and(x, x)


@needs_cuda_bf16
def test_bench_puts_bf16_on_cuda():
    from ruda.bench import _libs
    c = _libs.Ruda(xp.device("cuda"))
    a = c.put(np.ones((4, 4), np.float32), "bfloat16")
    assert a.dtype == xp.bfloat16 and a.device == xp.device("cuda")
    np.testing.assert_array_equal(c.get(c.ns.matmul(a, a)).astype(np.float32), np.full((4, 4), 4.0))


@needs_cuda_bf16
def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    b = all_bits()
    x = cuda(b.view(BF16))
    t = torch.from_dlpack(x)                      # CuPy exports kDLBfloat (CuPy >= 14, ml_dtypes)
    assert t.dtype == torch.bfloat16 and t.is_cuda
    np.testing.assert_array_equal(t.view(torch.int16).cpu().numpy().view(np.uint16), b)
    y = xp.from_dlpack(t * 2)
    assert y.dtype == xp.bfloat16 and y.device == xp.device("cuda")
    normal = slice(0x0080, 0x7F00)                # positive normal values whose double is finite
    assert_close_bf16(host(y)[normal], (b.view(BF16).astype(np.float32) * 2).astype(BF16)[normal])
    np.testing.assert_array_equal(host(y * 0.5).view(np.uint16)[normal], b[normal])


def test_host_orders_bfloat16_like_its_float_values():
    """sort, argsort, unique_* and searchsorted of host bfloat16 arrays order as the values do
    (NaN last, -0 == 0, stable), against NumPy on float64 copies: the H200 machine's NumPy 2.3.5
    and ml_dtypes sorted bfloat16 [-0, nan, -inf, ...] as it stood."""
    rng = np.random.default_rng(12)
    a = rand_bf16(rng, (5, 9))
    a[0, :5] = np.array([-0.0, np.nan, -np.inf, 0.0, np.inf], BF16)
    a[3, 2:4] = np.array([np.nan, a[3, 7]], BF16)
    f, h = a.astype(np.float64), xp.asarray(a)
    for axis in (0, 1):
        got = np.asarray(xp.sort(h, axis=axis))
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.astype(np.float64), np.sort(f, axis=axis))
        down = np.asarray(xp.sort(h, axis=axis, descending=True)).astype(np.float64)
        np.testing.assert_array_equal(down, np.flip(np.sort(np.flip(f, axis), axis=axis, kind="stable"), axis))
        np.testing.assert_array_equal(np.asarray(xp.argsort(h, axis=axis)),
                                      np.argsort(f, axis=axis, kind="stable"))
    flat = xp.reshape(h, (-1,))
    vals, idx, inv, counts = np.unique(f.ravel(), True, True, True, equal_nan=False)
    u = xp.unique_all(flat)
    assert u.values.dtype == xp.bfloat16
    np.testing.assert_array_equal(np.asarray(u.values).astype(np.float64), vals)
    np.testing.assert_array_equal(np.asarray(u.counts), counts)
    np.testing.assert_array_equal(np.asarray(u.indices), idx)
    np.testing.assert_array_equal(np.asarray(u.inverse_indices), inv)
    np.testing.assert_array_equal(np.asarray(xp.unique_values(flat)).astype(np.float64), vals)
    s, q = np.sort(f.ravel()), rand_bf16(rng, (7,))
    np.testing.assert_array_equal(
        np.asarray(xp.searchsorted(xp.sort(flat), xp.asarray(q), side="right")),
        np.searchsorted(s, q.astype(np.float64), side="right"))
