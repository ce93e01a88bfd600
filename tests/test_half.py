"""float16 and bfloat16, the extension dtypes, on every device.

Promotion: one written table (NumPy 2's rule for float16, ml_dtypes 0.7's for bfloat16), checked
here against NumPy and ml_dtypes and against the dtypes each device's operations return.
Values: each operation is compared with NumPy in float64 on the same (half) inputs, rounded to
the half dtype, within one unit in the last place of the half dtype (the operation computes in
float32 and rounds once); reductions and matrix products accumulate in float32, so a long sum
stays within that bound where step-by-step half rounding would not.
"""
import numpy as np
import pytest

import ruda as xp
from conftest import to_numpy

HALVES = ["float16"] + (["bfloat16"] if getattr(xp, "bfloat16", None) is not None else [])
STANDARD = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64", "complex64", "complex128"]
# the written table: what a half dtype gives with each standard dtype
TABLE = {"bool": "half", "int8": "half", "uint8": "half", "int16": "float32", "uint16": "float32",
         "int32": "float64", "uint32": "float64", "int64": "float64", "uint64": "float64",
         "float32": "float32", "float64": "float64", "complex64": "complex64",
         "complex128": "complex128"}
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7}
TINY = {"float16": 2.0**-24, "bfloat16": 1e-38}


def _dt(name):
    return getattr(xp, name)


def _np(name):
    return np.dtype(_dt(name))


def _need(device, name):
    if not device.backend.supports(_np(name)):
        pytest.skip(f"{name} is not supported on {device}{device.backend.unsupported_reason(_np(name))}")


def _half(device, name, a):
    """ruda array of half dtype ``name`` on ``device`` from float64 values, and its exact values."""
    h = np.asarray(a, np.float64).astype(np.float32).astype(_np(name))
    return xp.asarray(h, device=device), h.astype(np.float64)


def _close(got, want64, name, ulps=1.0, err=""):
    """got (a half ruda array) within ``ulps`` half ulps of float64 ``want64`` rounded to the
    half dtype (NaN where want is NaN)."""
    assert got.dtype == _dt(name), (got.dtype, name)
    g = to_numpy(got).astype(np.float64)
    w = np.asarray(want64, np.float64).astype(np.float32).astype(_np(name)).astype(np.float64)
    assert g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=ulps * EPS[name], atol=ulps * TINY[name], equal_nan=True,
                               err_msg=err)


# -------------------------------------------------------------------- promotion and dtype functions

@pytest.mark.parametrize("name", HALVES)
def test_promotion_table(name):
    h = _dt(name)
    for other in STANDARD:
        want = h if TABLE[other] == "half" else _dt(TABLE[other])
        assert xp.result_type(h, _dt(other)) is want, other
        assert xp.result_type(_dt(other), h) is want, other
        if name == "float16":                   # NumPy's own rule
            assert np.promote_types(np.float16, other) == np.dtype(want), other
    assert xp.result_type(h, h) is h
    if len(HALVES) == 2:
        assert xp.result_type(xp.float16, xp.bfloat16) is xp.float32
        assert xp.result_type(xp.bfloat16, xp.float16) is xp.float32
    # Python scalars: bool, int and float keep the half dtype, complex gives complex64
    for s, want in ((True, h), (3, h), (1.5, h), (1j, xp.complex64)):
        assert xp.result_type(h, s) is want, s


@pytest.mark.parametrize("name", HALVES)
def test_inspection_and_kinds(device, name):
    h = _dt(name)
    assert xp.isdtype(h, "real floating") and xp.isdtype(h, "numeric")
    assert not xp.isdtype(h, "integral") and not xp.isdtype(h, "complex floating")
    info = xp.__array_namespace_info__()
    assert name not in info.dtypes(device=device)             # the standard's dtypes only
    assert name not in info.dtypes(device=device, kind="real floating")
    f = xp.finfo(h)
    assert f.bits == 16 and f.eps == EPS[name] and f.dtype is h
    assert xp.can_cast(h, xp.float32) and not xp.can_cast(xp.float32, h)
    assert repr(h) == f"ruda.{name}" and str(h) == name


@pytest.mark.parametrize("name", HALVES)
def test_operations_return_the_table_dtype(device, name):
    _need(device, name)
    x, _ = _half(device, name, [1.0, 2.0, 3.0])
    for other in STANDARD:
        if not device.backend.supports(_np(other)):
            continue
        want = x.dtype if TABLE[other] == "half" else _dt(TABLE[other])
        if not device.backend.supports(np.dtype(want)):
            continue
        y = xp.ones(3, dtype=_dt(other), device=device)
        assert (x + y).dtype is want and (y * x).dtype is want, other
    assert (x + 1).dtype is x.dtype and (2.5 * x).dtype is x.dtype


# -------------------------------------------------------------------- values

# every elementwise function that takes a real floating dtype, with a domain where it is finite
UNARY = {"abs": None, "acos": (-0.9, 0.9), "acosh": (1.1, 4), "asin": (-0.9, 0.9), "asinh": None,
         "atan": None, "atanh": (-0.9, 0.9), "ceil": None, "conj": None, "cos": None, "cosh": None,
         "exp": None, "expm1": None, "floor": None, "log": (0.1, 4), "log10": (0.1, 4),
         "log1p": (0.1, 4), "log2": (0.1, 4), "negative": None, "positive": None, "real": None,
         "reciprocal": None, "round": None, "sign": None, "sin": None, "sinh": None,
         "sqrt": (0.1, 4), "square": None, "tan": (-1.2, 1.2), "tanh": None, "trunc": None}
PREDICATES = ["isfinite", "isinf", "isnan", "signbit"]
BINARY = ["add", "atan2", "copysign", "divide", "floor_divide", "hypot", "logaddexp", "maximum",
          "minimum", "multiply", "pow", "remainder", "subtract"]
COMPARISONS = ["equal", "greater", "greater_equal", "less", "less_equal", "not_equal"]


@pytest.mark.parametrize("name", HALVES)
def test_elementwise(device, name):
    _need(device, name)
    rng = np.random.default_rng(11)
    x, x64 = _half(device, name, rng.uniform(0.1, 4.0, 64) * rng.choice([-1, 1], 64))
    p, p64 = _half(device, name, rng.uniform(0.1, 4.0, 64))
    for fn, dom in UNARY.items():
        a, a64 = (x, x64) if dom is None else _half(device, name, rng.uniform(*dom, 64))
        _close(getattr(xp, fn)(a), getattr(np, fn)(a64), name, err=fn)
    for fn in BINARY:
        a, a64 = (xp.abs(x), np.abs(x64)) if fn == "pow" else (x, x64)
        _close(getattr(xp, fn)(a, p), getattr(np, fn)(a64, p64), name, err=fn)
    s, s64 = _half(device, name, [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0])
    for fn in PREDICATES:
        np.testing.assert_array_equal(to_numpy(getattr(xp, fn)(s)), getattr(np, fn)(s64), err_msg=fn)
    for fn in COMPARISONS:
        np.testing.assert_array_equal(to_numpy(getattr(xp, fn)(x, p)), getattr(np, fn)(x64, p64), err_msg=fn)
    _close(x + 0.5, x64 + 0.5, name)
    _close(xp.where(x > 0, x, p), np.where(x64 > 0, x64, p64), name)
    _close(xp.clip(x, -1.0, 1.0), np.clip(x64, -1.0, 1.0), name)
    if device.kind != "wgpu":        # wgpu: TypeError (test_unsupported_raise_clear_errors)
        got = to_numpy(xp.nextafter(x, p)).astype(np.float64)
        np.testing.assert_array_equal(got, np.nextafter(x64.astype(_np(name)), p64.astype(_np(name))).astype(np.float64))


@pytest.mark.parametrize("name", HALVES)
def test_nextafter_from_infinity(device, name):
    """From +-inf: the largest finite value toward a finite target, the infinity itself toward
    itself, NaN toward NaN, as NumPy (CuPy's float16 nextafter gave NaN for each)."""
    _need(device, name)
    if device.kind == "wgpu":
        pytest.skip("nextafter of half dtypes is a TypeError on wgpu (test_unsupported_raise_clear_errors)")
    x, x64 = _half(device, name, [np.inf, -np.inf, np.inf, -np.inf, np.inf, 1.0])
    y, y64 = _half(device, name, [0.0, 0.0, np.inf, -np.inf, np.nan, 2.0])
    want = np.nextafter(x64.astype(_np(name)), y64.astype(_np(name)))
    got = to_numpy(xp.nextafter(x, y))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("name", HALVES)
def test_special_values_and_casts(device, name):
    _need(device, name)
    v = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -2.5, 65504.0 if name == "float16" else 3e38])
    x, x64 = _half(device, name, v)
    np.testing.assert_array_equal(to_numpy(x).astype(np.float64), x64)
    np.testing.assert_array_equal(to_numpy(xp.signbit(x)), np.signbit(x64))
    np.testing.assert_array_equal(to_numpy(xp.isnan(x)), np.isnan(x64))
    np.testing.assert_array_equal(to_numpy(x.astype(xp.float32)), x64.astype(np.float32))
    i = xp.asarray(np.array([-3, 0, 7, 100], np.int32), device=device)
    np.testing.assert_array_equal(to_numpy(i.astype(x.dtype)).astype(np.float64), [-3, 0, 7, 100])
    f = xp.asarray(np.array([0.1, 1 / 3, 1e-3, -7.7], np.float32), device=device)
    np.testing.assert_array_equal(to_numpy(f.astype(x.dtype)), np.array([0.1, 1 / 3, 1e-3, -7.7], np.float32).astype(_np(name)))
    np.testing.assert_array_equal(to_numpy(x[5:7].astype(xp.int32)), [1, -2])
    assert float(x[6]) == -2.5 and x[5:7].tolist() == [1.0, -2.5]


@pytest.mark.parametrize("name", HALVES)
def test_reductions_accumulate_in_float32(device, name):
    _need(device, name)
    rng = np.random.default_rng(12)
    # 2048 rows summed along axis 0: half rounding at every step would drift by many ulps
    x, x64 = _half(device, name, rng.uniform(0.5, 1.5, (2048, 3)))
    _close(xp.sum(x, axis=0), x64.sum(axis=0), name)
    _close(xp.sum(x), x64.sum(), name)
    _close(xp.mean(x, axis=0), x64.mean(axis=0), name)
    _close(xp.var(x, axis=0), x64.var(axis=0), name, ulps=2)
    _close(xp.std(x, axis=0, correction=1), x64.std(axis=0, ddof=1), name, ulps=2)
    _close(xp.max(x, axis=0), x64.max(axis=0), name)
    _close(xp.cumulative_sum(x[:, 0]), np.cumsum(x64[:, 0]), name)
    y, y64 = _half(device, name, rng.uniform(0.9, 1.1, 50))
    _close(xp.prod(y), np.prod(y64), name)
    assert xp.sum(x, dtype=xp.float32).dtype is xp.float32
    assert int(xp.argmax(x[:, 0])) == int(np.argmax(x64[:, 0]))


@pytest.mark.parametrize("name", HALVES)
def test_matmul_accumulates_in_float32(device, name):
    _need(device, name)
    rng = np.random.default_rng(13)
    a, a64 = _half(device, name, rng.standard_normal((5, 300)))
    b, b64 = _half(device, name, rng.standard_normal((300, 7)))
    # one rounding of a float32 sum: within a half ulp of the float64 result plus float32's
    # own error, relative to the sum of |terms|
    mag = np.abs(a64) @ np.abs(b64)
    for got, want in ((xp.matmul(a, b), a64 @ b64), (xp.tensordot(a, b, axes=1), a64 @ b64)):
        assert got.dtype is a.dtype
        g = to_numpy(got).astype(np.float64)
        assert np.all(np.abs(g - want) <= EPS[name] * np.abs(want) + 1e-5 * mag)
    v = xp.vecdot(a, a)
    assert v.dtype is a.dtype
    np.testing.assert_allclose(to_numpy(v).astype(np.float64), (a64 * a64).sum(-1), rtol=EPS[name])


@pytest.mark.parametrize("name", HALVES)
def test_creation_indexing_manipulation(device, name):
    _need(device, name)
    h = _dt(name)
    z = xp.zeros((2, 3), dtype=h, device=device)
    assert z.dtype is h and to_numpy(z).sum() == 0
    np.testing.assert_array_equal(to_numpy(xp.full((3,), 1.5, dtype=h, device=device)).astype(float), [1.5] * 3)
    np.testing.assert_array_equal(to_numpy(xp.arange(0, 5, dtype=h, device=device)).astype(float), np.arange(5))
    np.testing.assert_array_equal(to_numpy(xp.linspace(0, 1, 5, dtype=h, device=device)).astype(float),
                                  np.linspace(0, 1, 5))
    np.testing.assert_array_equal(to_numpy(xp.eye(3, dtype=h, device=device)).astype(float), np.eye(3))
    rng = np.random.default_rng(14)
    x, x64 = _half(device, name, rng.standard_normal((4, 5)))
    np.testing.assert_array_equal(to_numpy(x[1:, ::2]).astype(float), x64[1:, ::2])
    np.testing.assert_array_equal(to_numpy(x[x > 0]).astype(float), x64[x64 > 0])
    idx = xp.asarray(np.array([3, 0, 0], np.int32), device=device)
    np.testing.assert_array_equal(to_numpy(xp.take(x, idx, axis=0)).astype(float), x64[[3, 0, 0]])
    np.testing.assert_array_equal(to_numpy(xp.concat([x, x])).astype(float), np.concatenate([x64, x64]))
    np.testing.assert_array_equal(to_numpy(xp.flip(x, axis=1)).astype(float), x64[:, ::-1])
    np.testing.assert_array_equal(to_numpy(xp.sort(x, axis=1)).astype(float), np.sort(x64, axis=1))
    np.testing.assert_array_equal(to_numpy(xp.argsort(x[0])), np.argsort(x64[0], kind="stable"))
    y = xp.asarray(x, copy=True)
    y[1, 2] = 7.25
    y[0] = x[3]
    w = x64.copy()
    w[1, 2], w[0] = 7.25, x64[3]
    np.testing.assert_array_equal(to_numpy(y).astype(float), w)


def test_host_linalg_computes_in_float32():
    rng = np.random.default_rng(15)
    for name in HALVES:
        a, a64 = _half(xp.device("cpu"), name, rng.standard_normal((4, 4)) + 4 * np.eye(4))
        inv = xp.linalg.inv(a)
        assert inv.dtype is a.dtype
        np.testing.assert_allclose(to_numpy(inv).astype(float), np.linalg.inv(a64), rtol=4 * EPS[name], atol=4 * EPS[name])
        n = xp.linalg.vector_norm(a)
        assert n.dtype is a.dtype
        np.testing.assert_allclose(float(n), np.linalg.norm(a64), rtol=EPS[name])


def test_random_float16_in_unit_interval():
    r = xp.random.default_rng(3).random((4096,), dtype=xp.float16)
    assert r.dtype is xp.float16
    h = to_numpy(r)
    assert h.min() >= 0 and h.max() < 1 and len(np.unique(h)) > 1000


# -------------------------------------------------------------------- bfloat16: ml_dtypes' rounding, bit for bit

needs_bf16 = pytest.mark.skipif(getattr(xp, "bfloat16", None) is None, reason="no ml_dtypes: no bfloat16")


def _bf16_round_once(a):
    """bfloat16 bits of float64 values rounded once to nearest even (the oracle, independent of the
    installed ml_dtypes: older ones convert through float32 and round twice)."""
    d = np.asarray(a, np.float64)
    m, e = np.frexp(d)                                   # |m| in [0.5, 1): 8 significant bits
    q = np.maximum(e, -125) - 8                          # the quantum's exponent (subnormals: -133)
    r = np.ldexp(np.rint(np.ldexp(m, e - q)), q)
    with np.errstate(over="ignore"):
        r = np.where(np.abs(r) > 3.3895313892515355e38, np.copysign(np.inf, d), r).astype(np.float32)
    bits = (r.view(np.uint32) >> 16).astype(np.uint16)
    return np.where(np.isnan(d), np.uint16(0x7FC0), bits)


def _f32_bits(rng):
    """float32 bit patterns: random, the specials, subnormals and exact bfloat16 ties."""
    u = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFC12345,
                         0x7FFFFFFF, 1, 0x807FFFFF, 0x8000, 0x18000, 0x3F808000, 0x3F818000,
                         0x7F7FFFFF, 0x7F7F8000, 0xFF7F8000, 0x7F7F7FFF], np.uint32)
    ties = (rng.integers(0, 2**16, 4000, dtype=np.uint32) << 16) | np.uint32(0x8000)
    return np.concatenate([u, specials, ties])


@needs_bf16
def test_bfloat16_from_float32_bit_identical(device):
    rng = np.random.default_rng(21)
    f = _f32_bits(rng).view(np.float32)
    want = f.astype(xp.bfloat16.dtype).view(np.uint16)
    got = to_numpy(xp.asarray(f, device=device).astype(xp.bfloat16)).view(np.uint16)
    np.testing.assert_array_equal(got, want)
    # transfers keep every pattern (NaN payloads too); widening to float32 is exact
    b = (rng.integers(0, 2**16, 5000, dtype=np.uint32).astype(np.uint16)).view(xp.bfloat16.dtype)
    x = xp.asarray(b, device=device)
    np.testing.assert_array_equal(to_numpy(x).view(np.uint16), b.view(np.uint16))
    np.testing.assert_array_equal(to_numpy(x.astype(xp.float32)).view(np.uint32),
                                  b.astype(np.float32).view(np.uint32))


@needs_bf16
def test_bfloat16_from_float64_and_ints_rounds_once(device):
    if not device.backend.supports(np.dtype(np.float64)):
        pytest.skip(f"no float64 on {device}")
    rng = np.random.default_rng(22)
    # just above and below bfloat16 ties (a float32 rounding first would land on the tie)
    t = ((rng.integers(0x00800000 >> 16, 0x7F7F, 3000, dtype=np.uint32) << 16) | 0x8000).view(np.float32)
    t = t.astype(np.float64) * np.where(rng.random(3000) < 0.5, -1, 1)
    d = np.concatenate([t * (1 + 2.0**-40), t * (1 - 2.0**-40), rng.standard_normal(3000) * 1e5,
                        [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-300, 3.3961e38, 3.3962e38, 1e39]])
    got = to_numpy(xp.asarray(d, device=device).astype(xp.bfloat16)).view(np.uint16)
    np.testing.assert_array_equal(got, _bf16_round_once(d))


@needs_bf16
def test_bfloat16_from_32bit_ints_rounds_once(device):
    rng = np.random.default_rng(24)
    # just above a bfloat16 tie: float32 would round onto the tie first, then to even (down)
    edges = [2**30 + 2**22 + 1, -(2**30 + 2**22 + 1), 2**26 + 2**18 + 1, 2**31 - 1, -2**31, 2**31 - 64, 0, -1]
    i = np.concatenate([rng.integers(-2**31, 2**31 - 1, 3000), edges]).astype(np.int32)
    u = np.concatenate([rng.integers(0, 2**32 - 1, 3000), [2**32 - 1, 2**32 - 128, 2**31, 2**31 + 2**23 + 1]]).astype(np.uint32)
    for a in (i, u):
        got = to_numpy(xp.asarray(a, device=device).astype(xp.bfloat16)).view(np.uint16)
        np.testing.assert_array_equal(got, _bf16_round_once(a), err_msg=str(a.dtype))


@needs_bf16
def test_bfloat16_arithmetic_bit_identical_to_ml_dtypes(device):
    rng = np.random.default_rng(23)
    bf = xp.bfloat16.dtype
    a = (rng.standard_normal(4000) * 10.0 ** rng.integers(-3, 4, 4000)).astype(np.float32).astype(bf)
    b = (rng.standard_normal(4000) * 10.0 ** rng.integers(-3, 4, 4000)).astype(np.float32).astype(bf)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    with np.errstate(all="ignore"):
        for fn, want in (("add", a + b), ("subtract", a - b), ("multiply", a * b), ("divide", a / b),
                         ("sqrt", np.sqrt(np.abs(a)))):
            got = getattr(xp, fn)(x, y) if fn != "sqrt" else xp.sqrt(xp.abs(x))
            assert got.dtype is xp.bfloat16
            np.testing.assert_array_equal(to_numpy(got).view(np.uint16), want.view(np.uint16), err_msg=fn)
        got = x * 0.1                                   # the scalar rounded to bfloat16 first
        np.testing.assert_array_equal(to_numpy(got).view(np.uint16), (a * np.array(0.1, bf)).view(np.uint16))


def test_unsupported_raise_clear_errors(device):
    for name in HALVES:
        if device.kind == "wgpu" and device.backend.supports(_np(name)):
            x = xp.ones(3, dtype=_dt(name), device=device)
            with pytest.raises(TypeError, match=f"ruda.nextafter: {name} is not supported on 'wgpu"):
                xp.nextafter(x, x)
    with pytest.raises(TypeError, match=r"ruda.random.normal: dtype must be float16, float32 or "
                                        r"float64; got int32"):
        xp.random.default_rng(0).normal(shape=(2,), dtype=xp.int32, device=device)
    if "bfloat16" in HALVES and device.backend.supports(_np("bfloat16")):
        with pytest.raises(TypeError, match=r"ruda.random.random: dtype must be float16, float32 "
                                            r"or float64; got bfloat16; draw float32 and cast"):
            xp.random.default_rng(0).random((2,), dtype=xp.bfloat16, device=device)


def test_float16_from_float32_rounds_to_nearest_even(device):
    _need(device, "float16")
    rng = np.random.default_rng(25)
    u = _f32_bits(rng)
    # float16's own ties and subnormal range: random float16 halfway points, and tiny values
    h = rng.integers(0, 2**16, 4000, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    mid = (h.view(np.uint32) + np.uint32(1 << 12)).view(np.float32)
    f = np.concatenate([u.view(np.float32), mid, rng.uniform(-7e-5, 7e-5, 3000).astype(np.float32)])
    with np.errstate(all="ignore"):
        want = f.astype(np.float16)
    got = to_numpy(xp.asarray(f, device=device).astype(xp.float16))
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])


@needs_bf16
def test_bfloat16_views_assignment_and_payloads(device):
    """Views at odd offsets and negative strides, assignment into views (two values share a
    32-bit word on wgpu), NaN payloads through data movement, 0-d and empty arrays."""
    rng = np.random.default_rng(26)
    bf = xp.bfloat16.dtype
    bits = rng.integers(0, 2**16, 35, dtype=np.uint32).astype(np.uint16)
    bits[[3, 10]] = [0x7F81, 0xFFA5]                           # NaNs with payloads
    h = bits.view(bf).reshape(5, 7)
    x = xp.asarray(h, device=device)
    for key in [(slice(1, None), slice(None, None, -2)), (2,), (slice(None), 3), (Ellipsis, slice(1, 6, 3))]:
        np.testing.assert_array_equal(to_numpy(x[key]).view(np.uint16), h[key].view(np.uint16))
    for got, want in ((xp.reshape(x, (7, 5)), h.reshape(7, 5)), (x.mT, h.T),
                      (xp.concat([x[:, 1:], x[:, :1]], axis=1), np.concatenate([h[:, 1:], h[:, :1]], axis=1)),
                      (xp.flip(x, axis=0), h[::-1])):
        np.testing.assert_array_equal(to_numpy(got).view(np.uint16), want.view(np.uint16))
    w = h.astype(np.float32).astype(bf)                         # the host's copy, assigned alike
    y = xp.asarray(w, device=device)
    y[1:4, 2] = xp.asarray(np.array([1.5, -2.25, 3.0], np.float32), device=device)
    w[1:4, 2] = np.array([1.5, -2.25, 3.0], np.float32).astype(bf)
    y[0] = 0.1
    w[0] = np.array(0.1).astype(bf)
    yt = y.mT
    yt[6, 1:] = -7.0                                            # through a transposed view
    w[1:, 6] = -7.0
    y[y > 100] = 2.5
    with np.errstate(invalid="ignore"):
        w[w.astype(np.float32) > 100] = 2.5
    np.testing.assert_array_equal(to_numpy(y).view(np.uint16), w.view(np.uint16))
    z = xp.asarray(np.array(1.5, bf), device=device)
    assert (z + 1).dtype is xp.bfloat16 and float(z + 1) == 2.5 and z.shape == ()
    e = xp.zeros((0, 3), dtype=xp.bfloat16, device=device)
    assert e.shape == (0, 3) and to_numpy(e + 1).shape == (0, 3)
    np.testing.assert_array_equal(to_numpy(xp.full((3,), 0.1, dtype=xp.bfloat16, device=device)).view(np.uint16),
                                  np.full(3, np.array(0.1).astype(bf)).view(np.uint16))


@pytest.mark.parametrize("name", HALVES)
def test_ordering_with_specials(device, name):
    _need(device, name)
    rng = np.random.default_rng(27)
    v = rng.standard_normal(3000)
    v[::97], v[::89], v[::83] = np.nan, -0.0, np.inf
    x, x64 = _half(device, name, v)
    h = x64.astype(_np(name))
    np.testing.assert_array_equal(to_numpy(xp.sort(x)).astype(float), np.sort(x64))
    np.testing.assert_array_equal(to_numpy(xp.sort(x, descending=True)).astype(float)[51:], np.sort(x64)[::-1][51:])
    np.testing.assert_array_equal(to_numpy(xp.argsort(x)), np.argsort(x64, kind="stable"))
    s = xp.sort(x)
    np.testing.assert_array_equal(to_numpy(xp.searchsorted(s, x[:200])), np.searchsorted(np.sort(x64), x64[:200]))
    assert int(xp.argmax(x)) == int(np.argmax(x64)) and np.isnan(float(xp.max(x)))
    f = xp.where(xp.isnan(x), 0.0, x)
    fh = np.where(np.isnan(h), 0, h).astype(np.float64)
    assert float(xp.min(f)) == fh.min() and int(xp.argmin(f)) == int(np.argmin(fh))


@needs_bf16
def test_bfloat16_bool_scalar_keys_and_empty_setitem(device):
    """A bool scalar beside an int or ... is an advanced index (NumPy's); setitem on an empty
    bfloat16 array checks its key and value as any dtype does."""
    if not device.backend.supports(xp.bfloat16):
        pytest.skip("no bfloat16 here")
    a = np.arange(3, dtype=np.float32).astype(np.dtype(xp.bfloat16))
    x = xp.asarray(a, device=device)
    for key in ((0, True), (Ellipsis, True), (True, 1), (1, False)):
        got = x[key]
        assert got.dtype == xp.bfloat16 and got.shape == a[key].shape, key
        np.testing.assert_array_equal(np.asarray(xp.astype(got, xp.float32).to_device("cpu")),
                                      a[key].astype(np.float32))
    y = xp.zeros((0, 3), dtype=xp.bfloat16, device=device)
    with pytest.raises(ValueError, match="broadcast"):
        y[:] = xp.ones((5,), dtype=xp.bfloat16, device=device)
    with pytest.raises(IndexError, match="shape mismatch"):
        y[xp.asarray([0, 1], device=device), xp.asarray([0, 1, 2], device=device)] = 1.0
    y[:] = 1.0
    assert y.shape == (0, 3)
