"""__getitem__/__setitem__ (ints, slices incl. negative steps, ..., None, integer arrays, boolean
masks), take and take_along_axis, against NumPy on every device."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from strategies import assert_result, dtypes, rand, seeds, shapes, supported


@st.composite
def basic_keys(draw, shape):
    """A basic index for ``shape``: ints, slices (any step sign), an optional ..., some None."""
    parts = []
    for n in shape:
        choice = draw(st.sampled_from(["int", "slice", "full"]))
        if choice == "int":
            parts.append(draw(st.integers(-n, n - 1)))
        elif choice == "slice":
            start = draw(st.none() | st.integers(-n, n))
            stop = draw(st.none() | st.integers(-n, n))
            step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))
            parts.append(slice(start, stop, step))
        else:
            parts.append(slice(None))
    if draw(st.booleans()):
        # ... stands for a run of dimensions: the parts after it index the last ones
        k = draw(st.integers(0, len(parts)))
        c = draw(st.integers(0, len(parts) - k))
        parts = parts[:k] + [Ellipsis] + parts[k + c:]
    elif draw(st.booleans()):
        parts = parts[:draw(st.integers(0, len(parts)))]       # only a prefix need be given
    for _ in range(draw(st.integers(0, 2))):
        parts.insert(draw(st.integers(0, len(parts))), None)
    if len(parts) == 1 and draw(st.booleans()):
        return parts[0]
    return tuple(parts)


@st.composite
def array_and_key(draw, min_dims=0, max_dims=4):
    shape = draw(shapes(min_dims, max_dims, 1, 5))
    return shape, draw(basic_keys(shape))


@given(data=st.data(), seed=seeds, sk=array_and_key())
def test_getitem_basic(device, data, seed, sk):
    shape, key = sk
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt, -100, 100)
    x = xp.asarray(a, device=device)
    res = x[key]
    assert res.device == device
    assert_result(res, a[key], dtype=dt, rtol=0, atol=0)


@given(data=st.data(), seed=seeds, sk=array_and_key(), scalar=st.booleans())
def test_setitem_basic(device, data, seed, sk, scalar):
    shape, key = sk
    dt = data.draw(dtypes(device, ("bool", "integral", "real floating", "complex floating")), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, -100, 100)
    exp = a.copy()
    target = exp[key].shape
    if scalar:
        value = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[np.dtype(dt).kind](
            rand(rng, (), dt, -100, 100).item())
        exp[key] = value
    else:
        vshape = target[data.draw(st.integers(0, len(target)), label="drop leading dims"):]
        v = rand(rng, vshape, dt, -100, 100)
        exp[key] = v
        value = xp.asarray(v, device=device)
    x = xp.asarray(a.copy(), device=device)
    x[key] = value
    assert_result(x, exp, dtype=dt, rtol=0, atol=0)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 5), ishape=shapes(0, 2, 1, 4))
def test_getitem_integer_array(device, data, seed, shape, ishape):
    dt = data.draw(dtypes(device, ("integral", "real floating")), label="dtype")
    idt = data.draw(dtypes(device, ("signed integer",)), label="index dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, -100, 100)
    x = xp.asarray(a, device=device)
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    n = shape[axis]
    idx = rng.integers(-n, n, size=ishape).astype(idt)
    # one integer array among full slices, and with a leading ellipsis
    key = (slice(None),) * axis + (xp.asarray(idx, device=device),)
    assert_result(x[key], a[(slice(None),) * axis + (idx,)], dtype=dt, rtol=0, atol=0)
    last = rng.integers(-shape[-1], shape[-1], size=ishape).astype(idt)
    assert_result(x[..., xp.asarray(last, device=device)], a[..., last], dtype=dt, rtol=0, atol=0)
    # one integer array per axis, broadcast together
    idxs = [rng.integers(-m, m, size=ishape).astype(idt) for m in shape]
    res = x[tuple(xp.asarray(i, device=device) for i in idxs)]
    assert_result(res, a[tuple(idxs)], dtype=dt, rtol=0, atol=0)
    # a Python list of ints on the first axis
    lst = [int(i) for i in rng.integers(-shape[0], shape[0], size=3)]
    assert_result(x[lst], a[lst], dtype=dt, rtol=0, atol=0)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 6))
def test_setitem_integer_array(device, data, seed, shape):
    dt = data.draw(dtypes(device, ("integral", "real floating")), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, -100, 100)
    k = data.draw(st.integers(1, shape[0]), label="count")
    idx = rng.permutation(shape[0])[:k]                  # unique: assignment order is unspecified
    exp = a.copy()
    v = rand(rng, (k,) + shape[1:], dt, -100, 100)
    exp[idx] = v
    x = xp.asarray(a.copy(), device=device)
    x[xp.asarray(idx, device=device)] = xp.asarray(v, device=device)
    assert_result(x, exp, dtype=dt, rtol=0, atol=0)


@pytest.mark.parametrize("key,value_shape", [
    ((slice(1, 3),), (3,)), ((0,), (2, 4)), ((Ellipsis,), (3, 1, 4)), ((0, 0), (2,)),
    ((slice(None), slice(None, None, 2)), (3,)), ("mask", (2,)), ("none", (4,)),
    ("index", (3, 4)), ((False,), (5,))])
def test_setitem_value_that_does_not_broadcast(device, key, value_shape):
    """x[key] = v raises ValueError, as NumPy does, when v does not broadcast to x[key]'s shape
    (never a partial or repeated store), and leaves x as it was."""
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=device)
    if isinstance(key, str):
        key = {"mask": x > 5, "none": x > 100, "index": xp.asarray([0, 2], device=device)}[key]
    with pytest.raises(ValueError, match="__setitem__"):
        x[key] = xp.ones(value_shape, device=device)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)


@pytest.mark.parametrize("key,value_shape", [((0,), (1, 1, 4)), ("index", (1, 2, 4)),
                                             ("mask", (1,)), ((False,), (4,))])
def test_setitem_value_with_leading_ones(device, key, value_shape):
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=device)
    if isinstance(key, str):
        key = {"mask": x > 5, "index": xp.asarray([0, 2], device=device)}[key]
        a[np.asarray(key.to_device("cpu"))] = np.arange(np.prod(value_shape)).reshape(value_shape)
    else:
        a[key] = np.arange(np.prod(value_shape)).reshape(value_shape)
    x[key] = xp.reshape(xp.arange(int(np.prod(value_shape)), dtype=x.dtype, device=device),
                        value_shape)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 5))
def test_boolean_mask(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, -100, 100)
    k = data.draw(st.integers(1, len(shape)), label="mask dims")
    mask = rng.random(shape[:k]) < 0.5
    x = xp.asarray(a.copy(), device=device)
    m = xp.asarray(mask, device=device)
    assert_result(x[m], a[mask], dtype=dt, rtol=0, atol=0)
    if k < len(shape):
        assert_result(x[m, ...], a[mask, ...], dtype=dt, rtol=0, atol=0)
    # set through the mask: a scalar, then an array of the selected shape
    exp = a.copy()
    s = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[np.dtype(dt).kind](rand(rng, (), dt, 1, 9).item())
    exp[mask] = s
    x[m] = s
    assert_result(x, exp, dtype=dt, rtol=0, atol=0)
    v = rand(rng, exp[mask].shape, dt, -100, 100)
    exp[mask] = v
    x[m] = xp.asarray(v, device=device)
    assert_result(x, exp, dtype=dt, rtol=0, atol=0)


def test_zero_d_and_zero_size(device):
    rng = np.random.default_rng(1)
    dt = supported(device, "real floating")[0]
    a = rand(rng, (), dt)
    x = xp.asarray(a, device=device)
    assert_result(x[()], a[()], dtype=dt)
    assert_result(x[...], a[...], dtype=dt)
    assert_result(x[None], a[None], dtype=dt)
    m = xp.asarray(np.asarray(True), device=device)
    assert_result(x[m], a[np.asarray(True)], dtype=dt)
    b = rand(rng, (0, 3), dt)
    y = xp.asarray(b, device=device)
    assert_result(y[:, 1:], b[:, 1:], dtype=dt)
    assert_result(y[::-1, ::-2], b[::-1, ::-2], dtype=dt)


def test_indexing_errors(device):
    dt = supported(device, "real floating")[0]
    x = xp.asarray(rand(np.random.default_rng(2), (3, 4), dt), device=device)
    with pytest.raises(IndexError, match=r"index 3 is out of bounds for axis 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match=r"index -5 is out of bounds for axis 1 with size 4"):
        x[0, -5]
    with pytest.raises(IndexError, match=r"too many indices.*\(3, 4\)"):
        x[0, 1, 2]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="float"):
        x[1.0]
    with pytest.raises(ValueError, match="step must not be zero"):
        x[::0]
    with pytest.raises(IndexError, match="integer or boolean.*float"):
        x[xp.asarray(np.asarray([0.0]), dtype=dt, device=device)]
    with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 3"):
        x[3] = 1.0
    with pytest.raises(TypeError, match=r"__setitem__.*complex"):
        x[0] = 1j
    ints = xp.asarray(np.asarray([1, 2], dtype=supported(device, "signed integer")[0]), device=device)
    with pytest.raises(TypeError, match=r"__setitem__.*float.*int"):
        ints[0] = 1.5
    with pytest.raises(TypeError, match=r"__setitem__.*value"):
        x[0] = [1, 2, 3, 4]


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 5), n=st.integers(0, 6))
def test_take(device, data, seed, shape, n):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    idt = data.draw(dtypes(device, ("integral",)), label="index dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, -100, 100)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    m = shape[axis]
    lo = 0 if np.dtype(idt).kind == "u" else -m
    idx = rng.integers(lo, m, size=n).astype(idt)
    res = xp.take(xp.asarray(a, device=device), xp.asarray(idx, device=device), axis=axis)
    assert_result(res, np.take(a, idx.astype(np.int64), axis=axis), dtype=dt, rtol=0, atol=0)
    if len(shape) == 1:
        res = xp.take(xp.asarray(a, device=device), xp.asarray(idx, device=device))
        assert_result(res, np.take(a, idx.astype(np.int64)), dtype=dt, rtol=0, atol=0)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 5), m=st.integers(1, 6))
def test_take_along_axis(device, data, seed, shape, m):
    dt = data.draw(dtypes(device, ("integral", "real floating")), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, -100, 100)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    ishape = list(shape)
    ishape[axis] = m
    n = shape[axis]
    idx = rng.integers(-n, n, size=ishape)
    res = xp.take_along_axis(xp.asarray(a, device=device), xp.asarray(idx, device=device), axis=axis)
    assert_result(res, np.take_along_axis(a, idx, axis=axis), dtype=dt, rtol=0, atol=0)


def test_take_errors(device):
    dt = supported(device, "real floating")[0]
    x = xp.asarray(rand(np.random.default_rng(3), (3, 4), dt), device=device)
    fidx = xp.asarray(np.asarray([0.0, 1.0]), dtype=dt, device=device)
    with pytest.raises(TypeError, match=r"ruda\.take: indices must have an integer dtype; got float"):
        xp.take(x, fidx, axis=0)
    idx = xp.asarray(np.asarray([0, 1]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.take: axis is required"):
        xp.take(x, idx)
    with pytest.raises(ValueError, match=r"ruda\.take: indices must be 1-D"):
        xp.take(x, xp.reshape(idx, (1, 2)), axis=0)
    with pytest.raises(ValueError, match=r"take_along_axis.*dimensions"):
        xp.take_along_axis(x, idx, axis=0)
    with pytest.raises(ValueError, match=r"ruda\.take_along_axis: x's shape \(3, 4\) and "
                                         r"indices' shape \(2, 1\) must broadcast"):
        xp.take_along_axis(x, xp.reshape(idx, (2, 1)), axis=1)


def _read_and_write_as_numpy(device, a, key_x, key_np):
    """x[key_x] and x[key_x] = v on a copy of ``a`` against NumPy's a[key_np]."""
    x = xp.asarray(a, device=device, copy=True)
    assert_result(x[key_x], a[key_np], dtype=x.dtype)
    b = a.copy()
    v = np.arange(b[key_np].size).reshape(b[key_np].shape) + 100
    b[key_np] = v
    x[key_x] = xp.asarray(v, dtype=x.dtype, device=device)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), b)


@pytest.mark.parametrize("key", [(True, True), (0, slice(None), True), (0, slice(None), slice(None), True),
                                 (True, False), (1, True, Ellipsis), (slice(None), True), (False, 0),
                                 (None, True, None), (0, "T", 1, True)])
def test_bool_scalars_as_numpy_places_them(device, key):
    """Bool scalars are advanced indices (NumPy): they broadcast together, make ints advanced,
    and go to the front when separated: x[0, :, True] is (1, 3, 4), x[True, True] (1, 2, 3, 4)."""
    a = np.arange(24).reshape(2, 3, 4)
    key_np = tuple(True if k == "T" else k for k in key)
    key_x = tuple(xp.asarray(True, device=device) if k == "T" else k for k in key)
    _read_and_write_as_numpy(device, a, key_x, key_np)


@pytest.mark.parametrize("key", [np.True_, np.False_, (0, np.True_), (np.True_, slice(None), 1),
                                 (Ellipsis, np.False_)])
def test_numpy_bool_scalars_index_as_python_bools(device, key):
    """np.True_ / np.False_ (what comparisons of NumPy scalars give) index as True / False."""
    _read_and_write_as_numpy(device, np.arange(24).reshape(2, 3, 4), key, key)


def test_one_element_takes_only_a_0d_value(device):
    """x[0] = value of shape (1, 1) and x[0, 1] = value of shape (1,) raise as in NumPy (a GPU
    stored the value's first element); x[0] = 0-d and x[0, ...] = (1, 3) work."""
    x = xp.zeros((2, 3), device=device)
    for key, shape in [((0, 1), (1,)), ((1, -1), (1, 1)), ((0, 0), (2,))]:
        with pytest.raises(ValueError, match="setting an array element with a sequence"):
            x[key] = xp.ones(shape, device=device)
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        xp.zeros((3,), device=device)[0] = xp.ones((1, 1), device=device)
    i0 = xp.asarray(0, device=device)                     # a 0-d index array: one position too
    for key in ((i0, 1), (1, i0)):
        with pytest.raises(ValueError, match="setting an array element with a sequence"):
            x[key] = xp.ones((1,), device=device)
    with pytest.raises(ValueError, match="setting an array element with a sequence"):
        xp.zeros((3,), device=device)[i0] = xp.ones((1,), device=device)
    x[0, 1] = xp.asarray(2.0, device=device)
    x[1, ...] = xp.ones((1, 3), device=device)
    np.testing.assert_array_equal(to_numpy(x), [[0, 2, 0], [1, 1, 1]])


def test_an_ellipsis_of_no_axes_separates_advanced_indices(device):
    """x[:, i, ..., j] on a 3-d x: the ellipsis covers no axis, yet the index arrays are
    separated as written, so their axis goes first (NumPy's (3, 2), not (2, 3))."""
    a = np.arange(24).reshape(2, 3, 4)
    i, j = np.asarray([0, 1, 2]), np.asarray([1, 2, 3])
    xi, xj = xp.asarray(i, device=device), xp.asarray(j, device=device)
    for kx, kn in [((slice(None), xi, Ellipsis, xj), (slice(None), i, Ellipsis, j)),
                   ((slice(None), 0, Ellipsis, xj), (slice(None), 0, Ellipsis, j)),
                   ((slice(None), xi, xj), (slice(None), i, j))]:
        _read_and_write_as_numpy(device, a, kx, kn)


def test_empty_list_keys_select_nothing(device):
    """x[[]], x[[[], []]] and x[:, []] are NumPy's empty integer indices (a bare [] has NumPy's
    float dtype), for reading and writing."""
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=device, copy=True)
    for k in [[], [[], []], (slice(None), [])]:
        assert_result(x[k], a[k], dtype=x.dtype)
        x[k] = 5.0
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)


def test_setitem_with_an_index_into_x_itself(device):
    """x[x[:2]] = 9 and x[x] = v: the index arrays are views of x (NumPy reads them first); on
    wgpu such a write once broke the queue, and later results came back as zeros."""
    a = np.arange(6)
    x = xp.asarray(a, device=device, copy=True)
    x[x[:2]] = 9
    a[a[:2].copy()] = 9
    b = np.asarray([3, 1, 0, 2])
    w = xp.asarray(b, device=device, copy=True)
    w[w] = xp.asarray([10, 11, 12, 13], device=device)
    b[b.copy()] = [10, 11, 12, 13]
    y = xp.arange(4, device=device) + 1
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)
    np.testing.assert_array_equal(np.asarray(w.to_device("cpu")), b)
    np.testing.assert_array_equal(np.asarray((y * 2).to_device("cpu")), [2, 4, 6, 8])


def test_take_of_0d_and_broadcast_take_along_axis(device):
    """take of a 0-d array reads it as 1-d (NumPy's); take_along_axis broadcasts the other axes."""
    dt = supported(device, "real floating")[0]
    assert_result(xp.take(xp.asarray(3.0, dtype=dt, device=device),
                          xp.asarray([0, 0, -1], device=device)), np.full(3, 3.0, dt), dtype=dt)
    a = rand(np.random.default_rng(4), (3, 4), dt)
    for shape, axis in [((1, 2), 1), ((2, 1), 0), ((3, 2), 1)]:
        i = np.random.default_rng(5).integers(0, a.shape[axis], shape)
        got = xp.take_along_axis(xp.asarray(a, device=device), xp.asarray(i, device=device), axis=axis)
        assert_result(got, np.take_along_axis(a, i, axis), dtype=dt)


@pytest.mark.parametrize("nd", [7, 12, 33])
def test_masks_and_nonzero_of_many_axes(device, nd):
    """nonzero and x[mask] / x[mask] = v with masks of more axes than a kernel may bind index
    arrays for (WebGPU allows 8 storage buffers by default): per-axis coordinates come from the
    flat positions, and the mask's axes are merged."""
    a = np.arange(12.0).reshape((2,) + (1,) * (nd - 3) + (2, 3))
    x = xp.asarray(a, device=device)
    for got, want in zip(xp.nonzero(x > 4), np.nonzero(a > 4)):
        np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)
    np.testing.assert_array_equal(np.asarray(x[x > 4].to_device("cpu")), a[a > 4])
    xt = xp.permute_dims(x, tuple(range(nd))[::-1])           # a view that will not merge
    at = a.transpose(tuple(range(nd))[::-1]).copy()
    xt[xt > 4] = -1.0
    at[at > 4] = -1.0
    np.testing.assert_array_equal(np.asarray(xt.to_device("cpu")), at)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")),
                                  at.transpose(tuple(range(nd))[::-1]))


_BOOL_SCALAR_KEYS = [
    (True, [0, 1]), ([True, False], "0-d True"), (Ellipsis, False), (False, Ellipsis),
    (Ellipsis, True), ([1, 0, 1], None, True, 1), (True, None, Ellipsis, [3, 0]),
    ("0-d False", Ellipsis)]


@pytest.mark.parametrize("key", _BOOL_SCALAR_KEYS)
def test_bool_scalar_beside_index_arrays(device, key):
    """A bool scalar (or 0-d bool array) beside index arrays or an ellipsis: a new axis whose
    index array of length 1 or 0 broadcasts with the others, as in NumPy."""
    a = np.arange(24.0).reshape(2, 3, 4)

    def entry(k, asarray):
        if isinstance(k, str):
            return asarray(k == "0-d True")
        return asarray(k) if isinstance(k, list) else k
    want = a[tuple(entry(k, np.asarray) for k in key)]
    x = xp.asarray(a, device=device)
    got = x[tuple(entry(k, lambda v: xp.asarray(v, device=device)) for k in key)]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), want)
    b = a.copy()
    b[tuple(entry(k, np.asarray) for k in key)] = -1.0
    x[tuple(entry(k, lambda v: xp.asarray(v, device=device)) for k in key)] = -1.0
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), b)
    with pytest.raises(IndexError, match="__getitem__"):
        x[False, xp.asarray([0, 1], device=device)]


@pytest.mark.parametrize("key", [(slice(None), [4]), (slice(None), np.asarray([-5])), ([0, 3],),
                                 ([[0], [1]], [1, 4]), (np.asarray([1, 2**40]),)])
def test_list_and_numpy_indices_are_bounds_checked(device, key):
    x = xp.reshape(xp.arange(12, device=device), (3, 4))
    bad = r"index (-?\d+ is out of bounds for axis \d|values beyond int32)"   # (or no int64)
    with pytest.raises(IndexError, match=r"__getitem__: " + bad):
        x[key]
    with pytest.raises(IndexError, match=r"__setitem__: " + bad):
        x[key] = 7
    assert to_numpy(x).tolist() == np.arange(12).reshape(3, 4).tolist()


def test_an_out_of_range_index_array_touches_no_other_element(device):
    """cpu raises (NumPy's); wgpu reads 0 and drops the write, never reaching a neighbouring row
    or the parent of a view, also past 32 bits (cuda wraps around, as CuPy does)."""
    if device.kind == "cuda":
        pytest.skip("cuda wraps an out-of-range index around (CuPy's rule, in the README)")
    idt = supported(device, "signed integer")[-1]
    big = xp.arange(100, device=device)
    v = big[10:13]
    m = xp.reshape(big[:12], (3, 4))
    cases = [lambda: m[:, xp.asarray([5, -1], device=device)],
             lambda: xp.take(m, xp.asarray([4, -5], device=device), axis=1),
             lambda: xp.take_along_axis(m, xp.asarray([[4, -1]] * 3, device=device), axis=1)]
    big_index = 2**32 + 1 if np.dtype(idt).itemsize == 8 else 2**31 - 1
    cases.append(lambda: v[xp.asarray([big_index, 1], dtype=idt, device=device)])
    writes = [lambda: m.__setitem__((slice(None), xp.asarray([4], device=device)), -1),
              lambda: v.__setitem__(xp.asarray([5, -4, big_index], dtype=idt, device=device), -1)]
    if device.kind == "cpu":
        for case in cases + writes:
            with pytest.raises(IndexError, match="out of bounds"):
                case()
    else:
        expected = [[[0, 3], [0, 7], [0, 11]], [[0, 0]] * 3, [[0, 3], [0, 7], [0, 11]], [0, 11]]
        for case, want in zip(cases, expected):
            assert to_numpy(case()).tolist() == want
        for case in writes:
            case()
    assert to_numpy(big).tolist() == list(range(100))
