"""NumPy scalars (np.generic) as operands: 0-d arrays of their own dtype, as NumPy 2 treats them.

Written as users write it: labels from ``np.unique``, indices from ``np.argmax``, loops over
``np.arange``.  Results are checked against NumPy on the same values.
"""
import operator

import numpy as np
import pytest

import ruda as xp
from conftest import to_numpy
from strategies import default, supported

OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
       operator.mod, operator.lt, operator.le, operator.gt, operator.ge, operator.eq,
       operator.ne]


def _dtypes_on(device, *names):
    ok = {str(d) for d in supported(device)}
    return [n for n in names if n in ok]


def test_mask_from_a_numpy_label(device, rng):
    X = rng.standard_normal((12, 3))
    y = rng.integers(0, 3, 12)
    Xd = xp.asarray(X, dtype=supported(device, "real floating")[0], device=device)
    yd = xp.asarray(y, device=device)
    for k in np.unique(y):                       # np.int64 labels
        mask = yd == k
        assert isinstance(mask, xp.Array) and mask.dtype == xp.bool and mask.shape == (12,)
        sel = Xd[mask]
        assert sel.shape == (int((y == k).sum()), 3)
        np.testing.assert_allclose(to_numpy(sel), X[y == k], rtol=1e-6)
        assert not isinstance(yd != k, bool) and not isinstance(k == yd, bool)


@pytest.mark.parametrize("op", OPS, ids=lambda f: f.__name__)
def test_operators_take_numpy_scalars_as_arrays(device, rng, op):
    for adt, sdt in [("int32", "int64"), ("int64", "int32"), ("float32", "float64"),
                     ("float32", "float32"), ("int16", "float32"), ("uint8", "int8")]:
        if len(_dtypes_on(device, adt, sdt)) < 2 or \
                str(np.result_type(np.dtype(adt), np.dtype(sdt))) not in _dtypes_on(
                    device, str(np.result_type(np.dtype(adt), np.dtype(sdt)))):
            continue
        a = rng.integers(1, 50, 7).astype(adt)
        x = xp.asarray(a, device=device)
        # a 0-d ndarray too: NumPy hands its scalars to ufuncs as those, so it must mean the same
        pairs = [(op(x, s), op(a, s)) for s in (np.dtype(sdt).type(3), np.array(3, sdt))]
        pairs += [(op(s, x), op(s, a)) for s in (np.dtype(sdt).type(3), np.array(3, sdt))]
        for got, want in pairs:
            assert isinstance(got, xp.Array), (op, adt, sdt)
            if op is operator.truediv and np.result_type(np.dtype(adt), np.dtype(sdt)).kind in "iu":
                want = want.astype(default(device, "real floating"))   # integer / integer
            assert got.dtype == want.dtype, (op, adt, sdt, got.dtype, want.dtype)
            np.testing.assert_allclose(to_numpy(got), want, rtol=1e-6)


def test_inplace_and_namespace_functions(device, rng):
    fdt = supported(device, "real floating")[0]
    a = rng.standard_normal(5).astype(fdt)
    x = xp.asarray(a, copy=True, device=device)
    x += np.float32(2)
    x *= np.int8(3)
    np.testing.assert_allclose(to_numpy(x), (a + np.float32(2)) * np.int8(3), rtol=1e-6)
    assert x.dtype == fdt
    got = xp.maximum(x, np.float32(0.5))
    assert got.dtype == fdt
    np.testing.assert_allclose(to_numpy(got), np.maximum(to_numpy(x), np.float32(0.5)))
    w = xp.where(x > np.float32(3), x, np.float32(0))
    np.testing.assert_allclose(to_numpy(w), np.where(to_numpy(x) > 3, to_numpy(x), 0))
    i = xp.asarray(rng.integers(0, 9, 6), device=device)
    assert (i + np.int32(1)).dtype == xp.int64 and xp.result_type(i, np.int8(1)) == xp.int64
    assert xp.result_type(np.int64(1), xp.int8) == xp.int64
    x[np.argmax(a)] = np.float32(-1)             # an np.int64 index and an np.float32 value
    assert to_numpy(x)[np.argmax(a)] == -1
    assert xp.full(3, np.float32(2), device=device).dtype == xp.float32
    assert float(xp.std(x, correction=np.int64(1))) == pytest.approx(
        float(np.std(to_numpy(x).astype(np.float64), ddof=1)), rel=1e-5)


def test_numpy_float64_is_float64_not_a_python_float(device):
    if "float64" not in _dtypes_on(device, "float64"):
        pytest.skip(f"{device} has no float64")
    x = xp.ones(3, dtype=xp.float32, device=device)
    assert (x + np.float64(1)).dtype == xp.float64   # NumPy 2: float32 array + np.float64 -> float64
    assert (x + 1.0).dtype == xp.float32              # a Python float takes the array's dtype


def test_lists_of_numpy_scalars_keep_their_dtype(device):
    """``asarray`` of a list of NumPy scalars takes NumPy's dtype for it, as NumPy does; lists
    of Python scalars (np.float64 among them) take the device's defaults."""
    for vals in ([np.float32(1.5), np.float32(2)], [np.int8(1), np.int8(-3)],
                 [np.uint16(7), np.uint8(1)], [[np.float32(1)], [np.float32(2)]],
                 [np.complex64(1j), np.float32(2)], [np.float32(1), 2.0], [np.float64(1), 2.0],
                 [np.int64(3), 4], [np.int16(3), 4]):
        want = np.asarray(vals)
        if str(want.dtype) not in _dtypes_on(device, str(want.dtype)):
            continue
        got = xp.asarray(vals, device=device)
        if want.dtype in (np.float64, np.complex128, np.int64):
            kind = {"f": "real floating", "c": "complex floating", "i": "integral"}[want.dtype.kind]
            assert got.dtype == default(device, kind), vals
        else:
            assert got.dtype == want.dtype, vals
        np.testing.assert_array_equal(to_numpy(got), want)


def test_unusable_numpy_scalars_and_foreign_arrays_raise(device):
    x = xp.ones(3, device=device)
    with pytest.raises(TypeError, match=r"ruda\.add: x2 is a NumPy timedelta64\[s\] scalar"):
        x + np.timedelta64(1, "s")
    assert (x + np.float16(1)).dtype is x.dtype          # float16 is a ruda (extension) dtype
    with pytest.raises(TypeError, match=r"ruda\.equal: x2 .* got ndarray \(convert it with ruda\.asarray\)"):
        x == np.ones(3)                                               # noqa: B015
    with pytest.raises(TypeError, match=r"ruda\.less: x2 .* got ndarray"):
        x < np.ones(3)                                                # noqa: B015
    with pytest.raises(TypeError, match="got list"):
        x != [1.0, 1.0, 1.0]                                          # noqa: B015
    assert (x == None) is False and (x != "text") is True            # noqa: E711  (not arrays)
    # numbers of other types and ranges: an error, never Python's bare identity answer
    from decimal import Decimal
    from fractions import Fraction
    for other, hint in ((Decimal(1), "float\\(\\) or int\\(\\)"), (Fraction(1), "float\\(\\) or int\\(\\)"),
                        (range(3), "ruda\\.asarray")):
        name = type(other).__name__
        for call, fn, arg in ((lambda o: x == o, "equal", "x2"), (lambda o: o != x, "not_equal", "x2"),
                              (lambda o: o + x, "add", "x1"), (lambda o: x * o, "multiply", "x2")):
            with pytest.raises(TypeError, match=rf"ruda\.{fn}: {arg} must be .* got {name} \(convert it with {hint}\)"):
                call(other)


def test_numpy_index_arrays_index_like_lists(device, rng):
    a = rng.standard_normal((6, 3))
    x = xp.asarray(a, dtype=supported(device, "real floating")[0], device=device)
    idx = np.array([4, 0, 4])
    np.testing.assert_allclose(to_numpy(x[idx]), a[idx].astype(x.dtype), rtol=1e-6)
    mask = a[:, 0] > 0
    np.testing.assert_allclose(to_numpy(x[mask]), a[mask].astype(x.dtype), rtol=1e-6)
    x[np.array([1, 2])] = 0.0
    assert to_numpy(x)[1:3].tolist() == [[0.0] * 3] * 2
    with pytest.raises(IndexError, match="NumPy array indices must hold integers or booleans"):
        x[np.array([0.5])]


def test_dtype_functions_take_numpy_spellings_as_asarray_does():
    """np.float32 and "float32" name ruda.float32 in isdtype, finfo, iinfo, result_type and
    can_cast as they do in asarray(dtype=) (scikit-learn's check_array(dtype=np.float32))."""
    assert xp.asarray([1], dtype=np.float32).dtype == xp.float32
    assert xp.isdtype(np.float32, "real floating") and xp.isdtype("int8", "signed integer")
    assert xp.isdtype(xp.float32, np.float32) and not xp.isdtype(np.int64, ("bool", "real floating"))
    assert xp.finfo(np.float32).eps == np.finfo(np.float32).eps and xp.finfo("float64").bits == 64
    assert xp.iinfo(np.int32).max == 2 ** 31 - 1
    assert xp.result_type(np.float32, xp.int8) == xp.float32 == xp.result_type("float32", xp.int16)
    assert xp.can_cast(np.float32, xp.float64) and not xp.can_cast("float64", np.int8)
    for bad in (float, "float33", np.object_):
        with pytest.raises(TypeError, match="ruda.isdtype: dtype must be a ruda dtype"):
            xp.isdtype(bad, "real floating")
        with pytest.raises(TypeError, match="ruda.finfo: type must be a ruda dtype or array"):
            xp.finfo(bad)
