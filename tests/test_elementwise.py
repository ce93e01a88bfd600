"""Every elementwise function of the standard, against NumPy, on every device.

Inputs are random (seeded by hypothesis) within each function's domain; dtypes are drawn from
the function's dtype category, restricted to what the device supports.  The oracle is NumPy
computed in float64/complex128 for floating inputs, compared with dtype-appropriate tolerances;
the result dtype is checked exactly.
"""
import math
import types

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import flushes_subnormals, to_numpy
from strategies import (assert_result, broadcastable_pair, default, dtypes, host64, layouts, need, rand,
                        rand_nonzero, seeds, shapes, supported, view)

# The standard's dtype categories, spelled as inspection-API kinds.
NUMERIC = ("integral", "real floating", "complex floating")
FLOATING = ("real floating", "complex floating")
REAL_FLOATING = ("real floating",)
REAL_NUMERIC = ("integral", "real floating")
INTEGER = ("integral",)
INT_OR_BOOL = ("integral", "bool")
BOOLEAN = ("bool",)
COMPLEX = ("complex floating",)
ALL = ("bool", "integral", "real floating", "complex floating")


def gen(lo=-10.0, hi=10.0, nonzero=False, complex_range=None):
    """Input generator: (rng, shape, dtype) -> ndarray within [lo, hi] (complex: complex_range)."""
    def make(rng, shape, dtype):
        a, b = (complex_range if complex_range and np.dtype(dtype).kind == "c" else (lo, hi))
        if nonzero:
            return rand_nonzero(rng, shape, dtype, a, b)
        return rand(rng, shape, dtype, a, b)
    return make


def small_ints(rng, shape, dtype):
    """Values whose sums/products stay in range of every integer dtype; floats in [-10, 10]."""
    dtype = np.dtype(dtype)
    if dtype.kind == "u":
        return rand(rng, shape, dtype, 0, 11)
    if dtype.kind == "i":
        return rand(rng, shape, dtype, -11, 11)
    return rand(rng, shape, dtype)


def ties(rng, shape, dtype):
    """Values from a small set, so that comparisons see equal elements."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rand(rng, shape, dtype)
    lo = 0 if dtype.kind == "u" else -3
    vals = rng.integers(lo, 4, size=shape)
    if dtype.kind == "c":
        return (vals + 1j * rng.integers(-1, 2, size=shape)).astype(dtype)
    return (vals * (0.5 if dtype.kind == "f" else 1)).astype(dtype)


# name: (category, input generator, NumPy oracle, loose tolerance)
UNARY = {
    "abs": (NUMERIC, small_ints, np.abs, False),
    "acos": (FLOATING, gen(-0.99, 0.99, complex_range=(-2, 2)), np.arccos, True),
    "acosh": (FLOATING, gen(1.01, 10, complex_range=(-2, 2)), np.arccosh, True),
    "asin": (FLOATING, gen(-0.99, 0.99, complex_range=(-2, 2)), np.arcsin, True),
    "asinh": (FLOATING, gen(-10, 10, complex_range=(-2, 2)), np.arcsinh, True),
    "atan": (FLOATING, gen(-10, 10, complex_range=(-2, 2)), np.arctan, True),
    "atanh": (FLOATING, gen(-0.99, 0.99, complex_range=(-2, 2)), np.arctanh, True),
    "bitwise_invert": (INT_OR_BOOL, gen(-100, 100), np.invert, False),
    "ceil": (REAL_NUMERIC, gen(), np.ceil, False),
    "conj": (NUMERIC, small_ints, np.conj, False),
    "cos": (FLOATING, gen(-10, 10, complex_range=(-3, 3)), np.cos, True),
    "cosh": (FLOATING, gen(-10, 10, complex_range=(-3, 3)), np.cosh, True),
    "exp": (FLOATING, gen(-10, 10, complex_range=(-3, 3)), np.exp, True),
    "expm1": (FLOATING, gen(-10, 10, complex_range=(-3, 3)), np.expm1, True),
    "floor": (REAL_NUMERIC, gen(), np.floor, False),
    "imag": (COMPLEX, gen(), np.imag, False),
    "isfinite": (NUMERIC, gen(), np.isfinite, False),
    "isinf": (NUMERIC, gen(), np.isinf, False),
    "isnan": (NUMERIC, gen(), np.isnan, False),
    "log": (FLOATING, gen(0.01, 100, complex_range=(-3, 3)), np.log, True),
    "log1p": (FLOATING, gen(-0.99, 10, complex_range=(-3, 3)), np.log1p, True),
    "log2": (FLOATING, gen(0.01, 100, complex_range=(-3, 3)), np.log2, True),
    "log10": (FLOATING, gen(0.01, 100, complex_range=(-3, 3)), np.log10, True),
    "logical_not": (BOOLEAN, gen(), np.logical_not, False),
    "negative": (("signed integer", "real floating", "complex floating"), small_ints, np.negative, False),
    "positive": (NUMERIC, gen(-100, 100), np.positive, False),
    "real": (NUMERIC, gen(-100, 100), np.real, False),
    "reciprocal": (FLOATING, gen(nonzero=True), np.reciprocal, False),
    "round": (NUMERIC, gen(-100, 100), np.round, False),
    "sign": (NUMERIC, gen(-100, 100, nonzero=False), np.sign, False),
    "signbit": (REAL_FLOATING, gen(), np.signbit, False),
    "sin": (FLOATING, gen(-10, 10, complex_range=(-3, 3)), np.sin, True),
    "sinh": (FLOATING, gen(-10, 10, complex_range=(-3, 3)), np.sinh, True),
    "sqrt": (FLOATING, gen(0, 100, complex_range=(-10, 10)), np.sqrt, True),
    "square": (NUMERIC, small_ints, np.square, False),
    "tan": (FLOATING, gen(-1.4, 1.4, complex_range=(-1.5, 1.5)), np.tan, True),
    "tanh": (FLOATING, gen(-10, 10, complex_range=(-1.5, 1.5)), np.tanh, True),
    "trunc": (REAL_NUMERIC, gen(), np.trunc, False),
}


def _shift_amount(rng, shape, dtype):
    bits = np.dtype(dtype).itemsize * 8
    return rng.integers(0, bits - 5, size=shape, endpoint=True).astype(dtype)


def _shift_base(rng, shape, dtype):
    return rand(rng, shape, dtype, -8, 15)


def _right_shift_base(rng, shape, dtype):
    return rand(rng, shape, dtype, -(2**62), 2**62)


def _right_shift_amount(rng, shape, dtype):
    bits = np.dtype(dtype).itemsize * 8
    return rng.integers(0, bits - 1, size=shape, endpoint=True).astype(dtype)


def _pow_base(rng, shape, dtype):
    k = np.dtype(dtype).kind
    if k in "iu":
        return rand(rng, shape, dtype, -4, 4)
    if k == "c":
        return rand_nonzero(rng, shape, dtype, -2, 2, eps=0.3)
    return rand(rng, shape, dtype, 0.1, 5)


def _pow_exp(rng, shape, dtype):
    k = np.dtype(dtype).kind
    if k in "iu":
        return rand(rng, shape, dtype, 0, 3)
    return rand(rng, shape, dtype, -3, 3)


def _sub_first(rng, shape, dtype):
    if np.dtype(dtype).kind == "u":
        return rand(rng, shape, dtype, 12, 40)
    return small_ints(rng, shape, dtype)


nonzero = gen(nonzero=True)

# name: (category, generator of x1, generator of x2, NumPy oracle, loose tolerance)
def floor_divide_oracle(a, b):
    """NumPy's floor_divide, but with the standard's special cases for one infinite operand,
    where NumPy differs: inf // finite is a signed inf, finite // inf a signed zero."""
    out = np.floor_divide(a, b)
    if np.asarray(a).dtype.kind == "f":
        one_inf = (np.isinf(a) & np.isfinite(b)) | (np.isfinite(a) & np.isinf(b))
        out = np.where(one_inf, np.divide(a, b), out)
    return out


BINARY = {
    "add": (NUMERIC, small_ints, small_ints, np.add, False),
    "atan2": (REAL_FLOATING, gen(), gen(), np.arctan2, True),
    "bitwise_and": (INT_OR_BOOL, gen(-100, 100), gen(-100, 100), np.bitwise_and, False),
    "bitwise_left_shift": (INTEGER, _shift_base, _shift_amount, np.left_shift, False),
    "bitwise_or": (INT_OR_BOOL, gen(-100, 100), gen(-100, 100), np.bitwise_or, False),
    "bitwise_right_shift": (INTEGER, _right_shift_base, _right_shift_amount, np.right_shift, False),
    "bitwise_xor": (INT_OR_BOOL, gen(-100, 100), gen(-100, 100), np.bitwise_xor, False),
    "copysign": (REAL_FLOATING, gen(), gen(), np.copysign, False),
    "divide": (NUMERIC, gen(), nonzero, np.divide, False),
    "equal": (ALL, ties, ties, np.equal, False),
    "floor_divide": (REAL_NUMERIC, gen(-100, 100), nonzero, floor_divide_oracle, True),
    "greater": (REAL_NUMERIC, ties, ties, np.greater, False),
    "greater_equal": (REAL_NUMERIC, ties, ties, np.greater_equal, False),
    "hypot": (REAL_FLOATING, gen(), gen(), np.hypot, False),
    "less": (REAL_NUMERIC, ties, ties, np.less, False),
    "less_equal": (REAL_NUMERIC, ties, ties, np.less_equal, False),
    "logaddexp": (REAL_FLOATING, gen(), gen(), np.logaddexp, True),
    "logical_and": (BOOLEAN, gen(), gen(), np.logical_and, False),
    "logical_or": (BOOLEAN, gen(), gen(), np.logical_or, False),
    "logical_xor": (BOOLEAN, gen(), gen(), np.logical_xor, False),
    "maximum": (REAL_NUMERIC, ties, gen(), np.maximum, False),
    "minimum": (REAL_NUMERIC, ties, gen(), np.minimum, False),
    "multiply": (NUMERIC, small_ints, small_ints, np.multiply, False),
    "nextafter": (REAL_FLOATING, gen(), gen(), np.nextafter, False),
    "not_equal": (ALL, ties, ties, np.not_equal, False),
    "pow": (NUMERIC, _pow_base, _pow_exp, np.power, True),
    "remainder": (REAL_NUMERIC, gen(-100, 100), nonzero, np.remainder, True),
    "subtract": (NUMERIC, _sub_first, small_ints, np.subtract, False),
}

FLOAT_FROM_INT = {"divide"}
# absolute error scales with the inputs (|x| <= 100), not with the (possibly tiny) result
ATOL = {"remainder": {"float32": 1e-4, "float64": 1e-12}}


def _tols(name, dt):
    if name == "nextafter":
        return dict(rtol=0, atol=0)
    atol = ATOL.get(name, {}).get(np.dtype(dt).name)
    return {} if atol is None else dict(atol=atol)   # integer inputs give the default real floating dtype (NumPy 2)


def expected_dtype(device, name, oracle, *host):
    """The standard's result dtype, read off NumPy on the *native* input dtypes."""
    if name in FLOAT_FROM_INT and all(a.dtype.kind in "iu" for a in host):
        return default(device, "real floating")
    with np.errstate(all="ignore"):
        return oracle(*host).dtype


def oracle_value(name, oracle, *host):
    with np.errstate(all="ignore"):
        if name == "nextafter":           # exact at the input precision
            return oracle(*host)
        return oracle(*[host64(a) for a in host])


def test_tables_cover_the_standard():
    from ruda.backends import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY
    assert set(UNARY) == set(ELEMENTWISE_UNARY)
    assert set(BINARY) == set(ELEMENTWISE_BINARY)
    for name in list(UNARY) + list(BINARY):
        assert callable(getattr(xp, name)), name


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 5), layout=layouts)
def test_unary(device, name, data, seed, shape, layout):
    kinds, make, oracle, loose = UNARY[name]
    dt = data.draw(dtypes(device, kinds), label="dtype")
    a = make(np.random.default_rng(seed), shape, dt)
    x, a = view(xp.asarray(a, device=device), a, layout)
    res = getattr(xp, name)(x)
    assert res.device == device
    assert_result(res, oracle_value(name, oracle, a), dtype=expected_dtype(device, name, oracle, a),
                  loose=loose)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data(), seed=seeds, shapes=broadcastable_pair(), layout=layouts)
def test_binary(device, name, data, seed, shapes, layout):
    kinds, make1, make2, oracle, loose = BINARY[name]
    dt = data.draw(dtypes(device, kinds), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = make1(rng, shapes[0], dt), make2(rng, shapes[1], dt)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    va, vb = view(x, a, layout), view(y, b, layout)
    for (x_, a_), (y_, b_) in ((va, vb), (va, (y, b)), ((x, a), vb), ((x, a), (y, b))):
        try:
            np.broadcast_shapes(a_.shape, b_.shape)
        except ValueError:
            continue
        x, a, y, b = x_, a_, y_, b_
        break
    res = getattr(xp, name)(x, y)
    assert res.device == device
    assert_result(res, oracle_value(name, oracle, a, b), dtype=expected_dtype(device, name, oracle, a, b),
                  loose=loose, **_tols(name, dt))


def _py_scalar(value, dtype):
    k = np.dtype(dtype).kind
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[k](value)


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data(), seed=seeds, shape=shapes(0, 2, 1, 5), scalar_first=st.booleans())
def test_binary_python_scalar(device, name, data, seed, shape, scalar_first):
    """x1 <op> scalar and scalar <op> x2 with a scalar of the array's kind: the array's dtype wins."""
    kinds, make1, make2, oracle, loose = BINARY[name]
    dt = data.draw(dtypes(device, kinds), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = make1(rng, shape, dt), make2(rng, (), dt)
    if scalar_first:                       # scalar is x1: draw it from x1's generator
        a, b = make1(rng, (), dt), make2(rng, shape, dt)
        s = _py_scalar(a.item(), dt)
        res = getattr(xp, name)(s, xp.asarray(b, device=device))
        host = (np.asarray(s, dtype=dt), b)
    else:
        s = _py_scalar(b.item(), dt)
        res = getattr(xp, name)(xp.asarray(a, device=device), s)
        host = (a, np.asarray(s, dtype=dt))
    assert_result(res, oracle_value(name, oracle, *host), dtype=expected_dtype(device, name, oracle, *host),
                  loose=loose, **_tols(name, dt))


SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5, 1e-30, 1e30]


@pytest.mark.parametrize("name", sorted(n for n, s in UNARY.items() if "real floating" in s[0]))
def test_unary_special_values(device, name):
    """NaN, +-inf, +-0 and edge values follow the standard's special cases (as NumPy does)."""
    kinds, make, oracle, loose = UNARY[name]
    for dt in supported(device, "real floating"):
        a = np.asarray(SPECIAL, dtype=dt)
        res = getattr(xp, name)(xp.asarray(a, device=device))
        exp = oracle_value(name, oracle, a)
        if exp.dtype.kind == "f":
            exp = exp.astype(dt)   # overflow/underflow at the input precision
        assert_result(res, exp, dtype=expected_dtype(device, name, oracle, a), loose=True)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "pow", "maximum", "minimum",
                                  "atan2", "hypot", "copysign", "logaddexp", "equal", "not_equal",
                                  "less", "less_equal", "greater", "greater_equal",
                                  "remainder", "floor_divide", "nextafter"])
def test_binary_special_values(device, name):
    kinds, *_, oracle, loose = BINARY[name]
    for dt in supported(device, "real floating"):
        grid = np.asarray([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.0, -1.0], dtype=dt)
        a, b = np.meshgrid(grid, grid)
        res = getattr(xp, name)(xp.asarray(a, device=device), xp.asarray(b, device=device))
        exp = oracle_value(name, oracle, a, b)
        if exp.dtype.kind == "f":
            exp = exp.astype(dt)
        assert_result(res, exp, dtype=expected_dtype(device, name, oracle, a, b), loose=True)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 5), which=st.sampled_from(["both", "min", "max"]),
       scalar_bounds=st.booleans())
def test_clip(device, data, seed, shape, which, scalar_bounds):
    dt = data.draw(dtypes(device, REAL_NUMERIC), label="dtype")
    rng = np.random.default_rng(seed)
    x = rand(rng, shape, dt, -50, 50)
    if scalar_bounds:
        lo, hi = sorted(rand(rng, (2,), dt, -40, 40).tolist())
        lo_r, hi_r = lo, hi
    else:
        bshape = shape[1:]
        lo = rand(rng, bshape, dt, -40, 0)
        hi = rand(rng, bshape, dt, 0, 40)
        lo_r, hi_r = xp.asarray(lo, device=device), xp.asarray(hi, device=device)
    kw = {"both": dict(min=lo_r, max=hi_r), "min": dict(min=lo_r), "max": dict(max=hi_r)}[which]
    res = xp.clip(xp.asarray(x, device=device), **kw)
    exp = np.clip(x, lo if which != "max" else None, hi if which != "min" else None)
    assert_result(res, exp.astype(dt), dtype=dt)


def test_clip_no_bounds_and_int_float_bound(device):
    rng = np.random.default_rng(7)
    dt = need(device, xp.int32) if xp.int32 in supported(device) else None
    x = rand(rng, (20,), dt, -50, 50)
    assert_result(xp.clip(xp.asarray(x, device=device)), x, dtype=dt)
    # a float bound on an integer array is rounded inward; the dtype stays int32
    res = xp.clip(xp.asarray(x, device=device), min=-10.5, max=10.5)
    assert_result(res, np.clip(x, -10, 10).astype(dt), dtype=dt)


def test_clip_integer_x_with_bounds_of_other_dtypes(device):
    """Array bounds of another dtype act as the scalar bounds do: held to x's range (int8 x at an
    int16 200 is 127 everywhere, not the wrapped -56) and float bounds rounded inward."""
    x = np.asarray([-120, -5, 0, 3, 7, 100, 127], np.int8)
    X = xp.asarray(x, device=device)
    info = np.iinfo(np.int8)
    for lo, hi in [(np.int16(200), None), (None, np.int16(-200)), (np.int16(-300), np.int16(50)),
                   (np.uint8(200), None), (None, np.uint8(5)), (np.float32(-7.5), np.float32(90.5)),
                   (np.float32(1e6), None), (None, np.float32(-1e6))]:
        if any(b is not None and b.dtype not in supported(device) for b in (lo, hi)):
            continue
        got = xp.clip(X, *(None if b is None else xp.asarray(b, device=device) for b in (lo, hi)))
        wide = np.clip(x.astype(np.float64), None if lo is None else np.ceil(float(lo)),
                       None if hi is None else np.floor(float(hi)))
        assert_result(got, np.clip(wide, info.min, info.max).astype(np.int8), dtype=xp.int8)


@pytest.mark.parametrize("name", ["add", "multiply", "less", "logaddexp", "maximum"])
def test_binary_broadcast_shapes_error(device, name):
    dt = supported(device, "real floating")[0]
    a = xp.asarray(rand(np.random.default_rng(1), (2, 3), dt), device=device)
    b = xp.asarray(rand(np.random.default_rng(2), (4,), dt), device=device)
    with pytest.raises(ValueError, match=rf"ruda\.{name}.*\(2, 3\).*\(4,\)"):
        getattr(xp, name)(a, b)


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "abs", "conj", "real", "imag", "sign"])
def test_complex_special_values(device, name):
    """Classification and magnitude of complex numbers with NaN/inf parts follow the standard."""
    kinds, make, oracle, loose = UNARY[name]
    parts = [math.nan, math.inf, -math.inf, 0.0, 1.5]
    for dt in supported(device, "complex floating"):
        re, im = np.meshgrid(parts, parts)
        a = (re + 0j).astype(dt)
        a.imag = im
        if name == "sign":                       # sign is specified for finite inputs only
            a = a[np.isfinite(a)]
        res = getattr(xp, name)(xp.asarray(a, device=device))
        exp = oracle_value(name, oracle, a)
        assert_result(res, exp.astype(res.dtype) if exp.dtype.kind in "fc" else exp,
                      dtype=expected_dtype(device, name, oracle, a))


@pytest.mark.parametrize("name", ["log", "log2", "log10", "log1p"])
def test_float32_logs_near_one(device, name):
    """float32 logs where the result is small (x near 1; log1p over (-0.6, 2)): a few ulp, not the
    absolute error bound of a driver's builtin (wgpu's log2 builtin was 1049 ulp off at 0.999)."""
    rng = np.random.default_rng(24)
    x = np.concatenate([rng.uniform(0.5, 2.0, 4000), 1 + rng.uniform(-1e-3, 1e-3, 1000)]).astype(np.float32)
    if name == "log1p":
        x = (x - 1).astype(np.float32)
    want = getattr(np, name)(x.astype(np.float64))
    keep = want != 0
    got = to_numpy(getattr(xp, name)(xp.asarray(x, device=device)))
    assert got.dtype == np.float32
    ulps = np.abs(got[keep] - want[keep]) / np.spacing(np.abs(want[keep]).astype(np.float32))
    assert ulps.max() < 4, (x[keep][np.argmax(ulps)], ulps.max())


def test_logaddexp_small_results(device):
    """logaddexp(-d, 0) = log1p(exp(-d)) is small for large d: accurate to a few ulp, not to the
    absolute error of a float32 log near 1 (which a WGSL builtin may have)."""
    exact = np.float64 in [np.dtype(d).type for d in supported(device, "real floating")]
    for dt in supported(device, "real floating"):
        a = -np.linspace(0.5, 40, 200).astype(dt)
        res = xp.logaddexp(xp.asarray(a, device=device), xp.asarray(np.zeros_like(a), device=device))
        rtol = 8 * np.finfo(dt).eps if exact else 5e-5
        assert_result(res, np.logaddexp(a.astype(np.float64), 0.0), dtype=dt, rtol=rtol, atol=0)


def test_pow_float64_within_ulps_and_exact(device):
    """float64 pow to 3 ulp of NumPy (exp(y log x) in plain f64 was 890 ulp off); exact where the
    result is representable (3.0 ** 2 was 8.999999999999998), overflow to inf, underflow to 0
    (on cuda, CUDA's pow: within 2 ulp there)."""
    need(device, xp.float64)
    rng = np.random.default_rng(41)
    n = 4000
    x = np.concatenate([rng.uniform(0, 1e3, n), 10.0 ** rng.uniform(-300, 300, n), rng.uniform(0.5, 2, n),
                        -rng.uniform(0.1, 20, n)])
    y = np.concatenate([rng.uniform(-50, 50, n), rng.uniform(-1, 1, n), rng.uniform(-1000, 1000, n),
                        rng.integers(-40, 41, n).astype(np.float64)])
    got = to_numpy(xp.pow(xp.asarray(x, device=device), xp.asarray(y, device=device)))
    want = np.power(x, y)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 3, (x[np.argmax(ulps)], y[np.argmax(ulps)], ulps.max())
    ints = rng.integers(-1000, 1001, 500).astype(np.float64)
    k = np.arange(-1074.0, 1024.0)
    base = np.concatenate([ints, ints, np.full(k.size, 2.0), np.full(23, 10.0),
                           [2.0, -2.0, 10.0, 1e300, 1e-300, 0.5, 2.0]])
    expo = np.concatenate([np.full(500, 2.0), np.full(500, 3.0), k, np.arange(23.0),
                           [1024.0, 1025.0, 309.0, 2.0, 2.0, 1075.0, -1075.0]])
    exact = np.concatenate([ints * ints, ints * ints * ints, np.ldexp(1.0, k.astype(int)),
                            [float(10**i) for i in range(23)], [np.inf, -np.inf, np.inf, np.inf, 0.0, 0.0, 0.0]])
    with np.errstate(over="ignore", under="ignore"):
        got = to_numpy(xp.pow(xp.asarray(base, device=device), xp.asarray(expo, device=device)))
    if device.kind == "cuda":      # CUDA's own pow (CuPy's): 2 ulp, exact powers not promised
        with np.errstate(invalid="ignore"):
            bad = ~((got == exact) | (np.abs(got - exact) <= 2 * np.spacing(np.abs(exact))))
        assert not bad.any(), list(zip(base[bad], expo[bad], got[bad]))[:5]
        return
    bad = got != exact
    assert not bad.any(), list(zip(base[bad], expo[bad], got[bad]))[:5]
    a = xp.asarray([3.0, 10.0, 2.0], device=device)
    assert to_numpy(a ** 2).tolist() == [9.0, 100.0, 4.0] and to_numpy(a ** 3.0).tolist() == [27.0, 1000.0, 8.0]


def test_float64_trig_of_huge_arguments(device):
    """float64 sin, cos, tan for |x| from 2^19 to 2^1023 (the Payne-Hanek reduction), near
    multiples of pi/2 too, where the result is the small remainder: within 4 ulp of mpmath
    (a float double-double reduction had lost its low part to the shader compiler: sin(2^20 pi)
    was -1.2841355e-10, not -1.2841352e-10; tan was 4 ulp off for a third of the inputs)."""
    mpmath = pytest.importorskip("mpmath")
    need(device, xp.float64)
    rng = np.random.default_rng(19)
    x = [np.ldexp(1.0, 20) * np.pi, 1474135.8040292459, 6381956970095103 * 2.0 ** 797, 2.0 ** 19,
         -2.0 ** 19 * 1.5, 1e22, 2.0 ** 1000, float(np.finfo(np.float64).max)]
    x += (np.exp2(rng.uniform(19, 1023.9, 150)) * rng.choice([-1, 1], 150)).tolist()
    with mpmath.workprec(1200):
        # nearest doubles to k pi/2 for large k (odd k: tan near its poles)
        for e in rng.integers(20, 1000, 120).tolist():
            k = int(rng.integers(2**52, 2**53)) << max(e - 53, 0)
            x.append(float(mpmath.mpf(k) * mpmath.pi / 2))
        want = {f: np.array([float(getattr(mpmath, f)(mpmath.mpf(v))) for v in x]) for f in ("sin", "cos", "tan")}
    x = np.array(x)
    # NumPy's own AVX-512 cos (the cpu device) is 8 ulp off at 6381956970095103 * 2^797
    tol = 8 if device.kind == "cpu" else 4
    for f, w in want.items():
        got = to_numpy(getattr(xp, f)(xp.asarray(x, device=device)))
        assert got.dtype == np.float64
        ulps = np.abs(got - w) / np.spacing(np.abs(w))
        assert ulps.max() <= tol, (f, x[np.argmax(ulps)], got[np.argmax(ulps)], w[np.argmax(ulps)], ulps.max())


@pytest.mark.parametrize("name", ["tanh", "tan"])
def test_complex_tanh_tan_near_poles(device, name):
    """tanh near i*pi/2 (tan near pi/2), where cosh(2x) + cos(2y) cancels: to a few ulp of |result|."""
    rng = np.random.default_rng(22)
    near, off = np.pi / 2 + rng.uniform(-1e-2, 1e-2, 300), rng.uniform(-3e-2, 3e-2, 300)
    for dt in supported(device, "complex floating"):
        z = (off + 1j * near if name == "tanh" else near + 1j * off).astype(dt)
        want = getattr(np, name)(z.astype(np.complex128))
        got = to_numpy(getattr(xp, name)(xp.asarray(z, device=device)))
        assert got.dtype == dt
        err = np.abs(got - want) / np.abs(want)
        assert err.max() < 16 * np.finfo(dt).eps, (np.dtype(dt).name, z[np.argmax(err)], err.max())


def _near_unit_circle(dt):
    """Complex values with |z| within 1% of 1, and log z from exact decimal arithmetic."""
    from decimal import Decimal, localcontext
    rng = np.random.default_rng(23)
    delta, theta = rng.uniform(-1e-2, 1e-2, 200), rng.uniform(-5e-2, 5e-2, 200)
    z = ((1 + delta) * np.exp(1j * theta)).astype(dt)
    with localcontext() as ctx:
        ctx.prec = 40
        re = [float((Decimal(float(v.real)) ** 2 + Decimal(float(v.imag)) ** 2).ln() / 2) for v in z]
    return z, np.asarray(re) + 1j * np.arctan2(z.imag.astype(np.longdouble), z.real.astype(np.longdouble))


def _assert_near(got, want, dt):
    assert got.dtype == dt
    err = np.abs(got.astype(np.clongdouble) - want) / np.abs(want)
    assert err.max() < 8 * np.finfo(dt).eps, (np.dtype(dt).name, np.argmax(err), err.max())


def test_complex_log_near_the_unit_circle(device):
    """log z for |z| near 1, where log|z| = log(hypot) loses the digits of a small real part:
    to a few ulp of |result|."""
    for dt in supported(device, "complex floating"):
        z, want = _near_unit_circle(dt)
        _assert_near(to_numpy(xp.log(xp.asarray(z, device=device))), want, dt)


def test_complex_log_mends_a_module_taking_log_hypot():
    """cuda's complex log (_numpylike.complex_log) on a stand-in module whose log is
    log(hypot) + i atan2, as CuPy's may be: the digits come back."""
    from ruda.backends._numpylike import complex_log
    naive = types.SimpleNamespace(**{n: getattr(np, n) for n in ("maximum", "minimum", "hypot", "log1p", "where",
                                                                   "asarray", "copyto")})
    naive.log = lambda x: (np.log(np.hypot(x.real, x.imag)) + 1j * np.arctan2(x.imag, x.real)).astype(x.dtype)
    for dt in (np.complex64, np.complex128):
        z, want = _near_unit_circle(dt)
        with pytest.raises(AssertionError):
            _assert_near(naive.log(z), want, dt)
        _assert_near(complex_log(naive)(z), want, dt)


@pytest.mark.parametrize("name", ["log1p", "expm1"])
def test_complex_log1p_expm1_near_zero(device, name):
    """Complex log1p / expm1 for |z| from 1e-9 to 0.4 to a few ulp of |result| (log(1 + z) and
    exp(z) - 1 lose all digits near 0), against formulas evaluated in long double."""
    rng = np.random.default_rng(21)
    mag = 10.0 ** rng.uniform(-9, np.log10(0.4), 400)
    ang = rng.uniform(-np.pi, np.pi, 400)
    for dt in supported(device, "complex floating"):
        z = (mag * np.exp(1j * ang)).astype(dt)
        x, y = z.real.astype(np.longdouble), z.imag.astype(np.longdouble)
        if name == "log1p":
            want = 0.5 * np.log1p(x * (2 + x) + y * y) + 1j * np.arctan2(y, 1 + x)
        else:
            want = np.expm1(x) * np.cos(y) - 2 * np.sin(y / 2) ** 2 + 1j * np.exp(x) * np.sin(y)
        got = to_numpy(getattr(xp, name)(xp.asarray(z, device=device)))
        assert got.dtype == dt
        err = np.abs(got.astype(np.clongdouble) - want) / np.abs(want)
        assert err.max() < 8 * np.finfo(dt).eps, (np.dtype(dt).name, z[np.argmax(err)], err.max())


def _complex(pairs, dt):
    z = np.zeros(len(pairs), dt)
    z.real, z.imag = [p[0] for p in pairs], [p[1] for p in pairs]
    return z


def _within_ulps(got, want, dt, ulps):
    """Each part of ``got`` within ``ulps`` of the exact complex ``want`` (Python complex numbers)
    rounded to ``dt``; a zero part with the sign of ``want``'s."""
    for g, w in zip(got.tolist(), want):
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            with np.errstate(over="ignore"):
                wr = np.asarray(wp, dtype=np.dtype(dt).char.lower())
            if wr == 0 or np.isinf(wr):
                assert gp == wr and math.copysign(1, gp) == math.copysign(1, wr), (got, want)
            else:
                assert abs(gp - wp) <= ulps * np.spacing(abs(wr)), (g, w)


def test_complex_sign_scales_subnormal_and_huge_values(device):
    """Complex sign x / |x| to 2 ulp (mpmath) where |x| is subnormal or near overflow (x / |x|
    gave inf, NaN or lost digits there: sign(3e-320 + 4e-320j) was inf + inf j on cpu);
    sign(0) is 0 and a NaN part gives NaN + NaN j."""
    mpmath = pytest.importorskip("mpmath")
    for dt in supported(device, "complex floating"):
        fi = np.finfo(dt)
        sub, tiny, big = float(fi.smallest_subnormal), float(fi.tiny), float(fi.max)
        pairs = [(tiny, -tiny), (big, big), (-big, big / 3), (big, tiny),
                 (big / 2, -big / 2), (1.5, -2.0), (-3e-30, 4e-30)]
        if not flushes_subnormals(device):
            pairs += [(tiny / 2**20, tiny), (-sub, sub), (3 * sub, 4 * sub), (3 * 2**20 * sub, 4 * 2**20 * sub), (sub, 0.0),
                      (0.0, -sub), (tiny / 3, 2 * sub), (-5 * sub, -0.0)]
        z = _complex(pairs, dt)
        got = xp.sign(xp.asarray(z, device=device))
        assert got.dtype == dt
        with mpmath.workprec(200):
            want = [complex(v / abs(v)) for v in map(mpmath.mpc, z.tolist())]
        # each part with the sign of x's (mpmath has no -0)
        want = [complex(math.copysign(abs(w.real), c.real), math.copysign(abs(w.imag), c.imag))
                for w, c in zip(want, z.tolist())]
        _within_ulps(to_numpy(got), want, dt, 2)
        zeros = to_numpy(xp.sign(xp.asarray(_complex([(0.0, 0.0), (-0.0, -0.0)], dt), device=device)))
        assert (zeros == 0).all()
        nans = to_numpy(xp.sign(xp.asarray(_complex([(math.nan, 1.0), (1e-30, math.nan)], dt),
                                           device=device)))
        assert np.isnan(nans.real).all() and np.isnan(nans.imag).all()


def test_complex_expm1_special_cases(device):
    """Complex expm1 at the standard's special cases, with its conjugate symmetry
    (expm1(0 - 0j) is 0 - 0j: the cpu gave +0j), and where e^a overflows for finite x
    (inf * cis(b) - 1: expm1(1.8e308 + 51.2j) was NaN + inf j on cpu)."""
    mpmath = pytest.importorskip("mpmath")
    inf, nan = math.inf, math.nan
    # (a, b, real, imag): None where the standard leaves the sign unspecified
    special = [(0.0, 0.0, 0.0, 0.0), (-0.0, 0.0, 0.0, 0.0), (0.0, -0.0, 0.0, -0.0),
               (-0.0, -0.0, 0.0, -0.0), (1.5, inf, nan, nan), (1.5, nan, nan, nan),
               (0.0, -inf, nan, nan), (inf, 0.0, inf, 0.0), (inf, -0.0, inf, -0.0),
               (-inf, 1.5, -1.0, 0.0), (-inf, -1.5, -1.0, -0.0), (-inf, 3.0, -1.0, 0.0),
               (-inf, -0.0, -1.0, -0.0), (inf, 1.5, inf, inf), (inf, 3.0, -inf, inf),
               (inf, -1.5, inf, -inf), (-inf, inf, -1.0, None), (inf, inf, None, nan),
               (-inf, nan, -1.0, None), (inf, nan, None, nan), (nan, 0.0, nan, 0.0),
               (nan, -0.0, nan, -0.0), (nan, 1.5, nan, nan), (nan, nan, nan, nan)]
    for dt in supported(device, "complex floating"):
        got = to_numpy(xp.expm1(xp.asarray(_complex(special, dt), device=device)))
        assert got.dtype == dt
        for g, (a, b, re, im) in zip(got.tolist(), special):
            for gp, wp in ((g.real, re), (g.imag, im)):
                if wp is None:      # unspecified sign: +-0 beside -1, +-inf beside NaN
                    assert (gp == 0) if im is None else np.isinf(gp), (a, b, g)
                elif math.isnan(wp):
                    assert math.isnan(gp), (a, b, g)
                else:
                    assert gp == wp and math.copysign(1, gp) == math.copysign(1, wp), (a, b, g)
        big = float(np.finfo(dt).max)
        finite = [(big, 51.2), (big, -2.0), (1e-3, -0.0), (1e-3, 0.0), (-0.0, 1e-5), (-100.0, -1.5),
                  (100.0, 1e-30)] + ([(1000.0, 1e-300), (710.0, -2.0)] if dt == np.complex128 else
                                     [(89.0, -2.0)])
        z = _complex(finite, dt)
        with mpmath.workprec(200):
            want = [complex(mpmath.expm1(mpmath.mpc(c))) for c in z.tolist()]
        want = [complex(w.real, c.imag if c.imag == 0 else w.imag) for w, c in zip(want, z.tolist())]
        if flushes_subnormals(device):      # a subnormal part (e^-100 sin -1.5 in float32) is 0
            tiny = float(np.finfo(dt).tiny)
            flush = lambda v: math.copysign(0.0, v) if abs(v) < tiny else v    # noqa: E731
            want = [complex(flush(w.real), flush(w.imag)) for w in want]
        _within_ulps(to_numpy(xp.expm1(xp.asarray(z, device=device))), want, dt, 4)


@pytest.mark.parametrize("name", ["equal", "not_equal"])
def test_complex_equality_special_values(device, name):
    """A complex number with a NaN part equals nothing, itself included (naga once rendered != as
    an ordered compare, so NaN != NaN was false on wgpu)."""
    parts = [math.nan, math.inf, -0.0, 0.0, 1.5]
    for dt in supported(device, "complex floating"):
        re, im = np.meshgrid(parts, parts)
        a = re.astype(dt)
        a.imag = im
        x, y = np.meshgrid(a.ravel(), a.ravel())
        assert np.isnan(x).any() and np.isinf(x).any() and not np.isnan(x).all()
        res = getattr(xp, name)(xp.asarray(x, device=device), xp.asarray(y, device=device))
        assert_result(res, getattr(np, name)(x, y))


def _assert_exactly_numpy(device, name, a, b):
    """``name`` on device operands equals NumPy's result bit for bit; names the first mismatches."""
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    got = np.asarray(getattr(xp, name)(xp.asarray(a, device=device), xp.asarray(b, device=device))
                     .to_device("cpu"))
    assert got.dtype == want.dtype
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (a.dtype.name, [(a[i], b[i], got[i], want[i]) for i in bad[:5]])


def test_divide_and_sqrt_are_correctly_rounded(device):
    """IEEE 754's divide and sqrt, bit for bit NumPy's on normal-range values of every real float
    dtype: NVIDIA's Vulkan driver divides float32 approximately (1 ulp off now and then), and
    gives 0 for divisors past 2^126 (WGSL promises its 2.5 ulp only below)."""
    rng = np.random.default_rng(14)
    for dt in supported(device, "real floating"):
        a, b = (10.0 ** rng.uniform(-15, 15, 20000) * rng.choice([-1, 1], 20000) for _ in range(2))
        _assert_exactly_numpy(device, "divide", a.astype(dt), b.astype(dt))
        if dt == xp.float32:
            huge = rng.uniform(2.0 ** 126, 3.4e38, 2000) * rng.choice([-1, 1], 2000)
            _assert_exactly_numpy(device, "divide", (10.0 ** rng.uniform(0, 30, 2000)).astype(dt), huge.astype(dt))
        x = np.abs(a).astype(dt)
        got = np.asarray(xp.sqrt(xp.asarray(x, device=device)).to_device("cpu"))
        bad = np.nonzero(got != np.sqrt(x))[0]
        assert bad.size == 0, (x.dtype.name, [(x[i], got[i]) for i in bad[:5]])


def test_divisors_past_2_126_in_float32(device):
    """hypot, floor_divide and remainder whose float32 divisor exceeds 2^126 (NVIDIA's Vulkan
    division returns 0 there: hypot(3e38, 3e38) was 3e38, floor_divide(inf, 3.3e38) NaN).
    hypot and remainder against NumPy; floor_divide of an infinite x1 by a finite x2 is the
    standard's +-infinity (NumPy's NaN)."""
    a = np.array([3.3e38, -3e38, 3e38, 7.0, 1e30, -1e30, math.inf, -math.inf], np.float32)
    b = np.array([3e38, 3.3e38, 1e30, 3.3e38, 3e38, 3.3e38, 3.3e38, 3e38], np.float32)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(to_numpy(xp.hypot(x, y)), np.hypot(a, b))
        np.testing.assert_array_equal(to_numpy(xp.remainder(x, y))[:6], np.remainder(a, b)[:6])
        want = np.floor_divide(a, b)
    want[6:] = [math.inf, -math.inf]
    np.testing.assert_array_equal(to_numpy(xp.floor_divide(x, y)), want)


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_integer_division_over_the_whole_range(device, name):
    """Every integer dtype, operands across the whole range with the edges (MIN, MAX, -1, 0, +-1..3)
    against NumPy: a driver's integer division once gave off-by-one quotients (NVIDIA, Vulkan)."""
    rng = np.random.default_rng(11)
    for dt in xp.__array_namespace_info__().dtypes(device=device, kind="integral").values():
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 20000, dtype=dt, endpoint=True)
        b = rng.integers(info.min, info.max, 20000, dtype=dt, endpoint=True)
        b[:400] = rng.integers(-3 if info.min < 0 else 0, 4, 400).astype(dt)
        a[:50], a[50:100] = info.min, info.max
        if info.min < 0:
            b[:25] = -1
        _assert_exactly_numpy(device, name, a, b)


@pytest.mark.parametrize("name", ["floor_divide", "remainder"])
def test_float_division_exact_at_any_quotient(device, name):
    """Float remainder is C's fmod made floor-signed, exact even where the quotient has more digits
    than the dtype (1e30 % 7 is 1.0); floor_divide follows it: both bit for bit NumPy's."""
    rng = np.random.default_rng(13)
    for dt in supported(device, "real floating"):
        fi = np.finfo(dt)
        big = 10.0 ** rng.uniform(-30, 30, (2, 3000)) * rng.choice([-1, 1], (2, 3000))
        a = np.concatenate([rng.uniform(-10, 10, 3000), big[0], [1e30, -1e30, fi.max, 0.3]]).astype(dt)
        tiny = fi.smallest_normal if flushes_subnormals(device) else fi.smallest_subnormal
        b = np.concatenate([rng.uniform(-10, 10, 3000), big[1], [7.0, 7.0, tiny * 3, 0.1]]).astype(dt)
        _assert_exactly_numpy(device, name, a, b)
        with np.errstate(all="ignore"):
            want = getattr(np, name)(a, b)
        got = to_numpy(getattr(xp, name)(xp.asarray(a, device=device), xp.asarray(b, device=device)))
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("name", ["bitwise_left_shift", "bitwise_right_shift"])
def test_shift_counts_outside_the_width(device, name):
    """Counts past the width or negative (the standard leaves them open) give NumPy's results:
    0 for left shifts, 0 / the sign fill for right shifts; never the count taken modulo the width."""
    rng = np.random.default_rng(12)
    for dt in xp.__array_namespace_info__().dtypes(device=device, kind="integral").values():
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 4000, dtype=dt, endpoint=True)
        lo = -2 * info.bits if info.min < 0 else 0
        b = rng.integers(lo, min(2 * info.bits, info.max), 4000, dtype=dt, endpoint=True)
        b[:20] = info.max
        if info.min < 0:
            b[20:40] = info.min
        _assert_exactly_numpy(device, name, a, b)


def test_pow_by_one_two_and_minus_one_is_correctly_rounded(device):
    """x ** 1, x ** 2 and x ** -1 are x, x * x and 1 / x bit for bit, special values included (a
    scalar exponent everywhere, an array one on every wgpu adapter: float32 without shader-f64 took
    exp(2 log 3) = 9.00000095)."""
    rng = np.random.default_rng(31)
    for dt in supported(device, "real floating"):
        a = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-15, 15, 200),
                            [3.0, -3.0, 7.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, 1e-30]]).astype(dt)
        x = xp.asarray(a, device=device)
        for p in (1.0, 2.0, -1.0):
            with np.errstate(all="ignore"):
                want = np.power(a, a.dtype.type(p))
            gots = [xp.pow(x, p)]
            if device.kind == "wgpu":       # (NumPy's and CUDA's powf of arrays are within an ulp)
                gots.append(xp.pow(x, xp.full(a.shape, p, dtype=dt, device=device)))
            for got in gots:
                g = to_numpy(got)
                assert g.dtype == want.dtype
                if device.kind == "cuda":   # CUDA's pow: within 2 ulp, special values exact
                    np.testing.assert_allclose(g, want, rtol=2 * np.finfo(dt).eps, atol=0)
                else:
                    np.testing.assert_array_equal(g, want, err_msg=f"{np.dtype(dt).name} ** {p}")
                np.testing.assert_array_equal(np.signbit(g), np.signbit(want), err_msg=f"{np.dtype(dt).name} ** {p}")
