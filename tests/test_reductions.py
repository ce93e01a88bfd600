"""Statistical and utility reductions (sum, prod, max, min, mean, std, var, cumulative_sum,
cumulative_prod, all, any, diff): values against NumPy, and the standard's axis/keepdims/dtype
rules (sum of int8 gives the default integer dtype, etc.)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from strategies import assert_result, default, dtypes, layouts, rand, seeds, shapes, supported, view


@st.composite
def shape_and_axis(draw, min_dims=0, max_dims=3, min_side=1, max_side=4):
    shape = draw(shapes(min_dims, max_dims, min_side, max_side))
    nd = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none" or nd == 0:
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-nd, nd - 1))
    axes = draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
    return shape, tuple(a - nd if draw(st.booleans()) else a for a in axes)


def accumulation_dtype(device, dt):
    """The standard's default result dtype of sum/prod/cumulative_*/trace."""
    dt = np.dtype(dt)
    dint = default(device, "integral")
    if dt.kind == "b":
        return dint
    if dt.kind == "i" and dt.itemsize < dint.itemsize:
        return dint
    if dt.kind == "u" and dt.itemsize < dint.itemsize:
        return np.dtype(f"uint{dint.itemsize * 8}")
    return dt


def _np_axis(axis):
    return axis if axis is None or isinstance(axis, int) else tuple(axis)


@given(data=st.data(), seed=seeds, sa=shape_and_axis(), keepdims=st.booleans(), layout=layouts)
def test_sum(device, data, seed, sa, keepdims, layout):
    shape, axis = sa
    dt = data.draw(dtypes(device, ("bool", "integral", "real floating", "complex floating")), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt, 0 if np.dtype(dt).kind == "u" else -9, 9)
    want = accumulation_dtype(device, dt)
    x, a = view(xp.asarray(a, device=device), a, layout)
    res = xp.sum(x, axis=axis, keepdims=keepdims)
    exp = np.sum(a.astype(np.complex128 if want.kind == "c" else np.float64 if want.kind == "f" else want),
                 axis=_np_axis(axis), keepdims=keepdims)
    assert_result(res, exp, dtype=want, loose=True)


@given(data=st.data(), seed=seeds, sa=shape_and_axis(max_side=3), keepdims=st.booleans())
def test_prod(device, data, seed, sa, keepdims):
    shape, axis = sa
    dt = data.draw(dtypes(device, ("bool", "integral", "real floating", "complex floating")), label="dtype")
    k = np.dtype(dt).kind
    a = rand(np.random.default_rng(seed), shape, dt, *((0.5, 1.5) if k in "fc" else (0, 2) if k == "u" else (-2, 2)))
    want = accumulation_dtype(device, dt)
    res = xp.prod(xp.asarray(a, device=device), axis=axis, keepdims=keepdims)
    exp = np.prod(a.astype(np.complex128 if want.kind == "c" else np.float64 if want.kind == "f" else want),
                  axis=_np_axis(axis), keepdims=keepdims)
    assert_result(res, exp, dtype=want, loose=True)


@given(data=st.data(), seed=seeds, sa=shape_and_axis(min_dims=1))
def test_sum_prod_dtype_argument(device, data, seed, sa):
    shape, axis = sa
    src = data.draw(dtypes(device, ("integral", "real floating")), label="dtype")
    dst = data.draw(dtypes(device, ("real floating",)), label="result dtype")
    a = rand(np.random.default_rng(seed), shape, src, 0, 3)
    x = xp.asarray(a, device=device)
    assert_result(xp.sum(x, axis=axis, dtype=dst), np.sum(a.astype(np.float64), axis=_np_axis(axis)),
                  dtype=dst, loose=True)
    assert_result(xp.prod(x, axis=axis, dtype=dst), np.prod(a.astype(np.float64), axis=_np_axis(axis)),
                  dtype=dst, loose=True)


@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "uint16", "bool"])
def test_sum_of_narrow_integers_widens(device, name):
    dt = np.dtype(name)
    if dt not in supported(device):
        pytest.skip(f"{name} not on {device}")
    rng = np.random.default_rng(5)
    a = rand(rng, (40,), dt, 0, 120 if name != "int8" else 100)
    want = accumulation_dtype(device, dt)
    assert want.itemsize >= default(device, "integral").itemsize
    res = xp.sum(xp.asarray(a, device=device))
    assert_result(res, np.sum(a, dtype=want), dtype=want)          # would overflow in int8
    assert int(res) == int(a.astype(np.int64).sum())
    cs = xp.cumulative_sum(xp.asarray(a, device=device))
    assert_result(cs, np.cumsum(a, dtype=want), dtype=want)


@pytest.mark.parametrize("name", ["max", "min"])
@given(data=st.data(), seed=seeds, sa=shape_and_axis(), keepdims=st.booleans(), layout=layouts)
def test_max_min(device, name, data, seed, sa, keepdims, layout):
    shape, axis = sa
    dt = data.draw(dtypes(device, ("integral", "real floating")), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt, -100, 100)
    x, a = view(xp.asarray(a, device=device), a, layout)
    res = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
    assert_result(res, getattr(np, name)(a, axis=_np_axis(axis), keepdims=keepdims), dtype=dt, rtol=0, atol=0)


def test_max_min_nan_propagates(device):
    for dt in supported(device, "real floating"):
        a = rand(np.random.default_rng(1), (3, 4), dt)
        a[1, 2] = np.nan
        x = xp.asarray(a, device=device)
        assert_result(xp.max(x, axis=1), np.max(a, axis=1), dtype=dt)
        assert_result(xp.min(x, axis=0), np.min(a, axis=0), dtype=dt)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_max_min_over_no_axes_of_empty(device, name, shape):
    """axis=() reduces nothing, so an empty x comes back as a copy (NumPy's), keepdims or not."""
    for dt in (supported(device, "real floating")[0], default(device, "integral")):
        a = np.zeros(shape, dt)
        for keepdims in (False, True):
            res = getattr(xp, name)(xp.asarray(a, device=device), axis=(), keepdims=keepdims)
            assert_result(res, getattr(np, name)(a, axis=(), keepdims=keepdims), dtype=dt)

def test_nan_is_true(device):
    """NaN (in either part of a complex number) is nonzero, so true, in all, any, count_nonzero,
    nonzero and the cast to bool, as in NumPy; +-0 is false.  (wgpu once took NaN for false.)"""
    real = np.asarray([np.nan, 0.0, -0.0, 1.0, np.inf, np.nan], np.float64)
    cplx = np.asarray([complex(np.nan, 0), complex(0, np.nan), 0j, complex(-0.0, 0), 1j, 0j])
    for dt in supported(device, ("real floating", "complex floating")):
        a = (real if np.dtype(dt).kind == "f" else cplx).astype(dt)
        x = xp.asarray(a, device=device)
        for name in ("all", "any"):
            assert_result(getattr(xp, name)(x[:1]), getattr(np, name)(a[:1]))
            assert_result(getattr(xp, name)(x[None, :], axis=1), getattr(np, name)(a[None, :], axis=1))
        assert int(xp.count_nonzero(x)) == np.count_nonzero(a), dt
        assert_result(xp.nonzero(x)[0], np.nonzero(a)[0].astype(default(device, "indexing")))
        if np.dtype(dt).kind == "f":
            assert_result(xp.astype(x, xp.bool), a.astype(bool))


@given(data=st.data(), seed=seeds, sa=shape_and_axis(), keepdims=st.booleans(), layout=layouts)
def test_mean(device, data, seed, sa, keepdims, layout):
    shape, axis = sa
    dt = data.draw(dtypes(device, ("real floating", "complex floating")), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt)
    x, a = view(xp.asarray(a, device=device), a, layout)
    res = xp.mean(x, axis=axis, keepdims=keepdims)
    exp = np.mean(a.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64), axis=_np_axis(axis),
                  keepdims=keepdims)
    assert_result(res, exp, dtype=dt, loose=True)


@pytest.mark.parametrize("shape, axis", [((0,), None), ((3, 0), 1), ((0, 2), 0)])
def test_mean_of_no_values_complex(device, shape, axis):
    """The mean of no complex values is NaN in both parts, as NumPy's 0 / 0 (wgpu gave NaN + 0j)."""
    for dt in supported(device, "complex floating"):
        for keepdims in (False, True):
            res = xp.mean(xp.zeros(shape, dtype=dt, device=device), axis=axis, keepdims=keepdims)
            want_shape = np.sum(np.zeros(shape), axis=axis, keepdims=keepdims).shape
            assert_result(res, np.full(want_shape, complex(np.nan, np.nan), dt), dtype=dt)
            got = to_numpy(res)
            assert np.isnan(got.real).all() and np.isnan(got.imag).all()

def test_mean_complex_with_infinite_parts(device):
    """A complex mean divides each part of the sum by the count: an infinite part leaves the other
    finite (mean([1 + inf j, 2]) is 1.5 + inf j; dividing by the complex count made it NaN)."""
    inf, nan = np.inf, np.nan
    rows = [[complex(1, inf), 2], [complex(inf, 1), complex(2, 3)], [complex(-inf, -1), complex(1, -2)],
            [complex(1.5, -2.5), complex(-0.5, 4.5)], [complex(nan, 1), complex(1, 1)],
            [complex(inf, inf), complex(1, 2)]]
    want = [complex(1.5, inf), complex(inf, 2), complex(-inf, -1.5), complex(0.5, 1), complex(nan, 1),
            complex(inf, inf)]
    for dt in supported(device, "complex floating"):
        a = np.array(rows, dtype=dt)
        for axis, keepdims in ((1, False), (-1, True)):
            got = to_numpy(xp.mean(xp.asarray(a, device=device), axis=axis, keepdims=keepdims))
            assert got.dtype == dt and got.shape == ((6, 1) if keepdims else (6,))
            np.testing.assert_array_equal(got.ravel(), np.array(want, dtype=dt))
        got = to_numpy(xp.mean(xp.asarray(a[0], device=device)))       # all axes: 0-d
        assert got.shape == () and got.dtype == dt and got == complex(1.5, inf)


@pytest.mark.parametrize("name", ["std", "var"])
@given(data=st.data(), seed=seeds, sa=shape_and_axis(min_side=2), keepdims=st.booleans(),
       correction=st.sampled_from([0, 1, 0.5]))
def test_std_var(device, name, data, seed, sa, keepdims, correction):
    shape, axis = sa
    dt = data.draw(dtypes(device, "real floating"), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt)
    res = getattr(xp, name)(xp.asarray(a, device=device), axis=axis, correction=correction, keepdims=keepdims)
    exp = getattr(np, name)(a.astype(np.float64), axis=_np_axis(axis), ddof=correction, keepdims=keepdims)
    assert_result(res, exp, dtype=dt, loose=True)


@pytest.mark.parametrize("name", ["std", "var"])
@pytest.mark.parametrize("shape, axis, correction", [((0, 3), None, 0), ((0, 3), 0, 1), ((2, 3), 1, 3),
                                                     ((2, 3), 0, 2), ((), None, 1), ((4,), None, 4.5)])
def test_std_var_without_degrees_of_freedom(device, name, shape, axis, correction):
    """N - correction <= 0 gives NaN (the standard; NumPy gives inf where N > 0, and a negative
    divisor gave -0 or a negative variance on wgpu)."""
    dt = supported(device, "real floating")[0]
    a = rand(np.random.default_rng(9), shape, dt)
    res = getattr(xp, name)(xp.asarray(a, device=device), axis=axis, correction=correction, keepdims=True)
    want_shape = np.sum(a, axis=axis, keepdims=True).shape
    assert_result(res, np.full(want_shape, np.nan, dt), dtype=dt)


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 0, 4), include_initial=st.booleans(), layout=layouts)
def test_cumulative(device, name, data, seed, shape, include_initial, layout):
    dt = data.draw(dtypes(device, ("bool", "integral", "real floating", "complex floating")), label="dtype")
    k = np.dtype(dt).kind
    a = rand(np.random.default_rng(seed), shape, dt, *((0.5, 1.5) if k in "fc" else (0, 3) if k == "u" else (-3, 3)))
    x, a = view(xp.asarray(a, device=device), a, layout)
    shape = a.shape
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis") if len(shape) > 1 else \
        data.draw(st.none() | st.just(0), label="axis")
    want = accumulation_dtype(device, dt)
    res = getattr(xp, name)(x, axis=axis, include_initial=include_initial)
    wide = a.astype(np.complex128 if want.kind == "c" else np.float64 if want.kind == "f" else want)
    exp = getattr(np, name)(wide, axis=axis, include_initial=include_initial)
    assert_result(res, exp, dtype=want, loose=True)


def test_real_dtype_for_complex_values_refused(device):
    """sum/prod/cumulative_sum/trace with a real dtype= of complex x raise, as astype does
    (the imaginary parts would be dropped silently)."""
    c = supported(device, "complex floating")[0]
    f = supported(device, "real floating")[0]
    x = xp.asarray(np.asarray([[1 + 2j, 3j], [2, 1j]], dtype=c), device=device)
    for call, fn in ((lambda: xp.sum(x, dtype=f), "sum"), (lambda: xp.prod(x, dtype=f), "prod"),
                     (lambda: xp.cumulative_sum(x, axis=0, dtype=f), "cumulative_sum"),
                     (lambda: xp.linalg.trace(x, dtype=f), r"linalg\.trace")):
        with pytest.raises(TypeError, match=rf"ruda\.{fn}: dtype=float\d+ would drop the "
                                            rf"imaginary part"):
            call()
    assert complex(xp.sum(x, dtype=c)) == 3 + 6j


def test_cumulative_dtype_argument_and_errors(device):
    f = supported(device, "real floating")[0]
    a = rand(np.random.default_rng(2), (3, 4), supported(device, "signed integer")[0], -5, 5)
    x = xp.asarray(a, device=device)
    assert_result(xp.cumulative_sum(x, axis=1, dtype=f), np.cumsum(a.astype(np.float64), axis=1), dtype=f)
    with pytest.raises(ValueError, match=r"ruda\.cumulative_sum: axis is required for a 2-D array"):
        xp.cumulative_sum(x)
    with pytest.raises(IndexError, match=r"ruda\.cumulative_prod: axis=2 is out of bounds"):
        xp.cumulative_prod(x, axis=2)


@pytest.mark.parametrize("name", ["all", "any"])
@given(data=st.data(), seed=seeds, sa=shape_and_axis(min_side=0), keepdims=st.booleans(),
       density=st.sampled_from([0.0, 0.2, 0.9, 1.0]), layout=layouts)
def test_all_any(device, name, data, seed, sa, keepdims, density, layout):
    shape, axis = sa
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, 1, 9) * (rng.random(shape) < density).astype(dt)   # mix of zeros and nonzeros
    x, a = view(xp.asarray(a, device=device), a, layout)
    res = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
    assert_result(res, getattr(np, name)(a, axis=_np_axis(axis), keepdims=keepdims), dtype=xp.bool)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 6), n=st.integers(0, 3), extra=st.booleans())
def test_diff(device, data, seed, shape, n, extra):
    dt = data.draw(dtypes(device, ("integral", "real floating", "complex floating")), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, 0 if np.dtype(dt).kind == "u" else -50, 50)
    if np.dtype(dt).kind == "u":
        a = np.sort(a, axis=-1)                      # no unsigned wrap-around for n = 1
        n = min(n, 1)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x = xp.asarray(a, device=device)
    kw, nkw = {}, {}
    if extra and np.dtype(dt).kind != "u":
        ps = list(shape)
        ps[axis] = 2
        p = rand(rng, tuple(ps), dt, -50, 50)
        kw["prepend"], nkw["prepend"] = xp.asarray(p, device=device), p
        kw["append"], nkw["append"] = xp.asarray(p[::-1].copy(), device=device), p[::-1].copy()
    res = xp.diff(x, axis=axis, n=n, **kw)
    assert_result(res, np.diff(a, n=n, axis=axis, **nkw), dtype=dt)


def test_reduction_errors(device):
    f = supported(device, "real floating")[0]
    x = xp.asarray(rand(np.random.default_rng(1), (3, 4), f), device=device)
    i = xp.asarray(rand(np.random.default_rng(1), (3, 4), supported(device, "signed integer")[0]), device=device)
    with pytest.raises(IndexError, match=r"ruda\.sum: axis=2 is out of bounds for an array of 2 dimensions"):
        xp.sum(x, axis=2)
    with pytest.raises(ValueError, match=r"ruda\.sum: axis=\(0, -2\) repeats an axis"):
        xp.sum(x, axis=(0, -2))
    with pytest.raises(TypeError, match=r"ruda\.mean: x must have a floating-point dtype; got int"):
        xp.mean(i)
    with pytest.raises(TypeError, match=r"ruda\.std: x must have a real floating-point dtype; got int"):
        xp.std(i)
    with pytest.raises(ValueError, match=r"ruda\.max: cannot reduce over a zero-size axis"):
        xp.max(xp.asarray(np.empty((0, 3), f), device=device), axis=0)
    with pytest.raises(TypeError, match=r"ruda\.max: x must have a real numeric dtype; got bool"):
        xp.max(xp.asarray(np.asarray([True]), device=device))
    e = xp.asarray(np.empty((0, 3), f), device=device)
    assert_result(xp.sum(e, axis=0), np.zeros(3, f), dtype=f)
    assert_result(xp.prod(e, axis=0), np.ones(3, f), dtype=f)
