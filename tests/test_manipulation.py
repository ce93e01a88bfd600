"""Manipulation functions against NumPy on every device."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from strategies import assert_result, broadcastable_pair, rand, seeds, shapes, supported


def _arr(device, rng, shape, dt):
    a = rand(rng, shape, dt, -100, 100)
    return a, xp.asarray(a, device=device)


def _exact(res, exp, dt):
    assert_result(res, exp, dtype=dt, rtol=0, atol=0)


@given(data=st.data(), seed=seeds, shapes=broadcastable_pair())
def test_broadcast(device, data, seed, shapes):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    (a, x), (b, y) = _arr(device, rng, shapes[0], dt), _arr(device, rng, shapes[1], dt)
    target = np.broadcast_shapes(*shapes)
    assert xp.broadcast_shapes(*shapes) == target
    ra, rb = xp.broadcast_arrays(x, y)
    ea, eb = np.broadcast_arrays(a, b)
    _exact(ra, ea, dt)
    _exact(rb, eb, dt)
    big = (2,) + target
    _exact(xp.broadcast_to(x, big), np.broadcast_to(a, big), dt)


def test_broadcast_views_refuse_writes(device):
    """A broadcast view's elements share memory (NumPy makes it read-only): item assignment and
    in-place operators raise, and the source keeps its values."""
    a = xp.asarray([0.0, 1.0, 2.0], device=device)
    b = xp.broadcast_to(a, (2, 3))
    c = xp.broadcast_arrays(a, xp.zeros((2, 3), device=device))[0]
    for view in (b, c):
        with pytest.raises(ValueError, match=r"read-only|broadcast view"):
            view[0, 0] = 5.0
        with pytest.raises(ValueError, match=r"read-only|broadcast view"):
            view[1] = xp.asarray([4.0, 5.0, 6.0], device=device)
        with pytest.raises(ValueError, match=r"read-only|broadcast view"):
            view += 1
        with pytest.raises(ValueError, match=r"read-only|broadcast view"):
            view *= view
    assert to_numpy(a).tolist() == [0.0, 1.0, 2.0]
    d = xp.asarray(b, copy=True)
    d[0, 0] = 5.0
    d += 1
    assert to_numpy(d).tolist() == [[6.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
    for shape in [(2, 0), (3, 0, 2), (0,)]:      # empty arrays (strides 0 anywhere) take writes
        e = xp.zeros(shape, device=device)
        e[...] = 1.0
        e += 1
        assert e.shape == shape
    e = xp.zeros((3, 0, 2), device=device)
    e[xp.asarray([0, 1], device=device)] = 1.0


def test_broadcast_errors(device):
    x = xp.asarray(rand(np.random.default_rng(1), (2, 3), supported(device)[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.broadcast_to: cannot broadcast shape \(2, 3\) to \(3,\)"):
        xp.broadcast_to(x, (3,))
    with pytest.raises(ValueError, match=r"broadcast_to.*\(2, 3\).*\(4, 3\)"):
        xp.broadcast_to(x, (4, 3))
    with pytest.raises(ValueError, match=r"ruda\.broadcast_shapes: shapes \(2, 3\), \(4,\) cannot be broadcast"):
        xp.broadcast_shapes((2, 3), (4,))


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 0, 4), k=st.integers(1, 3))
def test_concat_and_stack(device, data, seed, shape, k):
    dts = [data.draw(st.sampled_from(supported(device, ("integral", "real floating"))), label="dtype")
           for _ in range(k)]
    rng = np.random.default_rng(seed)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    parts = []
    for dt in dts:
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3), label="length")
        parts.append(rand(rng, tuple(s), dt, 0, 100))
    want = np.result_type(*dts) if len(set(dts)) > 1 else dts[0]
    if want not in supported(device):
        return
    xs = [xp.asarray(p, device=device) for p in parts]
    expected = np.concatenate([p.astype(want) for p in parts], axis=axis)
    _exact(xp.concat(xs, axis=axis), expected, want)
    _exact(xp.concat(xs, axis=None), np.concatenate([p.astype(want).ravel() for p in parts]), want)
    same = [rand(rng, shape, dts[0], 0, 100) for _ in range(k)]
    sax = data.draw(st.integers(-len(shape) - 1, len(shape)), label="stack axis")
    _exact(xp.stack([xp.asarray(s, device=device) for s in same], axis=sax), np.stack(same, axis=sax), dts[0])


def test_concat_stack_errors(device):
    f = supported(device, "real floating")[0]
    a = xp.asarray(rand(np.random.default_rng(1), (2, 3), f), device=device)
    b = xp.asarray(rand(np.random.default_rng(2), (3, 2), f), device=device)
    with pytest.raises(ValueError, match=r"ruda\.concat: shapes \[\(2, 3\), \(3, 2\)\] differ outside axis 0"):
        xp.concat([a, b])
    with pytest.raises(ValueError, match=r"ruda\.stack: arrays must share one shape"):
        xp.stack([a, b])
    with pytest.raises(TypeError, match=r"ruda\.concat: arrays must be a non-empty tuple or list"):
        xp.concat([])


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 1, 4))
def test_expand_dims_squeeze(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a, x = _arr(device, np.random.default_rng(seed), shape, dt)
    ax = data.draw(st.integers(-len(shape) - 1, len(shape)), label="axis")
    e = xp.expand_dims(x, axis=ax)
    _exact(e, np.expand_dims(a, ax), dt)
    _exact(xp.squeeze(e, axis=ax), a, dt)
    k = data.draw(st.integers(1, 2), label="new dims")
    axes = tuple(data.draw(st.lists(st.integers(0, len(shape) + k - 1), unique=True, min_size=k, max_size=k),
                           label="axes"))
    _exact(xp.expand_dims(x, axis=axes), np.expand_dims(a, axes), dt)
    ones = tuple(i for i, s in enumerate(shape) if s == 1)
    _exact(xp.squeeze(x, axis=ones), np.squeeze(a, axis=ones), dt)


def test_squeeze_without_axis_and_tile_by_an_int(device):
    """NumPy's spellings: squeeze() drops every axis of size 1, tile(x, 2) is tile(x, (2,))."""
    dt = supported(device)[0]
    for shape in [(1, 3, 1), (1, 1), (2, 3), ()]:
        a, x = _arr(device, np.random.default_rng(2), shape, dt)
        _exact(xp.squeeze(x), np.squeeze(a), dt)
        _exact(xp.tile(x, 2), np.tile(a, 2), dt)
    with pytest.raises(TypeError, match=r"ruda\.tile: repetitions must be an integer; got float"):
        xp.tile(x, 2.0)


def test_squeeze_error(device):
    x = xp.asarray(rand(np.random.default_rng(1), (2, 1), supported(device)[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.squeeze: axis 0 of shape \(2, 1\) has size 2, not 1"):
        xp.squeeze(x, axis=0)


@given(data=st.data(), seed=seeds, shape=shapes(0, 4, 0, 4))
def test_flip_permute_moveaxis(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a, x = _arr(device, np.random.default_rng(seed), shape, dt)
    nd = len(shape)
    _exact(xp.flip(x), np.flip(a), dt)
    if nd:
        ax = data.draw(st.integers(-nd, nd - 1), label="axis")
        _exact(xp.flip(x, axis=ax), np.flip(a, axis=ax), dt)
        axes = tuple(data.draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd), label="axes"))
        _exact(xp.flip(x, axis=axes), np.flip(a, axis=axes), dt)
    perm = tuple(data.draw(st.permutations(range(nd)), label="perm"))
    _exact(xp.permute_dims(x, perm), np.transpose(a, perm), dt)
    if nd:
        src = data.draw(st.integers(-nd, nd - 1), label="source")
        dst = data.draw(st.integers(-nd, nd - 1), label="destination")
        _exact(xp.moveaxis(x, src, dst), np.moveaxis(a, src, dst), dt)
        k = data.draw(st.integers(1, nd), label="count")
        srcs = tuple(data.draw(st.permutations(range(nd)))[:k])
        dsts = tuple(data.draw(st.permutations(range(nd)))[:k])
        _exact(xp.moveaxis(x, srcs, dsts), np.moveaxis(a, srcs, dsts), dt)


def test_permute_dims_error(device):
    x = xp.asarray(rand(np.random.default_rng(1), (2, 3), supported(device)[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.permute_dims: axes \(0, 0\) is not a permutation"):
        xp.permute_dims(x, (0, 0))


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 1, 4))
def test_repeat(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    a, x = _arr(device, rng, shape, dt)
    n = data.draw(st.integers(0, 3), label="repeats")
    _exact(xp.repeat(x, n), np.repeat(a, n), dt)
    if shape:
        ax = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
        _exact(xp.repeat(x, n, axis=ax), np.repeat(a, n, axis=ax), dt)
        reps = rng.integers(0, 4, size=shape[ax])
        _exact(xp.repeat(x, xp.asarray(reps, device=device), axis=ax), np.repeat(a, reps, axis=ax), dt)


@pytest.mark.parametrize("shape, axis", [((0, 2, 0), None), ((0, 2, 0), 0), ((0, 3), 0), ((2, 0), 1),
                                         ((0,), None), ((3, 2), 0), ((2, 3), None), ((2, 3), 1)])
def test_repeat_one_repeats_entry_broadcasts(device, shape, axis):
    """A repeats array of one element (0-D or 1-D) repeats every element, also along an axis of
    length 0 and for axis=None on an empty x (the suite draws repeats [7] for x of shape (0, 2, 0))."""
    dt = supported(device, "real floating")[0]
    a, x = _arr(device, np.random.default_rng(3), shape, dt)
    for reps in (np.asarray([7]), np.asarray(2), np.asarray([0])):
        r = xp.asarray(reps, device=device)
        _exact(xp.repeat(x, r, axis=axis), np.repeat(a, reps, axis=axis), dt)
    n = a.size if axis is None else shape[axis]
    reps = np.arange(n) % 3
    _exact(xp.repeat(x, xp.asarray(reps, device=device), axis=axis), np.repeat(a, reps, axis=axis), dt)


def test_repeat_repeats_of_any_integer_dtype_and_negative_ones(device):
    """repeats of every integer dtype the device has (uint64 too, which NumPy will not cast to
    intp safely); a negative entry raises ValueError naming repeat, found on the data."""
    dt = supported(device, "real floating")[0]
    a, x = _arr(device, np.random.default_rng(4), (4, 3), dt)
    for rdt in supported(device, "integral"):
        reps = np.asarray([2, 0, 1, 3], dtype=rdt)
        _exact(xp.repeat(x, xp.asarray(reps, device=device), axis=0), np.repeat(a, reps.astype(np.int64), axis=0), dt)
        if np.iinfo(rdt).min < 0:
            for bad in ([1, -2, 0, 1], [-1]):
                with pytest.raises(ValueError, match=r"ruda\.repeat: .*negative"):
                    xp.repeat(x, xp.asarray(np.asarray(bad, dtype=rdt), device=device), axis=0)


def test_repeat_repeats_of_a_wrong_length(device):
    """repeats must have one entry or one per element along the axis (x's size for
    axis=None): anything else raises, never reads past the entries or drops some."""
    x = xp.asarray([[1, 2], [3, 4]], device=device)
    for reps, axis, n, where in (([2, 1, 1], 0, 2, r"x\.shape\[0\]"), ([1, 2], None, 4, "x's size"),
                                 ([1, 1, 1, 1, 3], None, 4, "x's size")):
        with pytest.raises(ValueError, match=rf"ruda\.repeat: repeats must have 1 or {where} = "
                                             rf"{n} entries; got {len(reps)}"):
            xp.repeat(x, xp.asarray(reps, device=device), axis=axis)


@given(data=st.data(), seed=seeds, shape=shapes(0, 4, 1, 4))
def test_reshape(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a, x = _arr(device, np.random.default_rng(seed), shape, dt)
    # a random factorization of the size, with maybe one -1
    size = a.size
    new = []
    rest = size
    for _ in range(data.draw(st.integers(0, 3), label="dims")):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        d = data.draw(st.sampled_from(divs), label="dim")
        new.append(d)
        rest //= d
    new.append(rest)
    if data.draw(st.booleans(), label="use -1"):
        new[data.draw(st.integers(0, len(new) - 1), label="where")] = -1
    _exact(xp.reshape(x, tuple(new)), np.reshape(a, tuple(new)), dt)
    y = xp.reshape(x, tuple(new), copy=True)
    _exact(y, np.reshape(a, tuple(new)), dt)


def test_reshape_errors(device):
    x = xp.asarray(rand(np.random.default_rng(1), (2, 3), supported(device)[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.reshape: cannot reshape an array of shape \(2, 3\) into \(4,\)"):
        xp.reshape(x, (4,))
    with pytest.raises(ValueError, match=r"ruda\.reshape: invalid shape \(-1, -1\)"):
        xp.reshape(x, (-1, -1))


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 5))
def test_roll(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a, x = _arr(device, np.random.default_rng(seed), shape, dt)
    shift = data.draw(st.integers(-7, 7), label="shift")
    _exact(xp.roll(x, shift), np.roll(a, shift), dt)
    if shape:
        nd = len(shape)
        ax = data.draw(st.integers(-nd, nd - 1), label="axis")
        _exact(xp.roll(x, shift, axis=ax), np.roll(a, shift, axis=ax), dt)
        axes = tuple(data.draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True)))
        shifts = tuple(data.draw(st.lists(st.integers(-7, 7), min_size=len(axes), max_size=len(axes))))
        _exact(xp.roll(x, shifts, axis=axes), np.roll(a, shifts, axis=axes), dt)


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 1, 3))
def test_tile(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a, x = _arr(device, np.random.default_rng(seed), shape, dt)
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=0, max_size=4), label="reps"))
    _exact(xp.tile(x, reps), np.tile(a, reps), dt)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 0, 4))
def test_unstack(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a, x = _arr(device, np.random.default_rng(seed), shape, dt)
    ax = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    res = xp.unstack(x, axis=ax)
    exp = [np.take(a, i, axis=ax) for i in range(shape[ax])]
    assert isinstance(res, tuple) and len(res) == len(exp)
    for r, e in zip(res, exp):
        _exact(r, e, dt)
