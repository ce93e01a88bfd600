"""Native FFTs of the wgpu backend (ruda/backends/wgpu/_fft.py) against NumPy's, in complex128.

Inputs are fresh random arrays; lengths cover the Stockham path (powers of two, smooth mixed
radix) and Bluestein (lengths with a prime factor > 13, and smooth lengths with Bluestein forced);
each norm; cropping and zero padding; every axis of 2-D/3-D arrays; strided views.  Errors are
measured relative to the norm of NumPy's result.  Skips when no wgpu device is usable.
"""
import numpy as np
import pytest

import ruda as xp
from ruda._devices import unavailable

WGPU_REASON = unavailable("wgpu")
pytestmark = pytest.mark.skipif(WGPU_REASON is not None, reason=f"no wgpu device: {WGPU_REASON}")

NORMS = ("backward", "ortho", "forward")
LENGTHS = (1, 2, 5, 8, 12, 17, 64)


def _backend():
    return xp.device("wgpu").backend


def _cdtypes():
    out = [np.complex64]
    if _backend().has_f64:
        out.append(np.complex128)
    return out


def _tol(dt):
    return 2e-5 if np.dtype(dt) in (np.complex64, np.float32) else 1e-11


def _close(got, ref, dt):
    g = np.asarray(got.to_device("cpu"))
    assert g.shape == ref.shape, (g.shape, ref.shape)
    err = np.linalg.norm((g.astype(np.complex128) - ref).ravel())
    scale = max(np.linalg.norm(ref.ravel()), 1e-300)
    assert err <= _tol(dt) * scale, f"relative error {err / scale:.3e} (dtype {dt})"
    return g


def _crandn(rng, shape, dt):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


@pytest.fixture
def rng():
    seed = np.random.SeedSequence().entropy      # fresh inputs each run; shown when a test fails
    print(f"rng seed {seed}")
    return np.random.default_rng(seed)


@pytest.fixture(params=[np.complex64, np.complex128], ids=["c64", "c128"])
def cdt(request):
    if request.param not in _cdtypes():
        pytest.skip("complex128 needs shader-f64")
    return request.param


# ----------------------------------------------------------------- fft / ifft
@pytest.mark.parametrize("n", LENGTHS)
def test_fft_ifft_every_length_axis_and_norm(n, cdt, rng):
    a = _crandn(rng, (3, n, 2), cdt)
    x = xp.asarray(a, device="wgpu")
    a128 = a.astype(np.complex128)
    axis = 1
    for norm in NORMS:
        g = _close(xp.fft.fft(x, axis=axis, norm=norm), np.fft.fft(a128, axis=axis, norm=norm), cdt)
        assert g.dtype == cdt
        _close(xp.fft.ifft(x, axis=axis, norm=norm), np.fft.ifft(a128, axis=axis, norm=norm), cdt)
    # the other axes (one norm each) and a 2-D array along its first axis
    _close(xp.fft.fft(x, axis=0), np.fft.fft(a128, axis=0), cdt)
    _close(xp.fft.ifft(x, axis=-1, norm="ortho"), np.fft.ifft(a128, axis=-1, norm="ortho"), cdt)
    b = _crandn(rng, (n, 4), cdt)
    _close(xp.fft.fft(xp.asarray(b, device="wgpu"), axis=0), np.fft.fft(b.astype(np.complex128), axis=0), cdt)


@pytest.mark.parametrize("m,n", [(12, 8), (12, 17), (8, 12), (64, 5), (5, 64), (3, 1), (1, 7)])
def test_fft_crop_and_zero_pad(m, n, cdt, rng):
    a = _crandn(rng, (2, m), cdt)
    x = xp.asarray(a, device="wgpu")
    a128 = a.astype(np.complex128)
    _close(xp.fft.fft(x, n=n), np.fft.fft(a128, n=n), cdt)
    _close(xp.fft.ifft(x, n=n, norm="forward"), np.fft.ifft(a128, n=n, norm="forward"), cdt)


def test_large_lengths(cdt, rng):
    for n in (1024, 1000, 143, 331):       # 16*16*4; 10*10*10; 13*11 (prime radices); prime: Bluestein
        a = _crandn(rng, (3, n), cdt)
        x = xp.asarray(a, device="wgpu")
        _close(xp.fft.fft(x), np.fft.fft(a.astype(np.complex128)), cdt)


@pytest.mark.parametrize("n", [7, 11, 13, 169, 143])
def test_prime_radix_constants_to_a_few_ulp(n, rng):
    """A prime radix's DFT constants exp(2 pi i q p / r) from the angle of q p mod r: complex128
    within a few ulp of NumPy, as the smooth lengths are (cos/sin of q p up to (r - 1)^2 lost
    up to 50 ulp)."""
    if not _backend().has_f64:
        pytest.skip("complex128 needs shader-f64")
    a = _crandn(rng, (16, n), np.complex128)
    want = np.fft.fft(a)
    got = np.asarray(xp.fft.fft(xp.asarray(a, device="wgpu")).to_device("cpu"))
    err = np.linalg.norm(got - want) / np.linalg.norm(want) / np.finfo(np.float64).eps
    assert err < 4.0, err        # (about 1-3; NumPy itself is within about 1 of the exact DFT)


def test_strided_views(cdt, rng):
    a = _crandn(rng, (6, 10, 8), cdt)
    x = xp.asarray(a, device="wgpu")
    a128 = a.astype(np.complex128)
    v = xp.permute_dims(x, (2, 0, 1))[:, ::2, 1:]           # non-contiguous, offset, transposed
    _close(xp.fft.fft(v, axis=1), np.fft.fft(np.transpose(a128, (2, 0, 1))[:, ::2, 1:], axis=1), cdt)
    w = x[::-1, 3, :]                                          # negative stride
    _close(xp.fft.ifft(w, axis=0, n=7), np.fft.ifft(a128[::-1, 3, :], axis=0, n=7), cdt)


def test_bluestein_forced_on_smooth_lengths(cdt, rng, monkeypatch):
    be = _backend()
    monkeypatch.setattr(type(be), "fft_max_prime", 2)          # only radix 2: 12, 5 go through Bluestein
    a = _crandn(rng, (2, 12), cdt)
    x = xp.asarray(a, device="wgpu")
    a128 = a.astype(np.complex128)
    _close(xp.fft.fft(x, norm="ortho"), np.fft.fft(a128, norm="ortho"), cdt)
    _close(xp.fft.ifft(x, n=5), np.fft.ifft(a128, n=5), cdt)
    r = rng.standard_normal((3, 10)).astype(np.float32 if cdt == np.complex64 else np.float64)
    _close(xp.fft.irfft(xp.asarray((r[:, :6] + 0j).astype(cdt), device="wgpu"), n=9),
           np.fft.irfft(r[:, :6].astype(np.complex128), n=9), cdt)


def test_adapter_without_f64_or_i64(rng, monkeypatch):
    """The table kernels of an adapter without shader-f64 / shader-int64: f32 twiddle angles,
    i32 chirp indices, and past n = 46340 the host-computed chirp constant table."""
    be = _backend()
    monkeypatch.setattr(be, "has_f64", False)
    monkeypatch.setattr(be, "has_i64", False)
    monkeypatch.setitem(be.__dict__, "_fft_tables", {})
    for shape in ((3, 17), (3, 96), (1, 46349)):               # i32 chirp; smooth; prime > 46340
        a = _crandn(rng, shape, np.complex64)
        _close(xp.fft.fft(xp.asarray(a, device="wgpu")), np.fft.fft(a.astype(np.complex128)), np.complex64)


# ----------------------------------------------------------------- real / Hermitian
@pytest.mark.parametrize("n", LENGTHS)
def test_rfft_irfft(n, cdt, rng):
    rdt = np.float32 if cdt == np.complex64 else np.float64
    r = rng.standard_normal((n, 3)).astype(rdt)
    xr = xp.asarray(r, device="wgpu")
    norm = NORMS[n % 3]
    g = _close(xp.fft.rfft(xr, axis=0, norm=norm), np.fft.rfft(r.astype(np.float64), axis=0, norm=norm), cdt)
    assert g.dtype == cdt
    h = _crandn(rng, (2, n // 2 + 1), cdt)
    xh = xp.asarray(h, device="wgpu")
    h128 = h.astype(np.complex128)
    g = _close(xp.fft.irfft(xh, n=n, norm=norm), np.fft.irfft(h128, n=n, norm=norm), cdt)
    assert g.dtype == rdt
    if n >= 2:   # default n = 2 (m - 1) needs m >= 2
        _close(xp.fft.irfft(xh, axis=-1), np.fft.irfft(h128, axis=-1), cdt)
    _close(xp.fft.hfft(xh, n=n, norm=norm), np.fft.hfft(h128, n=n, norm=norm), cdt)
    _close(xp.fft.ihfft(xr, axis=0, norm=norm), np.fft.ihfft(r.astype(np.float64), axis=0, norm=norm), cdt)


def test_real_crop_pad(cdt, rng):
    rdt = np.float32 if cdt == np.complex64 else np.float64
    r = rng.standard_normal((4, 9)).astype(rdt)
    xr = xp.asarray(r, device="wgpu")
    r64 = r.astype(np.float64)
    for n in (6, 9, 17, 20):
        _close(xp.fft.rfft(xr, n=n), np.fft.rfft(r64, n=n), cdt)
        _close(xp.fft.ihfft(xr, n=n, norm="ortho"), np.fft.ihfft(r64, n=n, norm="ortho"), cdt)
    h = _crandn(rng, (9, 3), cdt)
    xh = xp.asarray(h, device="wgpu")
    h128 = h.astype(np.complex128)
    for n in (4, 7, 16, 21, 40):          # crop and pad the Hermitian input to n//2+1
        _close(xp.fft.irfft(xh, n=n, axis=0), np.fft.irfft(h128, n=n, axis=0), cdt)
        _close(xp.fft.hfft(xh, n=n, axis=0, norm="forward"), np.fft.hfft(h128, n=n, axis=0, norm="forward"), cdt)


# ----------------------------------------------------------------- n-d
def test_fftn_ifftn(cdt, rng):
    a = _crandn(rng, (4, 6, 5), cdt)
    x = xp.asarray(a, device="wgpu")
    a128 = a.astype(np.complex128)
    _close(xp.fft.fftn(x), np.fft.fftn(a128), cdt)
    _close(xp.fft.ifftn(x, norm="ortho"), np.fft.ifftn(a128, norm="ortho"), cdt)
    _close(xp.fft.fftn(x, s=(8, 3), axes=(2, 0), norm="forward"),
           np.fft.fftn(a128, s=(8, 3), axes=(2, 0), norm="forward"), cdt)
    _close(xp.fft.ifftn(x, s=(-1, 17), axes=(0, 1)), np.fft.ifftn(a128, s=(4, 17), axes=(0, 1)), cdt)
    b = _crandn(rng, (3, 2, 5, 4), cdt)                       # 4-D: up to 3 batch dims per 1-d pass
    b128 = b.astype(np.complex128)
    _close(xp.fft.fftn(xp.asarray(b, device="wgpu"), axes=(0, 2)), np.fft.fftn(b128, axes=(0, 2)), cdt)


def test_rfftn_irfftn(cdt, rng):
    rdt = np.float32 if cdt == np.complex64 else np.float64
    r = rng.standard_normal((5, 4, 6)).astype(rdt)
    xr = xp.asarray(r, device="wgpu")
    r64 = r.astype(np.float64)
    _close(xp.fft.rfftn(xr), np.fft.rfftn(r64), cdt)
    _close(xp.fft.rfftn(xr, s=(3, 8), axes=(2, 0), norm="ortho"),
           np.fft.rfftn(r64, s=(3, 8), axes=(2, 0), norm="ortho"), cdt)
    h = _crandn(rng, (5, 4, 4), cdt)
    xh = xp.asarray(h, device="wgpu")
    h128 = h.astype(np.complex128)
    g = _close(xp.fft.irfftn(xh), np.fft.irfftn(h128), cdt)
    assert g.dtype == rdt
    _close(xp.fft.irfftn(xh, s=(6, 7), axes=(1, 0), norm="forward"),
           np.fft.irfftn(h128, s=(6, 7), axes=(1, 0), norm="forward"), cdt)


# ----------------------------------------------------------------- freq / shift
@pytest.mark.parametrize("n", [1, 2, 7, 8, 17])
def test_fftfreq_rfftfreq(n):
    for dt in ([xp.float32] + ([xp.float64] if _backend().has_f64 else [])):
        for d in (1.0, 0.25, 3.0):
            f = np.asarray(xp.fft.fftfreq(n, d=d, dtype=dt, device="wgpu").to_device("cpu"))
            assert f.dtype == dt
            np.testing.assert_allclose(f, np.fft.fftfreq(n, d=d).astype(dt), rtol=1e-6 if dt == xp.float32 else 1e-15)
            f = np.asarray(xp.fft.rfftfreq(n, d=d, dtype=dt, device="wgpu").to_device("cpu"))
            np.testing.assert_allclose(f, np.fft.rfftfreq(n, d=d).astype(dt), rtol=1e-6 if dt == xp.float32 else 1e-15)


def test_fftshift_ifftshift(rng):
    a = rng.standard_normal((5, 4, 3)).astype(np.float32)
    x = xp.asarray(a, device="wgpu")
    for axes in (None, (0,), (2, 1), (-1,)):
        np.testing.assert_array_equal(np.asarray(xp.fft.fftshift(x, axes=axes).to_device("cpu")),
                                      np.fft.fftshift(a, axes=axes))
        np.testing.assert_array_equal(np.asarray(xp.fft.ifftshift(x, axes=axes).to_device("cpu")),
                                      np.fft.ifftshift(a, axes=axes))


# ----------------------------------------------------------------- native, no round trip
def test_all_fft_ops_native_and_no_readback(rng):
    be = _backend()
    assert not [op for op in type(be).fallbacks if op.startswith("fft_")]
    x = xp.asarray(_crandn(rng, (3, 19), np.complex64), device="wgpu")
    be.synchronize()
    before = be.ctx.stats["readbacks"]
    y = xp.fft.irfft(xp.fft.fft(xp.fft.ifft(x, n=23), axis=0), n=30)     # Bluestein + smooth + Hermitian
    be.synchronize()
    assert be.ctx.stats["readbacks"] == before
    assert y.shape == (3, 30)


def test_empty_batch():
    x = xp.zeros((0, 8), dtype=xp.complex64, device="wgpu")
    assert xp.fft.fft(x).shape == (0, 8)
    assert xp.fft.rfft(xp.zeros((8, 0), dtype=xp.float32, device="wgpu"), axis=0).shape == (5, 0)
