"""Type promotion (the standard's table; NumPy 2 where the standard is silent), Python scalars,
and the data type functions astype, can_cast, finfo, iinfo, isdtype, result_type.

The standard's promotion lattice is encoded independently here (``std_promote``); combinations
it leaves undefined (mixed kinds, uint64 with a signed integer, bool with numbers) are checked
against NumPy 2, mapped to the device's default dtypes where NumPy picks its own defaults.
"""
import pickle

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from strategies import assert_result, default, rand, seeds, shapes, supported

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float32", "float64", "complex64", "complex128"]


def _bits(dt):
    return np.dtype(dt).itemsize * 8


def std_promote(a, b):
    """The standard's promotion table; None where it does not define a result."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    ka, kb = a.kind, b.kind
    if "b" in (ka, kb):
        return None
    if ka == kb and ka in "iufc":
        return a if _bits(a) >= _bits(b) else b
    if {ka, kb} == {"i", "u"}:
        s, u = (a, b) if ka == "i" else (b, a)
        if _bits(u) < _bits(s):
            return s
        if _bits(u) < 64:
            return np.dtype(f"int{2 * _bits(u)}")
        return None
    if {ka, kb} == {"f", "c"}:
        f, c = (a, b) if ka == "f" else (b, a)
        return np.dtype(f"complex{max(2 * _bits(f), _bits(c))}")
    return None


def expected_promote(a, b):
    r = std_promote(a, b)
    return np.result_type(np.dtype(a), np.dtype(b)) if r is None else r


def _values(rng, dt, shape):
    dt = np.dtype(dt)
    return rand(rng, shape, dt, 0 if dt.kind == "u" else -9, 9)


@pytest.mark.parametrize("name1", NAMES)
def test_result_type_and_ops_follow_promotion_table(device, name1):
    dts = supported(device)
    d1 = np.dtype(name1)
    if d1 not in dts:
        pytest.skip(f"{name1} not supported on {device}")
    rng = np.random.default_rng(abs(hash(name1)) % 2**32)
    checked = 0
    for d2 in dts:
        exp = expected_promote(d1, d2)
        if exp not in dts:
            continue                                   # e.g. float64 on an adapter without it
        assert xp.result_type(d1, d2) == exp, (d1, d2)
        a, b = _values(rng, d1, (3, 4)), _values(rng, d2, (4,))
        xa, xb = xp.asarray(a, device=device), xp.asarray(b, device=device)
        assert xp.result_type(xa, xb) == exp
        if d1.kind != "b" and d2.kind != "b":
            assert_result(xp.add(xa, xb), a.astype(exp) + b.astype(exp), dtype=exp)
            assert_result(xa * xb, a.astype(exp) * b.astype(exp), dtype=exp)
        cond = rng.random((3, 4)) < 0.5
        assert_result(xp.where(xp.asarray(cond, device=device), xa, xb),
                      np.where(cond, a.astype(exp), b.astype(exp)), dtype=exp)
        assert_result(xp.concat([xa, xp.reshape(xb, (1, 4))]),
                      np.concatenate([a.astype(exp), b.astype(exp)[None]]), dtype=exp)
        checked += 1
    assert checked


def test_result_type_many_and_standard_examples():
    assert xp.result_type(xp.int8, xp.uint8, xp.int16) == xp.int16
    assert xp.result_type(xp.uint8, xp.int8) == xp.int16
    assert xp.result_type(xp.uint32, xp.int32) == xp.int64
    assert xp.result_type(xp.float32, xp.complex64, xp.float64) == xp.complex128
    assert xp.result_type(xp.int16, xp.int32, xp.int8) == xp.int32
    with pytest.raises(ValueError, match="result_type"):
        xp.result_type()
    with pytest.raises(TypeError, match="result_type"):
        xp.result_type("not a dtype", xp.int8)


def _numpy_scalar_result(device, dt, s):
    """NumPy 2's result dtype of array(dt) <op> s, with NumPy's defaults replaced by the device's."""
    r = (np.ones(1, dt) + s).dtype if np.dtype(dt).kind != "b" or not isinstance(s, bool) else np.dtype(bool)
    k = np.dtype(dt).kind
    if r == np.int64 and k == "b":
        return default(device, "integral")
    if r == np.float64 and k in "biu":
        return default(device, "real floating")
    if r == np.complex128 and k in "biu":
        return default(device, "complex floating")
    return r


SCALARS = [True, 3, 2.5, 1.5 - 0.5j]


@pytest.mark.parametrize("scalar", SCALARS, ids=lambda s: type(s).__name__)
def test_python_scalar_promotion(device, scalar):
    """Same kind (or lower): the array dtype wins; higher kind: NumPy 2 rules, device defaults."""
    rng = np.random.default_rng(3)
    for dt in supported(device):
        exp = _numpy_scalar_result(device, dt, scalar)
        if exp not in supported(device):
            continue
        with xp.default_device(device):          # result_type's scalar rules use the default device
            assert xp.result_type(dt, scalar) == exp
        a = _values(rng, dt, (5,))
        x = xp.asarray(a, device=device)
        oracle = a.astype(exp) if exp.kind != "b" else a
        cond = rng.random(5) < 0.5
        assert_result(xp.where(xp.asarray(cond, device=device), x, scalar),
                      np.where(cond, oracle, np.asarray(scalar, exp)), dtype=exp)
        assert_result(xp.where(xp.asarray(cond, device=device), scalar, x),
                      np.where(cond, np.asarray(scalar, exp), oracle), dtype=exp)
        assert_result(x == scalar, oracle == np.asarray(scalar, exp), dtype=xp.bool)
        if np.dtype(dt).kind == "b" and isinstance(scalar, bool):
            assert_result(xp.logical_and(x, scalar), np.logical_and(a, scalar), dtype=xp.bool)
            with pytest.raises(TypeError, match=r"ruda\.add.*numeric.*bool"):
                x + scalar      # bool with bool stays bool: not a numeric dtype
            continue
        # otherwise the category is judged on the promoted dtype (NumPy 2: bool array + 3 -> int)
        assert_result(x + scalar, oracle + np.asarray(scalar, exp), dtype=exp)
        assert_result(scalar + x, np.asarray(scalar, exp) + oracle, dtype=exp)
        assert_result(x * scalar, oracle * np.asarray(scalar, exp), dtype=exp)
        assert_result(scalar - x, np.asarray(scalar, exp) - oracle, dtype=exp)
        assert_result(xp.multiply(scalar, x), np.asarray(scalar, exp) * oracle, dtype=exp)


def test_python_scalar_same_kind_keeps_narrow_dtype(device):
    for name in ["int8", "uint8", "int16", "float32"]:
        dt = np.dtype(name)
        if dt not in supported(device):
            continue
        x = xp.asarray(np.asarray([1, 2, 3], dtype=dt), device=device)
        s = 2.5 if dt.kind == "f" else 5
        assert (x + s).dtype == dt and (s * x).dtype == dt and (x / s).dtype == (dt if dt.kind == "f"
                                                                              else default(device, "real floating"))


def test_divide_integers_gives_default_float(device):
    rng = np.random.default_rng(11)
    fdt = default(device, "real floating")
    for dt in supported(device, "integral"):
        a, b = rand(rng, (6,), dt, 1, 20), rand(rng, (6,), dt, 1, 9)
        res = xp.asarray(a, device=device) / xp.asarray(b, device=device)
        assert_result(res, a.astype(np.float64) / b.astype(np.float64), dtype=fdt)


# ---- data type functions ------------------------------------------------------------------

@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_uint64_compared_with_int64_exactly(device, op):
    """uint64 with int64 promotes to float64 (NumPy 2), but comparisons are exact, as NumPy's:
    integers past 2**53 stay distinct, and a negative int64 is below every uint64."""
    u = np.array([2**63, 2**53 + 1, 0, 5, 2**64 - 1, 7, 2**63 - 1], np.uint64)
    i = np.array([2**63 - 1, 2**53, -1, 5, -2**63, 8, 2**63 - 1], np.int64)
    fn = {"==": xp.equal, "!=": xp.not_equal, "<": xp.less, "<=": xp.less_equal,
          ">": xp.greater, ">=": xp.greater_equal}[op]
    xu, xi = xp.asarray(u, device=device), xp.asarray(i, device=device)
    for x1, x2, a1, a2 in ((xu, xi, u, i), (xi, xu, i, u), (xu[:, None], xi[None, :], u[:, None], i),
                           (xu, np.int64(-3), u, np.int64(-3)), (np.uint64(2**63), xi, u[0], i)):
        want = eval(f"a1 {op} a2")
        for got in (eval(f"x1 {op} x2"), fn(x1, x2)):
            assert got.dtype == xp.bool
            np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)


def test_promotion_to_a_dtype_the_device_lacks(device):
    """On an adapter without float64 / int64 (browser-class), int32 with float32 (float64) or
    with uint32 (int64) raises naming the function, both dtypes and the missing feature."""
    i = xp.arange(3, dtype=xp.int32, device=device)
    for other, to in ((xp.ones(3, dtype=xp.float32, device=device), "float64"),
                      (xp.ones(3, dtype=xp.uint32, device=device), "int64")):
        if device.backend.supports(np.dtype(to)):
            assert (i + other).dtype == np.dtype(to)
            continue
        for call, fn in ((lambda: i + other, "add"), (lambda: xp.where(i > 0, i, other), "where"),
                         (lambda: xp.concat([i, other]), "concat"),
                         (lambda: xp.matmul(i, other), "matmul")):
            with pytest.raises(TypeError, match=rf"ruda\.{fn}: int32 with {other.dtype} promotes "
                                                rf"to {to}, which device 'wgpu' lacks \(the "
                                                rf"adapter lacks the shader-"):
                call()


@pytest.mark.parametrize("name1", NAMES)
def test_can_cast_matches_promotion_table(name1):
    """The standard's table where it defines a result; NumPy's 'safe' casting across kinds."""
    d1 = np.dtype(name1)
    for name2 in NAMES:
        d2 = np.dtype(name2)
        std = std_promote(d1, d2)
        exp = std == d2 if std is not None else np.can_cast(d1, d2, casting="safe")
        assert xp.can_cast(d1, d2) == exp, (name1, name2)


def test_can_cast_accepts_arrays(device):
    x = xp.asarray(np.asarray([1, 2], np.int8), device=device)
    assert xp.can_cast(x, xp.int16) and not xp.can_cast(x, xp.uint8)


@given(data=st.data(), seed=seeds, shape=shapes(0, 2, 0, 6))
def test_astype(device, data, seed, shape):
    src = data.draw(st.sampled_from(supported(device)), label="from")
    dst = data.draw(st.sampled_from(supported(device)), label="to")
    a = rand(np.random.default_rng(seed), shape, src, 0, 100)
    x = xp.asarray(a, device=device)
    if np.dtype(src).kind == "c" and np.dtype(dst).kind not in "cb":
        with pytest.raises(TypeError, match=r"ruda\.astype.*complex"):
            xp.astype(x, dst)
        return
    res = xp.astype(x, dst)
    assert res.device == device
    assert_result(res, a.astype(dst), dtype=dst)
    same = xp.astype(x, src, copy=False)
    assert same.dtype == src


def test_astype_integers_over_their_whole_range(device):
    """Integer casts at the edges of the source range, to every dtype, bit for bit NumPy's
    (wrapping, sign- or zero-extension by the source's signedness: naga once extended by the
    destination's, so uint32 0xffffffff became int64 -1 and int32 -1 became uint64 0xffffffff)."""
    for src in supported(device, "integral"):
        info = np.iinfo(src)
        a = np.asarray([info.min, info.max, 0, 1, info.max // 3, info.min // 3, info.min + 1,
                        info.max - 1], dtype=src)
        for dst in supported(device):
            assert_result(xp.astype(xp.asarray(a, device=device), dst), a.astype(dst), dtype=dst,
                          rtol=0, atol=0)


def test_astype_complex_to_bool(device):
    """The standard's complex -> bool: False for 0+0j (either zero's sign), True for every other
    value, NaN parts included."""
    for dt in supported(device, "complex floating"):
        a = np.asarray([0j, complex(-0.0, -0.0), 1j, 2 + 0j, complex(np.nan, 0), complex(0, np.inf)], dt)
        assert_result(xp.astype(xp.asarray(a, device=device), xp.bool), a.astype(bool), dtype=xp.bool)


def test_astype_copy_semantics(device):
    dt = supported(device, "real floating")[0]
    x = xp.asarray(rand(np.random.default_rng(1), (4,), dt), device=device)
    assert xp.astype(x, dt, copy=False) is x
    y = xp.astype(x, dt)
    assert y is not x
    y[0] = 123.0
    assert float(x[0]) != 123.0


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128"])
def test_finfo(name):
    dt = np.dtype(name)
    fi, ref = xp.finfo(dt), np.finfo(dt)
    assert fi.bits == ref.bits and fi.eps == float(ref.eps) and fi.max == float(ref.max)
    assert fi.min == float(ref.min) and fi.smallest_normal == float(ref.smallest_normal)
    assert fi.dtype == (np.float32 if name in ("float32", "complex64") else np.float64)
    assert all(isinstance(v, float) for v in (fi.eps, fi.max, fi.min, fi.smallest_normal))
    with pytest.raises(TypeError, match=r"ruda\.finfo.*int32"):
        xp.finfo(xp.int32)


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_iinfo(device, name):
    dt = np.dtype(name)
    ii, ref = xp.iinfo(dt), np.iinfo(dt)
    assert (ii.bits, ii.min, ii.max, ii.dtype) == (ref.bits, int(ref.min), int(ref.max), dt)
    if dt in supported(device):
        assert xp.iinfo(xp.asarray(np.asarray([1], dt), device=device)).max == int(ref.max)
    with pytest.raises(TypeError, match=r"ruda\.iinfo.*float32"):
        xp.iinfo(xp.float32)


KINDS = {
    "bool": ["bool"],
    "signed integer": ["int8", "int16", "int32", "int64"],
    "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
    "integral": ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"],
    "real floating": ["float32", "float64"],
    "complex floating": ["complex64", "complex128"],
    "numeric": NAMES[1:],
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_isdtype(kind):
    for name in NAMES:
        dt = getattr(xp, name)
        assert xp.isdtype(dt, kind) == (name in KINDS[kind]), (name, kind)
        assert xp.isdtype(dt, dt)
        assert xp.isdtype(dt, (kind, dt))
    with pytest.raises(ValueError, match="isdtype.*unknown kind"):
        xp.isdtype(xp.int8, "integer-ish")


# ---- the dtype objects ----------------------------------------------------------------------

def test_dtype_objects_are_ruda_s_own_and_never_equal_none(device):
    """ruda's dtypes stand for NumPy's and equal them, but not None: NumPy reads None as float64
    (``np.dtype("float64") == None`` is True), so a NumPy dtype would be counted equal to a missing
    value, as array-api-tests' can_cast check does with ``promotion_table.get(...) == to``."""
    for name in NAMES:
        dt = getattr(xp, name)
        assert dt != None and None != dt and not (dt == None), name  # noqa: E711
        assert dt == np.dtype(name) and np.dtype(name) == dt and np.dtype(dt) == np.dtype(name)
        assert hash(dt) == hash(np.dtype(name)) and {np.dtype(name): 1}[dt] == 1
        assert (repr(dt), str(dt), dt.name) == (f"ruda.{name}", name, name)
        assert dt.kind == np.dtype(name).kind and dt.itemsize == np.dtype(name).itemsize
        assert [n for n in NAMES if getattr(xp, n) == dt] == [name]
        assert pickle.loads(pickle.dumps(dt)) is dt
    assert xp.float64 == np.float64 and xp.float64 != xp.float32 and xp.int8 != "float64"
    with pytest.raises(TypeError, match="cannot be constructed"):
        type(xp.float32)()
    for name in supported(device):
        x = xp.asarray(np.ones(2, name), device=device)
        assert x.dtype is getattr(xp, np.dtype(name).name)          # the one object per dtype
        for made in (xp.zeros(2, dtype=x.dtype, device=device), xp.astype(x, x.dtype),
                     xp.asarray([1, 0], dtype=x.dtype, device=device)):
            assert made.dtype is x.dtype
    for dt in (xp.result_type(xp.int8, xp.float32), xp.finfo(xp.complex64).dtype,
               xp.iinfo(xp.int16).dtype, *info_dtypes(device)):
        assert dt.__class__ is xp.float32.__class__


def info_dtypes(device):
    info = xp.__array_namespace_info__()
    return [*info.dtypes(device=device).values(), *info.default_dtypes(device=device).values()]


def test_can_cast_is_false_across_kinds_that_lose_data():
    """The standard's can_cast: no cast that drops the imaginary part or the fraction."""
    assert not xp.can_cast(xp.complex128, xp.float64) and not xp.can_cast(xp.float64, xp.int64)
    assert not xp.can_cast(xp.int64, xp.bool) and xp.can_cast(xp.bool, xp.float64)
