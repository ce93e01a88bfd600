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

HALVES = ["float16"] + (["bfloat16"] if xp.bfloat16 is not None else [])
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


def _close(got, want64, name, ulps=1.0):
    """got (a half ruda array) within ``ulps`` half ulps of float64 ``want64`` rounded to the
    half dtype (NaN where want is NaN)."""
    assert got.dtype == _dt(name), (got.dtype, name)
    g = to_numpy(got).astype(np.float64)
    w = np.asarray(want64, np.float64).astype(np.float32).astype(_np(name)).astype(np.float64)
    assert g.shape == w.shape
    np.testing.assert_allclose(g, w, rtol=ulps * EPS[name], atol=ulps * TINY[name], equal_nan=True)


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

UNARY = ["abs", "ceil", "cos", "exp", "expm1", "floor", "log", "log1p", "negative", "round",
         "sign", "sin", "sqrt", "square", "tanh", "trunc"]
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "atan2",
          "floor_divide", "remainder", "hypot", "copysign"]


@pytest.mark.parametrize("name", HALVES)
def test_elementwise(device, name):
    _need(device, name)
    rng = np.random.default_rng(11)
    x, x64 = _half(device, name, rng.uniform(0.1, 4.0, 64) * rng.choice([-1, 1], 64))
    p, p64 = _half(device, name, rng.uniform(0.1, 4.0, 64))
    x64a = np.abs(x64)
    for fn in UNARY:
        a, a64 = (p, p64) if fn in ("log", "log1p", "sqrt") else (x, x64)
        _close(getattr(xp, fn)(a), getattr(np, fn)(a64), name)
    for fn in BINARY:
        a, a64 = (xp.abs(x), x64a) if fn == "pow" else (x, x64)
        _close(getattr(xp, fn)(a, p), getattr(np, fn)(a64, p64), name)
    _close(x + 0.5, x64 + 0.5, name)
    assert xp.all((x < p) == xp.asarray(x64 < p64, device=device))
    _close(xp.where(x > 0, x, p), np.where(x64 > 0, x64, p64), name)
    _close(xp.clip(x, -1.0, 1.0), np.clip(x64, -1.0, 1.0), name)


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
