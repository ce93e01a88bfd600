"""An integer array with a Python int outside its dtype's range, against NumPy 2.

True division gives the default real floating dtype whatever the int (``uint8 / 256``), and the
six comparisons answer exactly (``uint8 == 256`` all False, ``uint8 > -1`` all True); every other
function keeps raising OverflowError, which the standard leaves unspecified.
"""
import operator

import numpy as np
import pytest

import ruda as xp
from strategies import assert_result, default, host64, need, rand_nonzero, to_ruda

INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
COMPARISONS = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
               "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}


def _int_array(device, name):
    """A 2-D array of ``name`` holding its extremes and small values, and its NumPy twin."""
    dt = np.dtype(need(device, name))
    info = np.iinfo(dt)
    a = rand_nonzero(np.random.default_rng(7), (2, 4), dt, -100, 100)
    a[0, 0], a[1, 3] = info.min if info.min else 1, info.max
    return to_ruda(a, device), a


def _beyond(name):
    """Python ints just past, and far past, each end of ``name``'s range."""
    info = np.iinfo(name)
    return [info.max + 1, info.min - 1, info.max * 4 + 3, -(2**70), 2**70]


@pytest.mark.parametrize("name", INTS)
def test_divide_by_python_int_out_of_range(device, name):
    x, a = _int_array(device, name)
    dt = default(device, "real floating")
    f = host64(a).astype(np.float64)   # the oracle: float64 values, the int made a float
    for s in _beyond(name):
        with np.errstate(all="ignore"):
            want, want_r = f / float(s), float(s) / f
        assert_result(x / s, want, dtype=dt)
        assert_result(xp.divide(x, s), want, dtype=dt)
        assert_result(s / x, want_r, dtype=dt)
        assert_result(xp.divide(s, x), want_r, dtype=dt)


def test_divide_bool_by_python_int_out_of_range(device):
    # a bool array with a Python int promotes to the default integer dtype, whose range
    # (int32 where the device has no int64) does not matter either
    a = np.array([[True, False, True]])
    x = to_ruda(a, device)
    dt = default(device, "real floating")
    for s in (2**40, -(2**40), 2**70):
        with np.errstate(all="ignore"):   # s / False: inf of s's sign (the cpu's NumPy warns)
            want, want_r = a.astype(np.float64) / float(s), float(s) / a.astype(np.float64)
            assert_result(x / s, want, dtype=dt)
            assert_result(s / x, want_r, dtype=dt)


def test_divide_in_range_python_int_unchanged(device):
    x, a = _int_array(device, "uint8")
    dt = default(device, "real floating")
    assert_result(x / 3, host64(a) / 3.0, dtype=dt)
    assert_result(7 / x, 7.0 / host64(a).astype(np.float64), dtype=dt)
    with pytest.raises(TypeError, match="ruda.divide"):
        xp.asarray([True, False], device=device) / True   # bool / bool: not numeric


@pytest.mark.parametrize("name", INTS)
@pytest.mark.parametrize("fn", list(COMPARISONS))
def test_compare_python_int_out_of_range(device, name, fn):
    x, a = _int_array(device, name)
    op, func = COMPARISONS[fn], getattr(xp, fn)
    for s in _beyond(name):
        # NumPy 2 answers exactly; check it against Python's own comparison of each element
        want, want_r = op(a, s), op(s, a)
        assert want.dtype == np.bool_ and want.shape == a.shape
        np.testing.assert_array_equal(want, [[op(int(e), s) for e in row] for row in a.tolist()])
        assert_result(op(x, s), want)           # the operator, scalar second
        assert_result(op(s, x), want_r)         # Python reflects it: `256 > x` is `x < 256`
        assert_result(func(x, s), want)
        assert_result(func(s, x), want_r)       # the function, scalar first


def test_compare_out_of_range_0d_and_contains(device):
    x = xp.asarray(200, dtype=xp.uint8, device=device)
    assert_result(x == 256, np.asarray(False))
    assert_result(xp.less(-1, x), np.asarray(True))
    y = xp.asarray([0, 255], dtype=xp.uint8, device=device)
    assert (256 in y) is False and (255 in y) is True


@pytest.mark.parametrize("fn", ["add", "subtract", "multiply", "floor_divide", "remainder",
                                "maximum", "bitwise_and"])
def test_other_functions_still_raise(device, fn):
    x = xp.asarray([100, 200], dtype=xp.uint8, device=device)
    for args in ((x, 256), (-1, x)):
        with pytest.raises(OverflowError, match=f"ruda.{fn}: .* out of range for uint8"):
            getattr(xp, fn)(*args)
    with pytest.raises(OverflowError, match="ruda.add"):
        x + 256
    with pytest.raises(OverflowError, match="ruda.isin"):
        xp.isin(x, 256)
