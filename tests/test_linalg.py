"""Linear algebra: the main-namespace matmul/tensordot/vecdot/matrix_transpose and the linalg
extension, against NumPy (float64/complex128 oracle) on every device.  Decompositions whose output
is not unique (eig, eigh vectors, qr, svd) are checked by their defining identities."""
import re

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from test_reductions import accumulation_dtype
from strategies import assert_result, broadcastable_pair, default, dtypes, host64, rand, seeds, shapes, supported, view

FLOAT = ("real floating", "complex floating")
NUMERIC = ("integral", "real floating", "complex floating")

batch = shapes(0, 2, 1, 3)
size = st.integers(1, 4)


def _vals(rng, shape, dt):
    k = np.dtype(dt).kind
    return rand(rng, shape, dt, 0 if k == "u" else -3, 3) if k in "iu" else rand(rng, shape, dt, -1, 1)


def well_conditioned(rng, shape, dt):
    """Random square matrices made diagonally dominant (so inverses/solves are accurate)."""
    a = rand(rng, shape, dt, -1, 1)
    n = shape[-1]
    return (a + (n + 1) * np.eye(n)).astype(dt)


def spd(rng, shape, dt):
    """Random Hermitian positive definite matrices."""
    a = host64(rand(rng, shape, dt, -1, 1))
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return h.astype(dt)


def check(res, exp, dt, scale=1.0):
    """Compare with tolerances loosened for accumulated rounding in O(n^3) algorithms."""
    if np.dtype(dt).kind in "fc":
        single = np.dtype(dt) in (np.float32, np.complex64)
        tol = (5e-4 if single else 1e-9) * scale
        assert_result(res, exp, dtype=dt, rtol=tol, atol=tol)
    else:
        assert_result(res, exp, dtype=dt)


def real_dtype(dt):
    return {np.dtype("complex64"): np.dtype("float32"), np.dtype("complex128"): np.dtype("float64")}.get(
        np.dtype(dt), np.dtype(dt))


# ---- main namespace -----------------------------------------------------------------------

@given(data=st.data(), seed=seeds, bs=broadcastable_pair(max_dims=2, max_side=3), n=size, k=size, m=size,
       form=st.sampled_from(["mm", "mv", "vm", "vv"]), layout=st.sampled_from(["contiguous", "reversed", "transposed"]))
def test_matmul(device, data, seed, bs, n, k, m, form, layout):
    dt = data.draw(dtypes(device, NUMERIC), label="dtype")
    rng = np.random.default_rng(seed)
    b1, b2 = bs
    s1 = {"mm": b1 + (n, k), "mv": b1 + (n, k), "vm": (k,), "vv": (k,)}[form]
    s2 = {"mm": b2 + (k, m), "mv": (k,), "vm": b2 + (k, m), "vv": (k,)}[form]
    if layout == "transposed" and len(s1) >= 2:           # x1 given as the transpose of its transpose
        t = _vals(rng, s1[:-2] + (s1[-1], s1[-2]), dt)
        x, a = view(xp.asarray(t, device=device), t, "transposed")
    else:
        a = _vals(rng, s1, dt)
        x, a = view(xp.asarray(a, device=device), a, "reversed") if layout == "reversed" else \
            (xp.asarray(a, device=device), a)
    b = _vals(rng, s2, dt)
    res = xp.matmul(x, xp.asarray(b, device=device))
    check(res, np.matmul(host64(a), host64(b)), dt)


@given(data=st.data(), seed=seeds, s=shapes(1, 3, 1, 3), extra1=shapes(0, 2, 1, 3), extra2=shapes(0, 2, 1, 3),
       pair=st.booleans())
def test_tensordot(device, data, seed, s, extra1, extra2, pair):
    dt = data.draw(dtypes(device, NUMERIC), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = _vals(rng, extra1 + s, dt), _vals(rng, s + extra2, dt)
    n = data.draw(st.integers(0, len(s)), label="axes")
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    if pair:
        # contract the same dimensions, named explicitly (and with a permuted order)
        ax1 = [len(extra1) + i for i in range(n)]
        ax2 = [i for i in range(n)]
        perm = list(range(n))[::-1]
        ax1, ax2 = [ax1[p] for p in perm], [ax2[p] for p in perm]
        check(xp.tensordot(x, y, axes=(ax1, ax2)), np.tensordot(host64(a), host64(b), axes=(ax1, ax2)), dt)
    else:
        a2 = _vals(rng, extra1 + s, dt)
        b2 = _vals(rng, s[len(s) - n:] + extra2, dt)
        check(xp.tensordot(xp.asarray(a2, device=device), xp.asarray(b2, device=device), axes=n),
              np.tensordot(host64(a2), host64(b2), axes=n), dt)


@given(data=st.data(), seed=seeds, bshape=shapes(0, 2, 1, 3), n=size)
def test_vecdot(device, data, seed, bshape, n):
    dt = data.draw(dtypes(device, NUMERIC), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = _vals(rng, bshape + (n,), dt), _vals(rng, (n,), dt)
    # the standard conjugates x1
    check(xp.vecdot(xp.asarray(a, device=device), xp.asarray(b, device=device)),
          np.sum(np.conj(host64(a)) * host64(b), axis=-1), dt)
    c = _vals(rng, (n,) + bshape, dt)
    d = _vals(rng, (n,) + bshape, dt)
    if bshape:
        check(xp.vecdot(xp.asarray(c, device=device), xp.asarray(d, device=device), axis=-len(bshape) - 1),
              np.sum(np.conj(host64(c)) * host64(d), axis=0), dt)


@given(seed=seeds, shape=shapes(2, 4, 1, 4))
def test_matrix_transpose(device, seed, shape):
    dt = supported(device)[-1]
    a = rand(np.random.default_rng(seed), shape, dt)
    assert_result(xp.matrix_transpose(xp.asarray(a, device=device)), np.swapaxes(a, -1, -2), dtype=dt)
    assert_result(xp.linalg.matrix_transpose(xp.asarray(a, device=device)), np.swapaxes(a, -1, -2), dtype=dt)


def test_main_namespace_errors(device):
    f = supported(device, "real floating")[0]
    a = xp.asarray(rand(np.random.default_rng(1), (2, 3), f), device=device)
    b = xp.asarray(rand(np.random.default_rng(2), (4, 2), f), device=device)
    with pytest.raises(ValueError, match=r"ruda\.matmul: contracted dimensions differ: shapes \(2, 3\) and \(4, 2\)"):
        xp.matmul(a, b)
    with pytest.raises(ValueError, match=r"ruda\.matmul: operands must be at least 1-D"):
        xp.matmul(a, xp.asarray(np.asarray(1.0, f), device=device))
    with pytest.raises(TypeError, match=r"ruda\.matmul: x1 must have a numeric dtype; got bool"):
        xp.matmul(a > 0, a)
    with pytest.raises(ValueError, match=r"ruda\.tensordot: contracted dimensions differ"):
        xp.tensordot(a, b, axes=1)
    with pytest.raises(ValueError, match=r"ruda\.vecdot: contracted dimensions differ"):
        xp.vecdot(a, xp.asarray(rand(np.random.default_rng(3), (2, 1), f), device=device))


def test_tensordot_axes_pair(device):
    """Each sequence of an axes pair names distinct axes (after normalizing negatives): a repeat
    is refused on every device; a bare int in the pair is a sequence of one (NumPy's)."""
    f = supported(device, "real floating")[0]
    rng = np.random.default_rng(4)
    a, b = rand(rng, (3, 3, 2), f), rand(rng, (3, 3, 2), f)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    for axes in (([0, 0], [0, 1]), ([0, -3], [0, 1]), ([0, 1], [1, 1]), ([2, -1], [2, 0])):
        with pytest.raises(ValueError, match=r"ruda\.tensordot: axes\[[01]\]=.* repeats an axis"):
            xp.tensordot(x, y, axes=axes)
    for axes in ((1, 0), ([1], 0), (2, [-1]), ((0, 1), (1, 0))):
        check(xp.tensordot(x, y, axes=axes), np.tensordot(host64(a), host64(b), axes=axes), f)
    with pytest.raises(TypeError, match=r"ruda\.tensordot: axes\[0\] must be an integer; got NoneType"):
        xp.tensordot(x, y, axes=(None, [0]))


@pytest.mark.parametrize("s1, s2, axis", [
    ((2, 3, 4), (2, 4), 0), ((2, 3, 4), (4, 3), 1), ((4, 2, 3), (4, 3), 0), ((3,), (3, 2), 0),
    ((3, 3, 3), (3, 3), 0), ((2, 3), (1, 3), 1), ((2, 3, 4), (3, 4), -2), ((1, 4, 3), (2, 1, 3), 2)])
def test_vecdot_axis_of_each_operand(device, s1, s2, axis):
    """A non-negative axis names each operand's own axis (NumPy 2's vecdot), also where the
    ranks differ; a negative one counts from the end of each."""
    f = supported(device, "real floating")[0]
    rng = np.random.default_rng(6)
    a, b = rand(rng, s1, f), rand(rng, s2, f)
    exp = np.vecdot(host64(a), host64(b), axis=axis)
    check(xp.vecdot(xp.asarray(a, device=device), xp.asarray(b, device=device), axis=axis), exp, f)


@pytest.mark.parametrize("s1, s2, axis", [
    ((3, 2, 4), (3, 4), 0), ((2, 3, 4), (4, 3), 1), ((3, 2), (3, 4, 2), 0), ((4, 3), (2, 3, 4), 1),
    ((3, 3, 3), (3, 3), 0), ((2, 3), (5, 2, 3), -1), ((3, 2), (4, 3, 2), -2)])
def test_cross_axis_of_each_operand(device, s1, s2, axis):
    """A non-negative axis names each operand's own axis and places the result's vectors at that
    axis (NumPy's cross with axisa = axisb = axisc = axis), also where the ranks differ."""
    f = supported(device, "real floating")[0]
    rng = np.random.default_rng(7)
    a, b = rand(rng, s1, f), rand(rng, s2, f)
    exp = np.cross(host64(a), host64(b), axis=axis)
    check(xp.linalg.cross(xp.asarray(a, device=device), xp.asarray(b, device=device), axis=axis), exp, f)


def test_vector_axis_errors(device):
    f = supported(device, "real floating")[0]
    x = xp.ones((2, 3), dtype=f, device=device)
    for axis in (None, 1.0, (0,)):
        for fn, name in ((xp.vecdot, "vecdot"), (xp.linalg.cross, "linalg.cross")):
            with pytest.raises(TypeError, match=rf"ruda\.{name}: axis must be an integer; got {type(axis).__name__}"):
                fn(x, x, axis=axis)
    # each operand's own axis 1: 4 points in x1 (2, 4, 3), whose last axis alone is 3 long
    with pytest.raises(ValueError, match=r"ruda\.linalg\.cross: axis 1 must have size 3; got shapes "
                                         r"\(2, 4, 3\) and \(4, 3\)"):
        xp.linalg.cross(xp.ones((2, 4, 3), dtype=f, device=device), xp.ones((4, 3), dtype=f, device=device),
                        axis=1)


# ---- linalg extension ---------------------------------------------------------------------

@given(data=st.data(), seed=seeds, b=batch, n=size, upper=st.booleans())
def test_cholesky(device, data, seed, b, n, upper):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = spd(np.random.default_rng(seed), b + (n, n), dt)
    exp = np.linalg.cholesky(host64(a))
    if upper:
        exp = np.conj(np.swapaxes(exp, -1, -2))
    check(xp.linalg.cholesky(xp.asarray(a, device=device), upper=upper), exp, dt, scale=4)
    # only the named triangle is read (NumPy's and torch's upper=True reads the upper one)
    other = np.tril_indices(n, -1) if upper else np.triu_indices(n, 1)
    a[..., other[0], other[1]] = 7
    check(xp.linalg.cholesky(xp.asarray(a, device=device), upper=upper), exp, dt, scale=4)


def test_lapack_failures_name_the_function(device):
    """A singular matrix, one not positive definite, an SVD of NaN: numpy.linalg.LinAlgError (a
    ValueError) naming the ruda function (cuda: CuPy does not check, by default)."""
    if device.kind == "cuda":
        pytest.skip("CuPy's linalg leaves inf or NaN in the result instead of raising")
    f = supported(device, "real floating")[0]
    z = xp.zeros((2, 2), dtype=f, device=device)
    nan = xp.asarray(np.asarray([[np.nan, 1.0], [1.0, 1.0]]), dtype=f, device=device)
    for name, call in [("inv", lambda: xp.linalg.inv(z)), ("solve", lambda: xp.linalg.solve(z, z)),
                       ("matrix_power", lambda: xp.linalg.matrix_power(z, -2)),
                       ("cholesky", lambda: xp.linalg.cholesky(z)),
                       ("cholesky", lambda: xp.linalg.cholesky(z, upper=True)),
                       ("svd", lambda: xp.linalg.svd(nan))]:
        with pytest.raises(np.linalg.LinAlgError, match=rf"^ruda\.linalg\.{name}: [A-Z]"):
            call()


@given(data=st.data(), seed=seeds, b=batch)
def test_cross(device, data, seed, b):
    dt = data.draw(dtypes(device, ("signed integer", "real floating", "complex floating")), label="dtype")
    rng = np.random.default_rng(seed)
    a, c = _vals(rng, b + (3,), dt), _vals(rng, (3,), dt)
    check(xp.linalg.cross(xp.asarray(a, device=device), xp.asarray(c, device=device)),
          np.cross(host64(a), host64(c)), dt)
    if b:
        a2, c2 = _vals(rng, (3,) + b, dt), _vals(rng, (3,) + b, dt)
        check(xp.linalg.cross(xp.asarray(a2, device=device), xp.asarray(c2, device=device), axis=-len(b) - 1),
              np.cross(host64(a2), host64(c2), axis=0), dt)


@given(data=st.data(), seed=seeds, b=batch, n=size)
def test_det_slogdet_inv(device, data, seed, b, n):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = well_conditioned(np.random.default_rng(seed), b + (n, n), dt)
    x = xp.asarray(a, device=device)
    h = host64(a)
    check(xp.linalg.det(x), np.linalg.det(h), dt, scale=4)
    sign, logabs = xp.linalg.slogdet(x)
    esign, elog = np.linalg.slogdet(h)
    check(sign, esign, dt, scale=4)
    check(logabs, elog, real_dtype(dt), scale=4)
    check(xp.linalg.inv(x), np.linalg.inv(h), dt, scale=4)


@given(data=st.data(), seed=seeds, shape=shapes(2, 4, 1, 5), offset=st.integers(-4, 4))
def test_diagonal_and_trace(device, data, seed, shape, offset):
    dt = data.draw(dtypes(device, NUMERIC), label="dtype")
    a = _vals(np.random.default_rng(seed), shape, dt)
    x = xp.asarray(a, device=device)
    assert_result(xp.linalg.diagonal(x, offset=offset), np.diagonal(a, offset, -2, -1), dtype=dt)
    want = accumulation_dtype(device, dt)
    check(xp.linalg.trace(x, offset=offset), np.trace(host64(a).astype(want) if want.kind in "iu" else host64(a),
                                                       offset, axis1=-2, axis2=-1), want)


@given(data=st.data(), seed=seeds, b=batch, n=size)
def test_eigh_eigvalsh(device, data, seed, b, n):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = spd(np.random.default_rng(seed), b + (n, n), dt)
    x = xp.asarray(a, device=device)
    rdt = real_dtype(dt)
    ew = np.linalg.eigvalsh(host64(a))
    check(xp.linalg.eigvalsh(x), ew, rdt, scale=4)
    w, v = xp.linalg.eigh(x)
    check(w, ew, rdt, scale=4)
    assert v.dtype == dt
    vv, ww = host64(to_numpy(v)), host64(to_numpy(w))
    # A V = V diag(w), V unitary
    np.testing.assert_allclose(host64(a) @ vv, vv * ww[..., None, :], atol=1e-3 * n)
    np.testing.assert_allclose(np.conj(np.swapaxes(vv, -1, -2)) @ vv, np.broadcast_to(np.eye(n), vv.shape),
                               atol=1e-3)


@given(data=st.data(), seed=seeds, b=batch, n=size)
def test_eig_eigvals(device, data, seed, b, n):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = well_conditioned(np.random.default_rng(seed), b + (n, n), dt)
    x = xp.asarray(a, device=device)
    cdt = {np.dtype("float32"): np.dtype("complex64"), np.dtype("float64"): np.dtype("complex128")}.get(
        np.dtype(dt), np.dtype(dt))
    vals = xp.linalg.eigvals(x)
    assert vals.dtype == cdt
    got = np.sort_complex(to_numpy(vals).reshape(-1, n)).astype(np.complex128)
    exp = np.sort_complex(np.linalg.eigvals(host64(a)).reshape(-1, n))
    np.testing.assert_allclose(got, exp, rtol=1e-3, atol=1e-3)
    w, v = xp.linalg.eig(x)
    assert w.dtype == cdt and v.dtype == cdt
    ww, vv = to_numpy(w).astype(np.complex128), to_numpy(v).astype(np.complex128)
    np.testing.assert_allclose(host64(a) @ vv, vv * ww[..., None, :], atol=2e-3 * n)


@given(data=st.data(), seed=seeds, b=batch, m=size, n=size,
       ord=st.sampled_from(["fro", "nuc", 1, 2, -1, -2, np.inf, -np.inf]), keepdims=st.booleans())
def test_matrix_norm(device, data, seed, b, m, n, ord, keepdims):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = rand(np.random.default_rng(seed), b + (m, n), dt, -2, 2)
    res = xp.linalg.matrix_norm(xp.asarray(a, device=device), ord=ord, keepdims=keepdims)
    check(res, np.linalg.matrix_norm(host64(a), ord=ord, keepdims=keepdims), real_dtype(dt), scale=4)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0), (0, 3), (2, 3, 0), (0, 2, 0)])
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, 2, -1, -2, np.inf, -np.inf])
def test_matrix_norm_of_empty(device, shape, ord):
    """An empty matrix's norms are 0 (NumPy's, 1/2/inf included); a negative ord whose least
    value (column sum, singular value, row sum) has none to take raises on every device."""
    f = supported(device, "real floating")[0]
    x = xp.zeros(shape, dtype=f, device=device)
    try:
        exp = np.linalg.matrix_norm(np.zeros(shape), ord=ord, keepdims=True)
    except ValueError:
        with pytest.raises(ValueError, match=rf"ruda\.linalg\.matrix_norm: ord={ord} \(the least .*\) needs x "
                                             rf"with .*; got shape {re.escape(str(shape))}"):
            xp.linalg.matrix_norm(x, ord=ord)
        return
    for keepdims in (False, True):
        want = exp if keepdims else exp[..., 0, 0]
        check(xp.linalg.matrix_norm(x, ord=ord, keepdims=keepdims), want, f)


@pytest.mark.parametrize("shape", [(0, 0), (3, 0), (0, 2), (2, 3, 0), (0, 2, 2)])
def test_matrix_rank_of_empty(device, shape):
    """An empty matrix has rank 0 (NumPy 2.4's; older NumPy raises), in the default integer
    dtype."""
    f = supported(device, "real floating")[0]
    x = xp.zeros(shape, dtype=f, device=device)
    assert_result(xp.linalg.matrix_rank(x), np.zeros(shape[:-2], int), dtype=default(device, "integral"))
    rtol = xp.full((4,) + shape[:-2], 0.5, dtype=f, device=device)     # broadcasts with the stacks
    assert_result(xp.linalg.matrix_rank(x, rtol=rtol), np.zeros((4,) + shape[:-2], int),
                  dtype=default(device, "integral"))


@given(data=st.data(), seed=seeds, b=batch, n=size, p=st.integers(-3, 4))
def test_matrix_power(device, data, seed, b, n, p):
    kinds = FLOAT if p < 0 else NUMERIC
    dt = data.draw(dtypes(device, kinds), label="dtype")
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, b + (n, n), dt) / (n + 1) if p < 0 else _vals(rng, b + (n, n), dt)
    a = a.astype(dt)
    check(xp.linalg.matrix_power(xp.asarray(a, device=device), p), np.linalg.matrix_power(host64(a), p), dt,
          scale=10)


def test_matrix_power_one_is_a_copy(device):
    """x ** 1 is a new array like every other power: writing into it leaves x as it was."""
    f = supported(device, "real floating")[0]
    a = rand(np.random.default_rng(8), (2, 3, 3), f)
    x = xp.asarray(a, device=device, copy=True)      # not a's memory, which stays as the oracle
    r = xp.linalg.matrix_power(x, 1)
    check(r, host64(a), f)
    r[...] = 0
    check(x, host64(a), f)


@given(data=st.data(), seed=seeds, b=batch, m=size, n=size, r=st.integers(1, 4))
def test_matrix_rank_pinv_svd(device, data, seed, b, m, n, r):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    rng = np.random.default_rng(seed)
    r = min(r, m, n)
    a = (host64(rand(rng, b + (m, r), dt, -1, 1)) @ host64(rand(rng, b + (r, n), dt, -1, 1))).astype(dt)
    x = xp.asarray(a, device=device)
    h = host64(a)
    # the oracle's cut-off uses the input precision (the matrix is rank r only up to rounding)
    cut = max(m, n) * np.finfo(dt).eps
    rank = xp.linalg.matrix_rank(x)
    assert rank.dtype.kind == "i"
    np.testing.assert_array_equal(to_numpy(rank), np.linalg.matrix_rank(h, rtol=cut))
    check(xp.linalg.pinv(x), np.linalg.pinv(h, rtol=cut), dt, scale=100)
    rdt = real_dtype(dt)
    check(xp.linalg.svdvals(x), np.linalg.svd(h, compute_uv=False), rdt, scale=4)
    for full in (False, True):
        u, s, vh = xp.linalg.svd(x, full_matrices=full)
        assert u.dtype == dt and vh.dtype == dt and s.dtype == rdt
        k = min(m, n)
        assert u.shape == b + ((m, m) if full else (m, k)) and vh.shape == b + ((n, n) if full else (k, n))
        uu, ss, vv = host64(to_numpy(u)), host64(to_numpy(s)), host64(to_numpy(vh))
        np.testing.assert_allclose((uu[..., :, :k] * ss[..., None, :]) @ vv[..., :k, :], h, atol=1e-3)
        check(s, np.linalg.svd(h, compute_uv=False), rdt, scale=4)


@given(data=st.data(), seed=seeds, b=batch, m=size, n=size, complete=st.booleans())
def test_qr(device, data, seed, b, m, n, complete):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = rand(np.random.default_rng(seed), b + (m, n), dt, -1, 1)
    q, r = xp.linalg.qr(xp.asarray(a, device=device), mode="complete" if complete else "reduced")
    k = m if complete else min(m, n)
    assert q.dtype == dt and r.dtype == dt
    assert q.shape == b + (m, k) and r.shape == b + (k, n)
    qq, rr = host64(to_numpy(q)), host64(to_numpy(r))
    np.testing.assert_allclose(qq @ rr, host64(a), atol=1e-4)
    np.testing.assert_allclose(np.conj(np.swapaxes(qq, -1, -2)) @ qq, np.broadcast_to(np.eye(k), b + (k, k)),
                               atol=1e-4)
    np.testing.assert_array_equal(np.tril(rr, -1), 0)


@given(data=st.data(), seed=seeds, b=batch, n=size, k=size, vector=st.booleans())
def test_solve(device, data, seed, b, n, k, vector):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    rng = np.random.default_rng(seed)
    a = well_conditioned(rng, b + (n, n), dt)
    rhs = rand(rng, (n,) if vector else b + (n, k), dt, -1, 1)
    res = xp.linalg.solve(xp.asarray(a, device=device), xp.asarray(rhs, device=device))
    if vector:
        exp = np.linalg.solve(host64(a), host64(rhs)[..., None])[..., 0] if b else np.linalg.solve(host64(a), host64(rhs))
    else:
        exp = np.linalg.solve(host64(a), host64(rhs))
    check(res, exp, dt, scale=4)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((0, 0), (0, 0, 0)), ((0, 0), (0,)), ((0, 0), (3, 0, 2)), ((2, 0, 0), (0, 3)), ((3, 3), (3, 0)),
    ((0, 3, 3), (3, 2)), ((3, 3), (2, 3, 1)), ((2, 1, 3, 3), (4, 3, 2)), ((1, 3, 3), (2, 3, 2)),
    ((2, 3, 3), (3,)),
])
def test_solve_broadcast_stacks_and_empty(device, a_shape, b_shape):
    """The standard broadcasts the stack dimensions of x1 and x2 (x2 of ndim 1 is one vector for
    every matrix), also when a dimension is 0 (the suite draws x1 (0, 0) with x2 (0, 0, 0))."""
    dt = supported(device, "real floating")[0]
    rng = np.random.default_rng(5)
    a = well_conditioned(rng, a_shape, dt)
    rhs = rand(rng, b_shape, dt, -1, 1)
    res = xp.linalg.solve(xp.asarray(a, device=device), xp.asarray(rhs, device=device))
    if rhs.ndim == 1:
        exp = np.linalg.solve(host64(a), np.broadcast_to(host64(rhs), a_shape[:-1])[..., None])[..., 0]
    else:
        exp = np.linalg.solve(host64(a), host64(rhs))
    check(res, exp, dt, scale=4)


def test_solve_stacks_must_broadcast(device):
    f = supported(device, "real floating")[0]
    with pytest.raises(ValueError, match=r"ruda\.linalg\.solve: shapes \(2,\), \(4,\) cannot be broadcast"):
        xp.linalg.solve(xp.ones((2, 3, 3), dtype=f, device=device), xp.ones((4, 3, 1), dtype=f, device=device))


def test_default_rtol_of_half_dtypes_is_their_eps(device):
    """max(M, N) eps of x's own dtype (the standard's), though halves are computed in float32:
    [[1, 1], [1, 1 + 2**-10]] (exact in float16) has rank 1 in float16, 2 in float32."""
    a = np.array([[1, 1], [1, 1 + 2**-10]])
    for name, rank in (("float16", 1), ("bfloat16", 1), ("float32", 2)):
        dt = getattr(xp, name)
        if dt is None or not device.backend.supports(dt):
            continue
        x = xp.asarray(a, dtype=dt, device=device)
        assert int(xp.linalg.matrix_rank(x)) == rank, name
        p = xp.linalg.pinv(x)
        assert p.dtype == dt and bool(xp.all(xp.isfinite(p)))
        if rank == 1:      # the rank-1 pseudo-inverse, not the inverse's entries of about 1e3
            assert float(xp.max(xp.abs(xp.astype(p, xp.float32)))) < 1


@pytest.mark.parametrize("fn", ["matrix_rank", "pinv"])
def test_rtol_is_real_and_broadcasts(device, fn):
    """rtol is a real number, or an array of a real dtype that broadcasts against the stacks."""
    f = supported(device, "real floating")[0]
    x = xp.ones((2, 3, 3), dtype=f, device=device)
    with pytest.raises(ValueError, match=rf"ruda\.linalg\.{fn}: shapes \(2,\), \(3,\) cannot be broadcast"):
        getattr(xp.linalg, fn)(x, rtol=xp.full((3,), 0.5, dtype=f, device=device))
    for bad in (1j, np.complex64(0.5), True):
        with pytest.raises(ValueError, match=rf"ruda\.linalg\.{fn}: rtol must be a real number; got"):
            getattr(xp.linalg, fn)(x, rtol=bad)
    c = supported(device, "complex floating")[0]
    with pytest.raises(TypeError, match=rf"ruda\.linalg\.{fn}: rtol must have a real numeric dtype; got complex"):
        getattr(xp.linalg, fn)(x, rtol=xp.full((2,), 0.5, dtype=c, device=device))
    # one rtol per stack
    rtol = np.array([0.5, 1e-6])
    a = rand(np.random.default_rng(9), (2, 3, 3), f)
    got = getattr(xp.linalg, fn)(xp.asarray(a, device=device), rtol=xp.asarray(rtol.astype(f), device=device))
    exp = getattr(np.linalg, fn)(host64(a), rtol=rtol)
    if fn == "pinv":
        check(got, exp, f, scale=100)
    else:
        np.testing.assert_array_equal(to_numpy(got), exp)
    # an rtol of more stacks than x's: x's stack broadcast to it, for both functions
    rtol = np.array([[0.5, 1e-6], [1e-6, 0.5], [0.9, 0.9]])
    got = getattr(xp.linalg, fn)(xp.asarray(a, device=device), rtol=xp.asarray(rtol.astype(f), device=device))
    exp = getattr(np.linalg, fn)(host64(np.broadcast_to(a, (3, 2, 3, 3))), rtol=rtol)
    assert got.shape == exp.shape
    if fn == "pinv":
        check(got, exp, f, scale=100)
    else:
        np.testing.assert_array_equal(to_numpy(got), exp)


@given(data=st.data(), seed=seeds, m=size, n=size)
def test_outer(device, data, seed, m, n):
    dt = data.draw(dtypes(device, NUMERIC), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = _vals(rng, (m,), dt), _vals(rng, (n,), dt)
    check(xp.linalg.outer(xp.asarray(a, device=device), xp.asarray(b, device=device)),
          np.outer(host64(a), host64(b)), dt)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 4), keepdims=st.booleans(),
       ord=st.sampled_from([2, 1, 3, 0.5, np.inf, -np.inf, 0]))
def test_vector_norm(device, data, seed, shape, keepdims, ord):
    dt = data.draw(dtypes(device, FLOAT), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt, -2, 2)
    nd = len(shape)
    axis = data.draw(st.none() | st.integers(-nd, nd - 1) |
                     st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd).map(tuple),
                     label="axis")
    res = xp.linalg.vector_norm(xp.asarray(a, device=device), axis=axis, keepdims=keepdims, ord=ord)
    exp = np.linalg.vector_norm(host64(a), axis=axis, keepdims=keepdims, ord=ord)
    check(res, exp, real_dtype(dt), scale=4)


@pytest.mark.parametrize("ord", [np.inf, 2, 1, 0, 3])
@pytest.mark.parametrize("shape,axis", [((0,), None), ((0, 3), 0), ((3, 0), (0, 1))])
def test_vector_norm_of_no_values(device, ord, shape, axis):
    """Norms over a zero-size axis are 0, ord=inf (the largest |x|) included, as in NumPy;
    ord=-inf (the least |x| of no values) raises, naming the function."""
    f = supported(device, "real floating")[0]
    x = xp.zeros(shape, dtype=f, device=device)
    for keepdims in (False, True):
        res = xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
        check(res, np.linalg.vector_norm(np.zeros(shape), axis=axis, keepdims=keepdims, ord=ord), f)
    with pytest.raises(ValueError, match=r"ruda\.linalg\.vector_norm: ord=-inf"):
        xp.linalg.vector_norm(x, axis=axis, ord=-np.inf)


def test_linalg_errors(device):
    f = supported(device, "real floating")[0]
    i = supported(device, "signed integer")[0]
    rect = xp.asarray(rand(np.random.default_rng(1), (2, 3), f), device=device)
    with pytest.raises(ValueError, match=r"ruda\.linalg\.inv: x must be square.*\(2, 3\)"):
        xp.linalg.inv(rect)
    with pytest.raises(ValueError, match=r"ruda\.linalg\.det: x must have at least 2 dimensions; got shape \(3,\)"):
        xp.linalg.det(xp.asarray(rand(np.random.default_rng(1), (3,), f), device=device))
    with pytest.raises(TypeError, match=r"ruda\.linalg\.cholesky: x must have a floating-point dtype; got int"):
        xp.linalg.cholesky(xp.asarray(np.eye(2, dtype=i), device=device))
    with pytest.raises(ValueError, match=r"ruda\.linalg\.qr: mode must be"):
        xp.linalg.qr(rect, mode="r")
    with pytest.raises(ValueError, match=r"ruda\.linalg\.cross: axis -1 must have size 3"):
        xp.linalg.cross(rect.T, rect.T)
    with pytest.raises(ValueError, match=r"ruda\.linalg\.outer: x1 and x2 must be 1-D"):
        xp.linalg.outer(rect, rect)
    with pytest.raises(ValueError, match=r"ruda\.linalg\.solve: shapes \(2, 2\) and \(3,\) do not match"):
        xp.linalg.solve(xp.asarray(np.eye(2, dtype=f) * 2, device=device),
                        xp.asarray(rand(np.random.default_rng(1), (3,), f), device=device))
