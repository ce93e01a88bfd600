"""Creation functions against NumPy on every device: values, dtypes (incl. the device's defaults),
device placement and copy semantics."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from strategies import assert_result, default, dtypes, rand, seeds, shapes, supported

PY = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


@given(start=st.integers(-50, 50), stop=st.integers(-50, 50) | st.none(), step=st.integers(-7, 7).filter(bool))
def test_arange_int(device, start, stop, step):
    exp = np.arange(start, stop, step) if stop is not None else np.arange(start)
    res = xp.arange(start, stop, step, device=device) if stop is not None else xp.arange(start, device=device)
    assert res.device == device
    assert_result(res, exp, dtype=default(device, "integral"))


@given(data=st.data(), start=st.floats(-20, 20), length=st.floats(-20, 20), step=st.floats(0.3, 5),
       neg=st.booleans())
def test_arange_float(device, data, start, length, step, neg):
    step = -step if neg else step
    stop = start + length
    n = max(0, math.ceil((stop - start) / step))
    dt = data.draw(st.none() | dtypes(device, "real floating"), label="dtype")
    res = xp.arange(start, stop, step, dtype=dt, device=device)
    want = default(device, "real floating") if dt is None else dt
    assert res.shape == (n,)
    assert_result(res, start + step * np.arange(n, dtype=np.float64), dtype=want,
                  atol=1e-5 * (abs(start) + abs(stop) + 1) if want == np.float32 else None)


def test_arange_float_values_are_numpys(device):
    """Float arange bit for bit NumPy's fill: start, start + step rounded to the dtype, then
    start + i * delta in the dtype, delta the difference of the first two (so 1, 0.9, ... 0.7 is
    NumPy's 0.7000000000000001); a step past the dtype's range gives NumPy's start, inf, NaN."""
    rng = np.random.default_rng(21)
    for dt in supported(device, "real floating"):
        cases = [(1, 0, -0.1), (0, 1, 0.3), (-5.5, 100, 0.37), (0, 10, 1e300 if dt == np.float64 else 1e39)]
        for _ in range(30):
            a, st_ = float(rng.uniform(-100, 100)), float(rng.uniform(0.001, 3) * rng.choice([-1, 1]))
            cases.append((a, a + st_ * int(rng.integers(1, 3000)), st_))
        for a, b, s_ in cases:
            with np.errstate(all="ignore"):
                want = np.arange(a, b, s_, dtype=dt)
            got = to_numpy(xp.arange(a, b, s_, dtype=dt, device=device))
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want, err_msg=f"arange({a}, {b}, {s_}, {dt})")


@given(data=st.data(), start=st.integers(0, 30), n=st.integers(0, 30))
def test_arange_with_dtype(device, data, start, n):
    dt = data.draw(dtypes(device, ("integral", "real floating")), label="dtype")
    res = xp.arange(start, start + n, dtype=dt, device=device)
    assert_result(res, np.arange(start, start + n, dtype=np.float64).astype(dt), dtype=dt)


def test_python_ints_past_a_narrow_default_integer(device):
    """Where the default integer dtype is int32 (no shader-int64), Python ints past it raise
    OverflowError naming the function, never wrap; explicit dtypes keep NumPy's arange."""
    if default(device, "integral") != np.int32:
        assert xp.asarray([1, 2**40], device=device).tolist() == [1, 2**40]
        return
    for call, fn in ((lambda: xp.asarray([1, 2**40], device=device), "asarray"),
                     (lambda: xp.asarray(-2**31 - 1, device=device), "asarray"),
                     (lambda: xp.asarray([np.int64(2**40)], device=device), "asarray"),
                     (lambda: xp.arange(2**31 - 3, 2**31 + 2, device=device), "arange"),
                     (lambda: xp.arange(0, 2**31 + 10, 2**30, device=device), "arange")):
        with pytest.raises(OverflowError, match=rf"ruda\.{fn}: -?\d+ is out of range of int32, "
                                                rf"the default integer dtype on device"):
            call()
    assert xp.asarray([1, 2**31 - 1], device=device).tolist() == [1, 2**31 - 1]
    assert xp.arange(2**31 - 3, 2**31 - 1, device=device).tolist() == [2**31 - 3, 2**31 - 2]


def test_fill_values_past_float32_are_infinite(device):
    """As NumPy's cast: full(1e39) in float32 (and complex64) is inf, not an error."""
    for dt in (xp.float32, xp.complex64):
        got = to_numpy(xp.full(2, -1e39, dtype=dt, device=device))
        assert got.dtype == np.dtype(dt) and np.all(np.isneginf(got.real))
    assert np.all(np.isinf(to_numpy(xp.full_like(xp.ones(2, dtype=xp.float32, device=device),
                                                  1e39))))


def test_arange_errors(device):
    with pytest.raises(ValueError, match=r"ruda\.arange: step must not be zero"):
        xp.arange(0, 5, 0, device=device)
    with pytest.raises(TypeError, match=r"ruda\.arange: start must be a real"):
        xp.arange(1j, device=device)
    for args in [(0, math.nan), (0, math.inf), (-math.inf, 0), (0, 1, math.nan)]:
        with pytest.raises(ValueError, match=r"ruda\.arange: (start|stop|step) must be finite"):
            xp.arange(*args, device=device)
    # NumPy's rule: the first value must fit an explicit integer dtype; later ones wrap
    with pytest.raises(OverflowError, match=r"ruda\.arange: start -5 is out of range for uint8"):
        xp.arange(-5, 5, dtype=xp.uint8, device=device)
    assert_result(xp.arange(120, 130, dtype=xp.int8, device=device),
                  np.arange(120, 130, dtype=np.int8), dtype=xp.int8)


def test_arange_integer_dtype_from_float_arguments(device):
    """An integer dtype with float arguments gives NumPy's values on every device: start and
    start + step converted as int() truncates (each must fit), then first + i * their difference
    (a GPU filled start + i * step in the integer dtype: zeros for arange(0.5, 7.3, 0.7))."""
    ints = supported(device, "integral")
    cases = [(0.5, 7.3, 0.7, xp.int32), (0.5, 3.0, 0.3, xp.int32), (-3.7, 3.2, 0.9, xp.int8),
             (5.5, 0, -1.5, xp.uint8), (3.5, -1.0, -1.0, xp.uint8), (0, 300, 100.0, xp.int8),
             (-0.5, 3, 1.0, xp.uint8), (0.5, 1, 300.0, xp.uint8), (300.5, 0, 1.0, xp.uint8),
             (0.0, 1e-320, 1e300, xp.int32), (3.9, -3, -1.1, xp.int16), (0, 5, 1.5, xp.int64),
             (0.5, 1e19, 1e18, xp.int64), (0.5, 3.5, 1.0, xp.uint64)]
    for a, b, s_, dt in cases:
        if dt in ints:
            assert_result(xp.arange(a, b, s_, dtype=dt, device=device), np.arange(a, b, s_, dtype=dt),
                          dtype=dt)
    for a, b, s_, what in ((-1.5, 3, 1.0, r"start -1\.5"), (300.5, 303, 1.0, r"start 300\.5"),
                           (0.5, 400, 300.0, r"start \+ step 300\.5")):
        with pytest.raises(OverflowError, match=rf"ruda\.arange: {what} is out of range for uint8"):
            xp.arange(a, b, s_, dtype=xp.uint8, device=device)


def test_arange_bool(device):
    """bool arange as NumPy's: bool(start) and bool(start + step), at most two values; a longer
    one is a TypeError on every device (a GPU gave [False, True, True] for arange(0, 3))."""
    for args in [(0, 2), (1, 3), (0.5, 2), (0, 1), (0, 0), (2, 0, -1), (0.0, 1.5, 1.0), (3.0, 0, 1.0)]:
        assert_result(xp.arange(*args, dtype=xp.bool, device=device), np.arange(*args, dtype=bool),
                      dtype=xp.bool)
    for args in [(0, 3), (0, 3, 1.0), (0, 2, 0.5), (10,)]:
        with pytest.raises(TypeError, match=r"ruda\.arange: a bool arange holds at most 2 values"):
            xp.arange(*args, dtype=xp.bool, device=device)


@given(seed=seeds, shape=shapes(0, 3, 1, 4))
def test_asarray_python_data_default_dtypes(device, seed, shape):
    rng = np.random.default_rng(seed)
    for kind, dkind in (("b", None), ("i", "integral"), ("f", "real floating"), ("c", "complex floating")):
        host = rand(rng, shape, {"b": np.bool_, "i": np.int64, "f": np.float64, "c": np.complex128}[kind],
                    -1000, 1000)
        obj = host.tolist()
        want = np.dtype(bool) if dkind is None else default(device, dkind)
        res = xp.asarray(obj, device=device)
        assert res.device == device
        assert_result(res, host.astype(want), dtype=want)
    # a Python scalar
    assert_result(xp.asarray(2.5, device=device), np.asarray(2.5), dtype=default(device, "real floating"))
    assert_result(xp.asarray(-7, device=device), np.asarray(-7), dtype=default(device, "integral"))
    assert_result(xp.asarray(True, device=device), np.asarray(True), dtype=xp.bool)


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 4))
def test_asarray_numpy_and_dtype_argument(device, data, seed, shape):
    src = data.draw(st.sampled_from(supported(device)), label="source dtype")
    dst = data.draw(st.sampled_from(supported(device)), label="target dtype")
    a = rand(np.random.default_rng(seed), shape, src, 0, 100)
    assert_result(xp.asarray(a, device=device), a, dtype=src, rtol=0, atol=0)   # NumPy dtype kept
    if np.dtype(src).kind == "c" and np.dtype(dst).kind != "c":
        return
    assert_result(xp.asarray(a, dtype=dst, device=device), a.astype(dst), dtype=dst)
    if 0 not in shape:                 # nested lists lose the shape of empty arrays
        assert_result(xp.asarray(a.tolist(), dtype=dst, device=device), a.astype(dst), dtype=dst)


def test_asarray_copy_semantics(device):
    rng = np.random.default_rng(3)
    dt = supported(device, "real floating")[0]
    a = rand(rng, (4,), dt)
    x = xp.asarray(a, device=device)
    assert xp.asarray(x) is x
    y = xp.asarray(x, copy=True)
    y[0] = 100.0
    assert float(x[0]) == a[0] != 100.0
    z = xp.asarray(x, dtype=dt, copy=False)
    assert z is x
    if device != "cpu":
        with pytest.raises(ValueError, match=rf"copy=False.*'{device}'"):
            xp.asarray(a, device=device, copy=False)
    other = [d for d in xp.devices() if d != device]
    for d in other:
        with pytest.raises(ValueError, match=rf"copy=False.*'{device}'.*'{d}'"):
            xp.asarray(x, device=d, copy=False)
        moved = xp.asarray(x, device=d)
        assert moved.device == d
        np.testing.assert_array_equal(to_numpy(moved), a)


def test_asarray_of_non_native_byte_order(device):
    """Big-endian NumPy data (FITS files, network formats) gives the same values in the native
    dtype; copy=False, which would need a converted copy, raises."""
    for name in ("int32", "uint16", "float64", "complex64"):
        dt = np.dtype(name)
        if dt not in supported(device):
            continue
        a = np.arange(-3, 4).astype(dt.newbyteorder(">"))
        assert_result(xp.asarray(a, device=device), a.astype(dt), dtype=dt)
    with pytest.raises(ValueError, match=r"ruda\.asarray: copy=False"):
        xp.asarray(np.arange(3, dtype=">i4"), device=device, copy=False)


def test_asarray_errors(device):
    with pytest.raises(TypeError, match=r"ruda\.asarray: cannot make an array of str"):
        xp.asarray("abc", device=device)
    with pytest.raises(OverflowError, match=r"ruda\.asarray"):
        xp.asarray([2**70], device=device)
    with pytest.raises(TypeError, match=r"ruda\.asarray: cannot make an array of list"):
        xp.asarray([1, None], device=device)     # not the big-integer OverflowError
    with pytest.raises(TypeError, match=r"ruda\.asarray: dtype must be a ruda dtype"):
        xp.asarray([1], dtype="not-a-dtype", device=device)
    with pytest.raises(ValueError, match=r"unknown device 'nope'.*available devices: cpu"):
        xp.asarray([1], device="nope")
    with pytest.raises(ValueError, match=r"ruda\.asarray: .*inhomogeneous"):
        xp.asarray([[1.5, 2.5], [3.5]], device=device)
    f32 = supported(device, "real floating")[0]
    other = np.float64 if f32 == np.float32 else np.float32
    with pytest.raises(ValueError, match=r"ruda\.asarray: .*copy"):
        xp.asarray(rand(np.random.default_rng(1), (3,), other), dtype=f32, device=device, copy=False)


@given(data=st.data(), shape=shapes(0, 3, 0, 5))
def test_empty_zeros_ones(device, data, shape):
    dt = data.draw(st.none() | st.sampled_from(supported(device)), label="dtype")
    want = default(device, "real floating") if dt is None else dt
    for fn, ref in ((xp.zeros, np.zeros), (xp.ones, np.ones)):
        res = fn(shape, dtype=dt, device=device)
        assert res.device == device
        assert_result(res, ref(shape, dtype=want), dtype=want)
    e = xp.empty(shape, dtype=dt, device=device)
    assert e.shape == shape and e.dtype == want and e.device == device
    assert xp.zeros(shape[0] if shape else 3, dtype=dt, device=device).shape == ((shape[0],) if shape else (3,))


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 5))
def test_full(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    value = PY[np.dtype(dt).kind](rand(np.random.default_rng(seed), (), dt, -100, 100).item())
    res = xp.full(shape, value, dtype=dt, device=device)
    assert_result(res, np.full(shape, value, dtype=dt), dtype=dt)
    # default dtype from the Python type of the fill value
    res = xp.full(shape, value, device=device)
    want = {bool: np.dtype(bool), int: default(device, "integral"), float: default(device, "real floating"),
            complex: default(device, "complex floating")}[type(value)]
    assert_result(res, np.full(shape, value, dtype=want), dtype=want)


def test_full_errors(device):
    idt = supported(device, "signed integer")[0]
    with pytest.raises(TypeError, match=r"ruda\.full: a float fill_value needs a floating dtype"):
        xp.full((2,), 1.5, dtype=idt, device=device)
    with pytest.raises(TypeError, match=r"ruda\.full: a complex fill_value needs a complex dtype"):
        xp.full((2,), 1j, dtype=supported(device, "real floating")[0], device=device)
    with pytest.raises(OverflowError, match=r"ruda\.full: fill_value 300 is out of range for int8"):
        xp.full((2,), 300, dtype=xp.int8, device=device)
    assert_result(xp.full((2,), 2**64 - 1, dtype=xp.bool, device=device), np.ones(2, bool),
                  dtype=xp.bool)     # any nonzero number is True
    with pytest.raises(ValueError, match=r"ruda\.full: shape must not have negative sizes"):
        xp.full((2, -1), 1, device=device)
    with pytest.raises(TypeError, match=r"ruda\.full: fill_value must be a Python scalar"):
        xp.full((2,), [1, 2], device=device)


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 4))
def test_like_functions(device, data, seed, shape):
    src = data.draw(st.sampled_from(supported(device)), label="source dtype")
    dst = data.draw(st.none() | st.sampled_from(supported(device)), label="dtype")
    a = rand(np.random.default_rng(seed), shape, src)
    x = xp.asarray(a, device=device)
    want = src if dst is None else dst
    assert_result(xp.zeros_like(x, dtype=dst), np.zeros(shape, want), dtype=want)
    assert_result(xp.ones_like(x, dtype=dst), np.ones(shape, want), dtype=want)
    e = xp.empty_like(x, dtype=dst)
    assert e.shape == shape and e.dtype == want and e.device == device
    value = PY[np.dtype(want).kind](rand(np.random.default_rng(seed + 1), (), want, 1, 50).item())
    assert_result(xp.full_like(x, value, dtype=dst), np.full(shape, value, want), dtype=want)
    for d in xp.devices():
        assert xp.zeros_like(x, device=d).device == d


@given(data=st.data(), n=st.integers(0, 6), m=st.integers(0, 6) | st.none(), k=st.integers(-7, 7))
def test_eye(device, data, n, m, k):
    dt = data.draw(st.none() | st.sampled_from(supported(device)), label="dtype")
    want = default(device, "real floating") if dt is None else dt
    res = xp.eye(n, m, k=k, dtype=dt, device=device)
    assert_result(res, np.eye(n, m, k=k, dtype=want), dtype=want)


@given(data=st.data(), start=st.floats(-100, 100), stop=st.floats(-100, 100), num=st.integers(0, 40),
       endpoint=st.booleans())
def test_linspace(device, data, start, stop, num, endpoint):
    dt = data.draw(st.none() | dtypes(device, "real floating"), label="dtype")
    want = default(device, "real floating") if dt is None else dt
    res = xp.linspace(start, stop, num, dtype=dt, device=device, endpoint=endpoint)
    exp = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.float64).astype(want)
    assert_result(res, exp, dtype=want, atol=(2e-5 if want == np.float32 else 1e-12) * (abs(start) + abs(stop)))


def test_linspace_complex_and_errors(device):
    cdt = supported(device, "complex floating")
    if cdt:
        res = xp.linspace(1 + 2j, -3 + 0.5j, 7, device=device)
        assert_result(res, np.linspace(1 + 2j, -3 + 0.5j, 7), dtype=default(device, "complex floating"))
    with pytest.raises(TypeError, match=r"ruda\.linspace: complex bounds need a complex dtype"):
        xp.linspace(0, 1j, 3, dtype=supported(device, "real floating")[0], device=device)
    with pytest.raises(ValueError, match=r"ruda\.linspace: num must be non-negative"):
        xp.linspace(0, 1, -1, device=device)


@pytest.mark.parametrize("start, stop, num, endpoint", [
    (-3.4e38, 3.4e38, 5, True), (-3.4e38, 3.4e38, 2, True), (-3.4e38, 3.4e38, 4, False),
    (3.4028235e38, -3.4028235e38, 7, True), (0.0, 3.4e38, 6, False), (-3.4e38, 1.0, 9, True),
    (-3.4028235e38, 3.4028235e38, 1001, False)])
def test_linspace_span_past_the_largest_float(device, start, stop, num, endpoint):
    """Bounds whose difference overflows float32: finite values within two ulps of NumPy's in
    float64 (wgpu without shader-f64 overflowed start + i * step to inf); float64 bounds near
    1.7e308, whose difference overflows float64 too, against NumPy's at a quarter scale."""
    cases = [(xp.float32, start, stop)]
    if xp.float64 in supported(device):
        cases.append((xp.float64, start * 5e269, stop * 5e269))      # spans to 3.4e308
    if xp.complex64 in supported(device):
        cases.append((xp.complex64, complex(start, stop / 2), complex(stop, -start)))
    for dt, a, b in cases:
        if dt == xp.float64 and abs(b - a) == math.inf:
            if device.kind != "wgpu":      # NumPy's and CuPy's own linspace: nan and inf
                continue
            exp = 4 * np.linspace(a / 4, b / 4, num, endpoint=endpoint)    # power-of-2 scaled
        else:
            exp = np.linspace(a, b, num, endpoint=endpoint).astype(dt)
        res = xp.linspace(a, b, num, endpoint=endpoint, dtype=dt, device=device)
        part = np.finfo(dt)
        big = max(abs(v) for c in (a, b) for v in (c.real, c.imag))
        assert_result(res, exp, dtype=dt, rtol=2 * part.eps, atol=2 * float(part.eps) * big)


@given(start=st.floats(-100, 100), stop=st.floats(-100, 100), num=st.integers(0, 300),
       endpoint=st.booleans())
def test_linspace_float32_to_two_ulps(device, start, stop, num, endpoint):
    """float32 values within two ulps of NumPy's (float64 rounded), also where start + i * step
    cancels (a float32 sum, without shader-f64, was an ulp of the bounds off: 30 ulps near 0)."""
    res = xp.linspace(start, stop, num, endpoint=endpoint, dtype=xp.float32, device=device)
    exp = np.linspace(start, stop, num, endpoint=endpoint).astype(np.float32)
    tiny = np.finfo(np.float32).smallest_normal         # (subnormals may flush to 0)
    assert_result(res, exp, dtype=xp.float32, rtol=2 * 2.0 ** -23,
                  atol=2.0 ** -36 * (abs(start) + abs(stop)) + tiny)


@given(data=st.data(), seed=seeds, sizes=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       indexing=st.sampled_from(["xy", "ij"]))
def test_meshgrid(device, data, seed, sizes, indexing):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    arrs = [rand(rng, (n,), dt) for n in sizes]
    res = xp.meshgrid(*[xp.asarray(a, device=device) for a in arrs], indexing=indexing)
    exp = np.meshgrid(*arrs, indexing=indexing)
    assert isinstance(res, (tuple, list)) and len(res) == len(exp)
    for r, e in zip(res, exp):
        assert r.device == device
        assert_result(r, e, dtype=dt, rtol=0, atol=0)


def test_meshgrid_errors(device):
    f = supported(device, "real floating")[0]
    i = supported(device, "signed integer")[0]
    a = xp.asarray(rand(np.random.default_rng(1), (3,), f), device=device)
    b = xp.asarray(rand(np.random.default_rng(1), (2,), i), device=device)
    with pytest.raises(ValueError, match=r"ruda\.meshgrid: arrays must share one dtype"):
        xp.meshgrid(a, b)
    with pytest.raises(ValueError, match=r"ruda\.meshgrid: indexing must be"):
        xp.meshgrid(a, indexing="yx")
    with pytest.raises(ValueError, match=r"ruda\.meshgrid: arrays\[0\] must be 1-D"):
        xp.meshgrid(xp.reshape(a, (1, 3)))


@given(data=st.data(), seed=seeds, shape=shapes(2, 4, 1, 5), k=st.integers(-5, 5))
def test_tril_triu(device, data, seed, shape, k):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt)
    x = xp.asarray(a, device=device)
    assert_result(xp.tril(x, k=k), np.tril(a, k), dtype=dt, rtol=0, atol=0)
    assert_result(xp.triu(x, k=k), np.triu(a, k), dtype=dt, rtol=0, atol=0)


def test_tril_needs_2d(device):
    x = xp.asarray(rand(np.random.default_rng(1), (3,), supported(device, "real floating")[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.tril: x must have at least 2 dimensions; got shape \(3,\)"):
        xp.tril(x)


@pytest.mark.parametrize("k", [2**31, -2**31 - 1, 2**32 - 1, 2**32, -2**32, 2**32 + 1, 2**62, -2**62,
                               2**70, -2**70])
def test_tril_triu_far_diagonals(device, k):
    """Diagonals past int32 keep all or nothing, as NumPy (wgpu wrapped k to int32: 2**32 was 0),
    also past int64 (where NumPy cannot take k: its oracle gets the same diagonal within int64)."""
    dt = supported(device, "real floating")[0]
    a = rand(np.random.default_rng(2), (2, 3, 4), dt)
    x = xp.asarray(a, device=device)
    nk = max(-2**62, min(2**62, k))
    assert_result(xp.tril(x, k=k), np.tril(a, nk), dtype=dt, rtol=0, atol=0)
    assert_result(xp.triu(x, k=k), np.triu(a, nk), dtype=dt, rtol=0, atol=0)


def test_asarray_of_nested_device_arrays_stays_on_their_device(device, rng):
    vals = rng.standard_normal(3).astype(np.float32)
    a = xp.asarray(vals, device=device)
    out = xp.asarray([[a[0], a[1]], [a[2], a[0]]])
    assert out.device == device and out.dtype == xp.float32
    np.testing.assert_array_equal(to_numpy(out), np.asarray([[vals[0], vals[1]], [vals[2], vals[0]]]))
    # rows of Python scalars beside rows holding arrays (NumPy's: promoted together)
    out = xp.asarray([[a[0], -a[1]], [0.5, 1]])
    assert out.device == device and out.dtype == xp.float32
    np.testing.assert_array_equal(to_numpy(out), np.asarray([[vals[0], -vals[1]], [0.5, 1]], np.float32))
    i8 = xp.asarray(3, dtype=xp.int8, device=device)
    out = xp.asarray([[[i8, 1]], [[2, -4]]])
    assert out.dtype == xp.int8 and to_numpy(out).tolist() == [[[3, 1]], [[2, -4]]]
    with pytest.raises(OverflowError, match=r"ruda\.asarray: .*1000 out of bounds for int8"):
        xp.asarray([[i8, i8], [1, 1000]])


def test_arange_length_of_an_underflowing_quotient(device):
    """(stop - start) / step underflowing to 0 counts one value, -0 none, as NumPy (wgpu gave
    none for arange(0.0, 1e-300, 1e300))."""
    dt = supported(device, "real floating")[-1]
    for args in [(0.0, 1e-300, 1e300), (0.0, -1e-300, 1e300), (1.0, 1.0 + 2 ** -40, 1e300)]:
        got = xp.arange(*args, dtype=dt, device=device)
        want = np.arange(*args, dtype=dt)
        assert got.shape == want.shape, args
        np.testing.assert_array_equal(to_numpy(got), want)
