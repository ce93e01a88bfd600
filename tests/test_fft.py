"""The fft extension against numpy.fft (complex128 oracle) on every device: n/s, axis/axes, norm,
result dtypes (rfft of float32 is complex64, irfft of complex64 is float32, ...)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import to_numpy
from strategies import assert_result, default, dtypes, host64, layouts, rand, seeds, shapes, supported, view

NORMS = st.sampled_from(["backward", "ortho", "forward"])
COMPLEX_OF = {np.dtype("float32"): np.dtype("complex64"), np.dtype("float64"): np.dtype("complex128")}
REAL_OF = {v: k for k, v in COMPLEX_OF.items()}

# name: (input kind, output: "same" | "complex" | "real")
ONE_D = {"fft": ("complex floating", "same"), "ifft": ("complex floating", "same"),
         "rfft": ("real floating", "complex"), "irfft": ("complex floating", "real"),
         "hfft": ("complex floating", "real"), "ihfft": ("real floating", "complex")}
N_D = {"fftn": ("complex floating", "same"), "ifftn": ("complex floating", "same"),
       "rfftn": ("real floating", "complex"), "irfftn": ("complex floating", "real")}


def _out_dtype(dt, how):
    dt = np.dtype(dt)
    return dt if how == "same" else COMPLEX_OF[dt] if how == "complex" else REAL_OF[dt]


def _check(res, exp, want, size):
    single = want in (np.float32, np.complex64)
    tol = (2e-5 if single else 1e-11) * max(1.0, np.log2(max(size, 2)))
    scale = max(1.0, float(np.max(np.abs(exp), initial=0.0)))
    assert_result(res, exp, dtype=want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("name", sorted(ONE_D))
@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 6), norm=NORMS, use_n=st.booleans(), layout=layouts)
def test_fft_1d(device, name, data, seed, shape, norm, use_n, layout):
    kind, how = ONE_D[name]
    dt = data.draw(dtypes(device, kind), label="dtype")
    x, a = view(xp.asarray(rand(np.random.default_rng(seed), shape, dt, -1, 1), device=device),
                rand(np.random.default_rng(seed), shape, dt, -1, 1), layout)
    shape = a.shape
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    n = data.draw(st.integers(1, 8), label="n") if use_n else None
    if name in ("irfft", "hfft") and n is None and shape[axis] < 2:
        n = 2
    res = getattr(xp.fft, name)(x, n=n, axis=axis, norm=norm)
    exp = getattr(np.fft, name)(host64(a), n=n, axis=axis, norm=norm)
    _check(res, exp, _out_dtype(dt, how), exp.size)


@pytest.mark.parametrize("name", sorted(N_D))
@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 2, 5), norm=NORMS, use_s=st.booleans())
def test_fft_nd(device, name, data, seed, shape, norm, use_s):
    kind, how = N_D[name]
    dt = data.draw(dtypes(device, kind), label="dtype")
    nd = len(shape)
    axes = data.draw(st.none() | st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd)
                     .map(tuple), label="axes")
    s = None
    if use_s:
        k = nd if axes is None else len(axes)
        s = tuple(data.draw(st.lists(st.integers(2, 6), min_size=k, max_size=k), label="s"))
    a = rand(np.random.default_rng(seed), shape, dt, -1, 1)
    res = getattr(xp.fft, name)(xp.asarray(a, device=device), s=s, axes=axes, norm=norm)
    # s without axes: the last len(s) axes (NumPy 2 deprecates leaving its axes out)
    np_axes = tuple(range(nd - len(s), nd)) if axes is None and s is not None else axes
    exp = getattr(np.fft, name)(host64(a), s=s, axes=np_axes, norm=norm)
    _check(res, exp, _out_dtype(dt, how), exp.size)


@pytest.mark.parametrize("name", sorted(N_D))
def test_fft_nd_s_equal_to_shape_on_other_axes(device, name):
    """s equal to x.shape, but given for permuted axes: every size goes to its own axis (CuPy
    skipped resizing when the tuple s equalled x.shape)."""
    kind, how = N_D[name]
    dt = np.float32 if kind == "real floating" else np.complex64
    a = rand(np.random.default_rng(7), (2, 3), dt, -1, 1)
    for s, axes in (((2, 3), (1, 0)), ((3, 2), (0, 1)), ((2,), (1,))):
        res = getattr(xp.fft, name)(xp.asarray(a, device=device), s=s, axes=axes)
        exp = getattr(np.fft, name)(host64(a), s=s, axes=axes)
        _check(res, exp, _out_dtype(dt, how), exp.size)


EMPTY_AXIS = [("fft", (0,), dict(n=4)), ("ifft", (2, 0), dict(n=3)), ("rfft", (0,), dict(n=5)),
              ("irfft", (0,), dict(n=6)), ("hfft", (2, 0), dict(n=3)), ("ihfft", (0, 2), dict(n=5, axis=0)),
              ("fftn", (2, 0), dict(s=(3, 4), axes=(0, 1))), ("ifftn", (0, 2), dict(s=(3, -1), axes=(0, 1))),
              ("rfftn", (2, 0), dict(s=(2, 5), axes=(0, 1))), ("irfftn", (2, 0), dict(s=(2, 4), axes=(0, 1))),
              ("irfftn", (0, 3), dict(s=(4,), axes=(0,)))]


@pytest.mark.parametrize("name, shape, kw", EMPTY_AXIS)
@pytest.mark.parametrize("norm", ["backward", "ortho"])
def test_empty_axis_zero_padded(device, name, shape, kw, norm):
    """An empty axis given n (or s) points is zero-padded to them: the transform of zeros, on
    every device (pocketfft's complex-to-real transforms left the result unset)."""
    kind, how = {**ONE_D, **N_D}[name]
    dt = supported(device, kind)[-1]
    sizes = (kw["n"],) if "n" in kw else kw["s"]
    over = (kw.get("axis", -1),) if "n" in kw else kw["axes"]
    padded = list(shape)
    for a, n in zip(over, sizes):
        padded[a] = shape[a] if n == -1 else n
    exp = getattr(np.fft, name)(np.zeros(padded, np.float64 if kind == "real floating" else np.complex128),
                                norm=norm, **kw)
    res = getattr(xp.fft, name)(xp.zeros(shape, dtype=dt, device=device), norm=norm, **kw)
    assert_result(res, exp, dtype=_out_dtype(dt, how), rtol=0, atol=0)


@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 6), norm=NORMS)
def test_round_trips(device, data, seed, shape, norm):
    dt = data.draw(dtypes(device, "real floating"), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt, -1, 1)
    x = xp.asarray(a, device=device)
    n = shape[-1]
    back = xp.fft.irfft(xp.fft.rfft(x, norm=norm), n=n, norm=norm)
    _check(back, host64(a), np.dtype(dt), n)
    c = xp.astype(x, COMPLEX_OF[np.dtype(dt)])
    _check(xp.fft.ifftn(xp.fft.fftn(c, norm=norm), norm=norm), host64(a).astype(np.complex128),
           COMPLEX_OF[np.dtype(dt)], a.size)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@given(data=st.data(), n=st.integers(1, 20), d=st.floats(0.1, 10))
def test_freq(device, name, data, n, d):
    dt = data.draw(st.none() | dtypes(device, "real floating"), label="dtype")
    want = default(device, "real floating") if dt is None else dt
    res = getattr(xp.fft, name)(n, d=d, dtype=dt, device=device)
    assert res.device == device
    _check(res, getattr(np.fft, name)(n, d=d), np.dtype(want), n)


def test_freq_values_are_numpys(device):
    """float64 fftfreq and rfftfreq bit for bit as NumPy's i * (1 / (n d)) (CuPy's i / (n d) gave
    0.3 for 0.30000000000000004)."""
    if xp.float64 not in supported(device, "real floating"):
        pytest.skip(f"no float64 on {device}")
    for n, d in ((10, 1.0), (6, 0.1), (7, 1 / 3)):
        for name in ("fftfreq", "rfftfreq"):
            got = getattr(xp.fft, name)(n, d=d, dtype=xp.float64, device=device)
            np.testing.assert_array_equal(to_numpy(got), getattr(np.fft, name)(n, d=d), err_msg=f"{name} {n} {d}")


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 6))
def test_shift(device, name, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device, ("integral", "real floating", "complex floating"))),
                   label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt)
    nd = len(shape)
    axes = data.draw(st.none() | st.integers(-nd, nd - 1) |
                     st.lists(st.integers(0, nd - 1), unique=True, min_size=1, max_size=nd).map(tuple),
                     label="axes")
    res = getattr(xp.fft, name)(xp.asarray(a, device=device), axes=axes)
    assert_result(res, getattr(np.fft, name)(a, axes=axes), dtype=dt, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shift_of_0d(device, name):
    """A 0-d array shifts over no axes: a copy of it, as is axes=() for any array."""
    f = supported(device, "real floating")[0]
    x = xp.asarray(np.asarray(3.0, f), device=device)
    res = getattr(xp.fft, name)(x)
    assert_result(res, np.asarray(3.0), dtype=f, rtol=0, atol=0)
    res[...] = 5
    assert float(x) == 3.0
    a = rand(np.random.default_rng(2), (2, 3), f)
    res = getattr(xp.fft, name)(xp.asarray(a, device=device), axes=())
    assert_result(res, getattr(np.fft, name)(a, axes=()), dtype=f, rtol=0, atol=0)


def test_fft_argument_errors(device):
    """s and axes are sequences (not NumPy's bare int); irfftn's default last axis of 2 (m - 1)
    points needs m >= 2, as irfft's; fftfreq's spacing d is not 0."""
    c = supported(device, "complex floating")[0]
    x = xp.zeros((3, 4), dtype=c, device=device)
    for kw, arg in ((dict(axes=0), "axes"), (dict(s=4), "s"), (dict(s=4, axes=(0,)), "s")):
        with pytest.raises(TypeError, match=rf"ruda\.fft\.fftn: {arg} must be a sequence of integers; got int"):
            xp.fft.fftn(x, **kw)
    assert xp.fft.fftn(x, s=[2], axes=range(1)).shape == (2, 4)      # any sequence
    assert xp.fft.fftn(x, axes=()).shape == (3, 4)                    # no axes: a copy
    one = xp.zeros((3, 1), dtype=c, device=device)
    with pytest.raises(ValueError, match=r"ruda\.fft\.irfftn: axis 1 needs at least 2 points; got shape \(3, 1\)"):
        xp.fft.irfftn(one)
    with pytest.raises(ValueError, match=r"ruda\.fft\.irfftn: axis 0 needs at least 2 points; got shape \(1, 3\)"):
        xp.fft.irfftn(xp.zeros((1, 3), dtype=c, device=device), axes=(1, 0))
    with pytest.raises(ValueError, match=r"ruda\.fft\.irfft: axis 1 needs at least 2 points; got shape \(3, 1\)"):
        xp.fft.irfft(one)
    assert xp.fft.irfftn(one, s=(3, 2)).shape == (3, 2)
    for name in ("fftfreq", "rfftfreq"):
        with pytest.raises(ValueError, match=rf"ruda\.fft\.{name}: d \(the sample spacing\) must not be 0"):
            getattr(xp.fft, name)(4, d=0, device=device)


@pytest.mark.parametrize("name", ["fft", "ifft", "hfft", "irfft", "fftn", "ifftn", "irfftn"])
def test_fft_real_input(device, name):
    """A real floating x where the transform takes complex, as NumPy users call np.fft.fft(signal):
    taken as complex of its precision."""
    kind, how = {**ONE_D, **N_D}[name]
    for dt in supported(device, "real floating"):
        a = rand(np.random.default_rng(), (3, 6), dt, -1, 1)
        res = getattr(xp.fft, name)(xp.asarray(a, device=device))
        exp = getattr(np.fft, name)(host64(a))
        _check(res, exp, _out_dtype(COMPLEX_OF[np.dtype(dt)], how), exp.size)


def test_fft_errors(device):
    f = supported(device, "real floating")[0]
    x = xp.asarray(rand(np.random.default_rng(1), (4,), f), device=device)
    i = xp.astype(x, supported(device, "signed integer")[0])
    with pytest.raises(TypeError, match=r"ruda\.fft\.fft: x must have a complex or real floating-point "
                                        r"dtype; got int"):
        xp.fft.fft(i)
    c = xp.astype(x, COMPLEX_OF[np.dtype(f)])
    with pytest.raises(TypeError, match=r"ruda\.fft\.rfft: x must have a real floating-point dtype; got complex"):
        xp.fft.rfft(c)
    with pytest.raises(ValueError, match=r"ruda\.fft\.ifft: norm must be one of"):
        xp.fft.ifft(c, norm="unitary")
    with pytest.raises(ValueError, match=r"ruda\.fft\.fft: n must be positive; got 0"):
        xp.fft.fft(c, n=0)
    with pytest.raises(ValueError, match=r"ruda\.fft\.fftn: s \(2,\) and axes \(0, 1\) differ in length"):
        xp.fft.fftn(xp.reshape(c, (2, 2)), s=(2,), axes=(0, 1))
    with pytest.raises(TypeError, match=r"ruda\.fft\.fftfreq: dtype must be a real floating dtype"):
        xp.fft.fftfreq(4, dtype=supported(device, "signed integer")[0], device=device)
    with pytest.raises(TypeError, match=r"ruda\.fft\.fft: n must be an integer; got float"):
        xp.fft.fft(c, n=4.0)
    empty = xp.zeros((0, 3), dtype=c.dtype, device=device)
    with pytest.raises(ValueError, match=r"ruda\.fft\.fft: axis 0 has no points to transform"):
        xp.fft.fft(empty, axis=0)
    with pytest.raises(ValueError, match=r"ruda\.fft\.rfft: axis 0 has no points to transform"):
        xp.fft.rfft(xp.zeros((0,), dtype=f, device=device))
    with pytest.raises(ValueError, match=r"ruda\.fft\.fftn: axis 0 has no points to transform"):
        xp.fft.fftn(empty)
    assert xp.fft.fft(empty).shape == (0, 3)                  # empty along another axis: fine
    assert xp.fft.fftn(empty, s=(2,), axes=(0,)).shape == (2, 3)
    # rfftn/irfftn halve their last axis, so they need one (NumPy leaked an IndexError)
    for name, a in (("rfftn", xp.reshape(x, (2, 2))), ("irfftn", xp.reshape(c, (2, 2)))):
        for kw, got in ((dict(axes=()), "axes"), (dict(s=()), "s"), (dict(s=(), axes=()), "axes")):
            with pytest.raises(ValueError, match=rf"ruda\.fft\.{name}: axes must name at least one axis.*"
                                                 rf"got {got}=\(\)"):
                getattr(xp.fft, name)(a, **kw)
