"""Sorting (stable, descending), searching and set functions against NumPy on every device."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from strategies import (assert_result, broadcastable_pair, default, dtypes, layouts, rand, seeds, shapes,
                        supported, view)

REAL = ("integral", "real floating")


def tied(rng, shape, dt):
    """Random values with many ties (so stability matters)."""
    k = np.dtype(dt).kind
    v = rng.integers(0 if k == "u" else -4, 5, size=shape)
    if k == "c":                 # ties in both parts
        return (0.75 * (v + 1j * rng.integers(-2, 3, size=shape))).astype(dt)
    return (v * (0.75 if k == "f" else 1)).astype(dt)


def index_dtype(device):
    return default(device, "indexing")


def stable_argsort(a, axis, descending):
    if descending:
        key = -(a.astype(np.float64) if a.dtype.kind in "iu" else a)
        return np.argsort(key, axis=axis, kind="stable")
    return np.argsort(a, axis=axis, kind="stable")


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 0, 6), descending=st.booleans(), layout=layouts)
def test_sort_argsort(device, data, seed, shape, descending, layout):
    dt = data.draw(dtypes(device, REAL), label="dtype")
    a = tied(np.random.default_rng(seed), shape, dt)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x, a = view(xp.asarray(a, device=device), a, layout)
    idx = stable_argsort(a, axis, descending)
    res = xp.argsort(x, axis=axis, descending=descending, stable=True)
    assert_result(res, idx, dtype=index_dtype(device))
    s = xp.sort(x, axis=axis, descending=descending)
    assert_result(s, np.take_along_axis(a, idx, axis=axis), dtype=dt, rtol=0, atol=0)
    # stable=False must still sort (order of ties unspecified)
    idx2 = to_numpy(xp.argsort(x, axis=axis, descending=descending, stable=False))
    np.testing.assert_array_equal(np.take_along_axis(a, idx2, axis=axis), np.take_along_axis(a, idx, axis=axis))


def test_sort_nan_and_signed_zero(device):
    """NaN is the largest value (last ascending, first descending, as flipping NumPy's order
    gives); +0 and -0 are equal, so a stable sort keeps their order either way; sort gives
    take_along_axis(x, argsort) bit for bit."""
    row = [0.0, np.nan, -0.0, 1.5, -np.inf, np.nan, -0.0, 0.0, np.inf, -2.0, 0.0]
    for dt in supported(device, "real floating"):
        for a, axis in ((np.asarray([row, row[::-1]], dt), -1), (np.asarray([row, row[::-1]], dt).T, 0)):
            x = xp.asarray(a, device=device)
            for descending in (False, True):
                if descending:      # stable descending: reverse the axis, sort stably, map back
                    n = a.shape[axis] - 1
                    idx = n - np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
                else:
                    idx = np.argsort(a, axis=axis, kind="stable")
                assert_result(xp.argsort(x, axis=axis, descending=descending), idx, dtype=index_dtype(device))
                got = to_numpy(xp.sort(x, axis=axis, descending=descending))
                want = np.take_along_axis(a, idx, axis=axis)
                np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_nan_with_its_sign_bit_set(device):
    """A NaN with its sign bit set (-x of a NaN; 0/0 on an x86 host) is the largest value like any
    NaN in 1-D sort and argsort both ways, unique_* and isin's table (CuPy's radix sort of 1-D
    float32/float64 put it first, and isin then missed 1.0)."""
    n = np.copysign(np.nan, -1.0)
    for dt in supported(device, "real floating"):
        a = np.array([1.0, n, 0.5, np.nan, -np.inf, -0.0, 2.0], dt)
        x = xp.asarray(a, device=device)
        up = np.argsort(a, kind="stable")                                 # NaNs last, in order
        down = a.size - 1 - np.flip(np.argsort(np.flip(a), kind="stable"))
        for descending, idx in ((False, up), (True, down)):
            assert_result(xp.argsort(x, descending=descending), idx, dtype=index_dtype(device))
            got = to_numpy(xp.sort(x, descending=descending))
            np.testing.assert_array_equal(got, a[idx])
        values, indices, inverse, counts = xp.unique_all(x)                # all distinct
        np.testing.assert_array_equal(to_numpy(values), a[up])
        for got, want in ((indices, up), (inverse, np.argsort(up)), (counts, np.ones(a.size, np.int64))):
            np.testing.assert_array_equal(to_numpy(got), want)
        np.testing.assert_array_equal(to_numpy(xp.unique_values(x)), a[up])
        table = xp.asarray(np.array([n, 1.0, 2.0], dt), device=device)
        np.testing.assert_array_equal(to_numpy(xp.isin(xp.asarray(np.array([1.0, 2.0, 3.0, n], dt), device=device), table)),
                                      [True, True, False, False])


def test_unstable_sort_is_a_permutation(device):
    """sort(stable=False) may order equal values freely, but gives back x's values: each row as
    many -0.0 as it had (NumPy's AVX-512 quicksort swaps the signs of equal zeros)."""
    rng = np.random.default_rng(8)
    for dt in supported(device, "real floating"):
        a = rng.choice(np.asarray([-0.0, 0.0, 1.0, -1.0, np.nan], dt), (3, 700))
        for axis in (-1, 0):
            for descending in (False, True):
                got = to_numpy(xp.sort(xp.asarray(a, device=device), axis=axis,
                                       descending=descending, stable=False))
                want = np.sort(a, axis=axis, kind="stable")
                np.testing.assert_array_equal(got, np.flip(want, axis) if descending else want)
                np.testing.assert_array_equal(np.signbit(got).sum(axis), np.signbit(a).sum(axis))


def test_sort_errors(device):
    c = supported(device, "complex floating")
    if c:
        z = xp.asarray(np.asarray([1 + 1j, 2 - 1j], c[0]), device=device)
        with pytest.raises(TypeError, match=r"ruda\.sort: x must have a real numeric dtype; got complex"):
            xp.sort(z)
    x = xp.asarray(rand(np.random.default_rng(1), (), supported(device, "real floating")[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.argsort: x must have at least one dimension"):
        xp.argsort(x)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 1, 5), keepdims=st.booleans(), use_axis=st.booleans())
def test_argmax_argmin(device, name, data, seed, shape, keepdims, use_axis):
    dt = data.draw(dtypes(device, REAL), label="dtype")
    a = tied(np.random.default_rng(seed), shape, dt)           # ties: the first occurrence wins
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis") if use_axis and shape else None
    res = getattr(xp, name)(xp.asarray(a, device=device), axis=axis, keepdims=keepdims)
    assert_result(res, getattr(np, name)(a, axis=axis, keepdims=keepdims), dtype=index_dtype(device))


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 5), keepdims=st.booleans())
def test_count_nonzero(device, data, seed, shape, keepdims):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, 1, 9) * (rng.random(shape) < 0.5).astype(dt)
    nd = len(shape)
    axis = data.draw(st.none() | (st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)
                                  if nd else st.none()), label="axis")
    res = xp.count_nonzero(xp.asarray(a, device=device), axis=axis, keepdims=keepdims)
    exp = np.count_nonzero(a, axis=axis, keepdims=keepdims)
    assert_result(res, np.asarray(exp), dtype=index_dtype(device))


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 0, 5))
def test_nonzero(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    a = rand(rng, shape, dt, 1, 9) * (rng.random(shape) < 0.5).astype(dt)
    res = xp.nonzero(xp.asarray(a, device=device))
    exp = np.nonzero(a)
    assert isinstance(res, tuple) and len(res) == len(exp)
    for r, e in zip(res, exp):
        assert_result(r, e, dtype=index_dtype(device))


def test_nonzero_0d_error(device):
    x = xp.asarray(rand(np.random.default_rng(1), (), supported(device, "real floating")[0]), device=device)
    with pytest.raises(ValueError, match=r"ruda\.nonzero: x must have at least one dimension"):
        xp.nonzero(x)


@given(data=st.data(), seed=seeds, n=st.integers(0, 12), vshape=shapes(0, 2, 0, 5),
       side=st.sampled_from(["left", "right"]), use_sorter=st.booleans())
def test_searchsorted(device, data, seed, n, vshape, side, use_sorter):
    dt = data.draw(dtypes(device, REAL), label="dtype")
    rng = np.random.default_rng(seed)
    x1 = tied(rng, (n,), dt)
    x2 = tied(rng, vshape, dt)
    if use_sorter:
        sorter = np.argsort(x1, kind="stable")
        res = xp.searchsorted(xp.asarray(x1, device=device), xp.asarray(x2, device=device), side=side,
                              sorter=xp.asarray(sorter, device=device))
        exp = np.searchsorted(x1, x2, side=side, sorter=sorter)
    else:
        x1 = np.sort(x1)
        res = xp.searchsorted(xp.asarray(x1, device=device), xp.asarray(x2, device=device), side=side)
        exp = np.searchsorted(x1, x2, side=side)
    assert_result(res, np.asarray(exp), dtype=index_dtype(device))


def test_searchsorted_scalar_and_errors(device):
    dt = supported(device, "real floating")[0]
    x1 = np.sort(rand(np.random.default_rng(4), (8,), dt))
    x = xp.asarray(x1, device=device)
    assert_result(xp.searchsorted(x, 0.25), np.asarray(np.searchsorted(x1, 0.25)), dtype=index_dtype(device))
    with pytest.raises(ValueError, match=r"ruda\.searchsorted: side must be 'left' or 'right'"):
        xp.searchsorted(x, x, side="middle")
    with pytest.raises(ValueError, match=r"ruda\.searchsorted: x1 must be 1-D; got shape \(2, 4\)"):
        xp.searchsorted(xp.reshape(x, (2, 4)), x)


def _search_values(rng, n, dt):
    """n values with ties, and, for floats, NaNs, infinities and both zeros (NaN sorts last)."""
    a = tied(rng, (n,), dt)
    if np.dtype(dt).kind == "f":
        a[rng.random(n) < 0.1] = np.nan
        a[: min(n, 3)] = [np.inf, -np.inf, -0.0][: min(n, 3)]
    elif n:
        info = np.iinfo(dt)
        a[rng.random(n) < 0.1] = info.max
        a[0] = info.min
    return a


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 9, 1023, 1024, 1025, 5000])
def test_searchsorted_sizes_nan_and_sorter(device, n):
    """Sizes around powers of two (the search takes bit_length(n) steps), queries at every sorted
    value and NaN/inf/-0.0 between, both sides, with and without sorter, strided queries."""
    rng = np.random.default_rng(n)
    for dt in supported(device, "real floating")[:1] + supported(device, "integral")[::3]:
        x1 = _search_values(rng, n, dt)
        q = np.repeat(np.concatenate([x1, _search_values(rng, 2 * n + 7, dt)]), 2)
        qv, q = view(xp.asarray(q, device=device), q, "strided")    # every value, stride 2
        sorter = np.argsort(x1, kind="stable")
        s = np.sort(x1)
        for side in ("left", "right"):
            exp = np.searchsorted(s, q, side=side)
            assert_result(xp.searchsorted(xp.asarray(s, device=device), qv, side=side), exp,
                          dtype=index_dtype(device))
            res = xp.searchsorted(xp.asarray(x1, device=device), qv, side=side,
                                  sorter=xp.asarray(sorter, device=device))
            assert_result(res, np.searchsorted(x1, q, side=side, sorter=sorter), dtype=index_dtype(device))


@given(data=st.data(), seed=seeds, shp=broadcastable_pair())
def test_where(device, data, seed, shp):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    rng = np.random.default_rng(seed)
    cshape = data.draw(st.sampled_from([shp[0], shp[1], ()]), label="condition shape")
    cond = rng.random(cshape) < 0.5
    a, b = rand(rng, shp[0], dt), rand(rng, shp[1], dt)
    res = xp.where(xp.asarray(cond, device=device), xp.asarray(a, device=device), xp.asarray(b, device=device))
    assert_result(res, np.where(cond, a, b), dtype=dt, rtol=0, atol=0)


def test_where_errors(device):
    f = supported(device, "real floating")[0]
    x = xp.asarray(rand(np.random.default_rng(1), (3,), f), device=device)
    with pytest.raises(TypeError, match=r"ruda\.where: condition must have a bool dtype; got float"):
        xp.where(x, x, x)
    with pytest.raises(ValueError, match=r"ruda\.where: shapes .*\(3,\).*\(2,\).* cannot be broadcast"):
        xp.where(x > 0, x, xp.asarray(rand(np.random.default_rng(2), (2,), f), device=device))


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 6))
def test_unique(device, data, seed, shape):
    dt = data.draw(dtypes(device, ("bool", "integral", "real floating")), label="dtype")
    a = tied(np.random.default_rng(seed), shape, dt) if np.dtype(dt).kind != "b" else \
        rand(np.random.default_rng(seed), shape, dt)
    x = xp.asarray(a, device=device)
    exp_vals, exp_idx, exp_inv, exp_counts = np.unique(a, return_index=True, return_inverse=True,
                                                       return_counts=True)
    idt = index_dtype(device)
    # order of unique values is unspecified: compare after sorting, then check consistency
    vals = xp.unique_values(x)
    assert vals.dtype == dt
    np.testing.assert_array_equal(np.sort(to_numpy(vals)), exp_vals)

    ua = xp.unique_all(x)
    v, i, inv, c = (to_numpy(t) for t in ua)
    assert ua.values.dtype == dt and ua.indices.dtype == idt and ua.inverse_indices.dtype == idt
    assert ua.counts.dtype == idt
    order = np.argsort(v, kind="stable")
    np.testing.assert_array_equal(v[order], exp_vals)
    np.testing.assert_array_equal(c[order], exp_counts)
    np.testing.assert_array_equal(i[order], exp_idx)                  # first occurrences
    assert inv.shape == a.shape
    np.testing.assert_array_equal(v[inv], a)

    uc = xp.unique_counts(x)
    order = np.argsort(to_numpy(uc.values), kind="stable")
    np.testing.assert_array_equal(to_numpy(uc.values)[order], exp_vals)
    np.testing.assert_array_equal(to_numpy(uc.counts)[order], exp_counts)
    assert uc.counts.dtype == idt

    ui = xp.unique_inverse(x)
    assert ui.inverse_indices.shape == a.shape and ui.inverse_indices.dtype == idt
    np.testing.assert_array_equal(to_numpy(ui.values)[to_numpy(ui.inverse_indices)], a)


@given(data=st.data(), seed=seeds, s1=shapes(0, 3, 0, 5), n2=st.integers(0, 8), invert=st.booleans())
def test_isin(device, data, seed, s1, n2, invert):
    dt = data.draw(dtypes(device, REAL + ("complex floating",)), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = tied(rng, s1, dt), tied(rng, (n2,), dt)
    res = xp.isin(xp.asarray(a, device=device), xp.asarray(b, device=device), invert=invert)
    assert_result(res, np.isin(a, b, invert=invert), dtype=xp.bool)
    s = b[0].item() if n2 else 1
    res = xp.isin(xp.asarray(a, device=device), s)
    assert_result(res, np.isin(a, np.asarray(s, dt)), dtype=xp.bool)


@pytest.mark.parametrize("n2", [1, 2, 3, 255, 256, 257, 3000])
def test_isin_sizes_nan_and_dtypes(device, n2):
    """isin against more values than the property test draws, NaN never a member, every kind."""
    rng = np.random.default_rng(n2)
    kinds = supported(device, "real floating") + supported(device, "integral")[::3] + \
        supported(device, "complex floating")[:1]
    for dt in kinds:
        b = _search_values(rng, n2, dt) if np.dtype(dt).kind != "c" else tied(rng, (n2,), dt)
        a = np.concatenate([b[: n2 // 2 * 2], _search_values(rng, 40, dt) if np.dtype(dt).kind != "c"
                            else tied(rng, (40,), dt)]).reshape(-1, 2)
        for invert in (False, True):
            res = xp.isin(xp.asarray(a, device=device), xp.asarray(b, device=device), invert=invert)
            assert_result(res, np.isin(a, b, invert=invert), dtype=xp.bool)


def test_isin_uint64_with_int64_is_exact(device):
    """uint64 against int64 matches as ``equal`` does, exactly (not through float64, which rounds
    past 2**53); negative and past-2**63 values match nothing, in either role."""
    if xp.uint64 not in supported(device, "integral"):
        pytest.skip(f"{device} has no 64-bit integers")
    rng = np.random.default_rng(8)
    u = np.concatenate([[2**63, 5, 0, 2**64 - 1, 2**53 + 1, 2**63 - 1],
                        rng.integers(0, 2**64, 30, dtype=np.uint64)]).astype(np.uint64)
    s = np.concatenate([[2**63 - 1, -1, 5, 0, 2**53, -(2**63)],
                        rng.integers(-(2**63), 2**63, 30, dtype=np.int64)]).astype(np.int64)
    s[-5:] = u[-5:].astype(np.int64)          # wrapped twins of uint64 values past 2**63
    for a, b in ((u, s), (s, u)):
        members = {int(t) for t in b}
        for invert in (False, True):
            want = np.array([(int(t) in members) != invert for t in a])
            res = xp.isin(xp.asarray(a, device=device), xp.asarray(b, device=device), invert=invert)
            assert_result(res, want, dtype=xp.bool)


def test_isin_complex(device):
    """Complex values (ties in both parts, NaN parts never match) against NumPy."""
    rng = np.random.default_rng(5)
    for dt in supported(device, "complex floating"):
        a, b = tied(rng, (6, 7), dt), tied(rng, (9,), dt)
        a[0, :2] = b[:2] = complex(np.nan, 0.75)
        for invert in (False, True):
            res = xp.isin(xp.asarray(a, device=device), xp.asarray(b, device=device), invert=invert)
            assert_result(res, np.isin(a, b, invert=invert), dtype=xp.bool)


def test_unique_complex_nan(device):
    """A complex value with a NaN part is its own unique value, like a real NaN."""
    for dt in supported(device, "complex floating"):
        a = np.asarray([complex(np.nan, 1), 2 + 1j, complex(1, np.nan), 0j, complex(-0.0, 0), 2 + 1j,
                        complex(np.nan, np.nan), complex(np.nan, 1)], dtype=dt)
        vals, counts = (to_numpy(t) for t in xp.unique_counts(xp.asarray(a, device=device)))
        assert vals.dtype == dt and np.isnan(vals).sum() == 4
        np.testing.assert_array_equal(counts[np.isnan(vals)], [1, 1, 1, 1])
        assert sorted(counts[~np.isnan(vals)]) == [2, 2]


def test_unique_nan_and_signed_zero(device):
    """Each NaN is its own unique value (count 1); +0 and -0 are one value (the standard)."""
    for dt in supported(device, "real floating"):
        rng = np.random.default_rng(8)
        v = rand(rng, (3,), dt, 1, 9)
        a = np.asarray([np.nan, v[0], np.nan, 0.0, -0.0, v[0], v[1]], dtype=dt)
        x = xp.asarray(a, device=device)
        vals = to_numpy(xp.unique_values(x))
        assert vals.dtype == dt
        assert np.isnan(vals).sum() == 2
        np.testing.assert_array_equal(np.sort(vals[~np.isnan(vals)]), np.sort(np.asarray([0.0, v[0], v[1]], dt)))
        vals, counts = (to_numpy(t) for t in xp.unique_counts(x))
        np.testing.assert_array_equal(counts[np.isnan(vals)], [1, 1])
        assert counts[vals == 0] == 2 and counts[vals == v[0]] == 2 and counts.sum() == a.size
        ua = xp.unique_all(x)
        vals, idx, inv = to_numpy(ua.values), to_numpy(ua.indices), to_numpy(ua.inverse_indices)
        recon = vals[inv]
        np.testing.assert_array_equal(np.isnan(recon), np.isnan(a))
        np.testing.assert_array_equal(recon[~np.isnan(a)], a[~np.isnan(a)])
        np.testing.assert_array_equal(np.isnan(vals), np.isnan(a[idx]))
