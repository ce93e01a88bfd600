"""ruda.nn pooling and interpolate vs torch.nn.functional (CPU) on every device: float64 where the
device has it, else float32; bfloat16 and float16 on cpu (1e-2 and 2e-3: about one rounding of
the float32 result, torch rounding its own way); fresh random inputs per test."""
import zlib

import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from conftest import to_numpy
from test_nn_functional import close, fdt, put

torch = pytest.importorskip("torch")
F = torch.nn.functional

# (n, shape, kwargs): every option, odd sizes so that ceil_mode adds a partial window
MAX_CASES = [
    (1, (2, 3, 11), dict(kernel_size=3)),
    (1, (3, 10), dict(kernel_size=4, stride=3, padding=2, dilation=2, ceil_mode=True)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (1, 2, 10, 9), dict(kernel_size=(2, 3), stride=(3, 1), padding=(1, 0), dilation=(2, 1),
                            ceil_mode=True)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=2, padding=(1, 1, 0),
                              ceil_mode=True)),
]
AVG_CASES = [
    (1, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1)),
    (2, (2, 3, 9, 8), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True)),
    (2, (3, 7, 7), dict(kernel_size=2)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=3, stride=(2, 2, 3), padding=1, ceil_mode=True)),
]


def _ids(cases):
    return [f"{n}d-{i}" for i, (n, _, _) in enumerate(cases)]


@pytest.mark.parametrize("n, shape, kw", MAX_CASES, ids=_ids(MAX_CASES))
def test_max_pool(device, n, shape, kw):
    dt, tol = fdt(device)
    a = np.random.default_rng(zlib.crc32(repr(kw).encode())).standard_normal(shape)
    f, tf = getattr(nn, f"max_pool{n}d"), getattr(F, f"max_pool{n}d")
    x = put(a, device, dt)
    close(f(x, **kw), tf(torch.from_numpy(a), **kw).numpy(), dt, tol)
    vals, idx = f(x, return_indices=True, **kw)
    wv, wi = tf(torch.from_numpy(a), return_indices=True, **kw)
    close(vals, wv.numpy(), dt, tol)
    assert idx.dtype == xp.__array_namespace_info__().default_dtypes(device=device)["indexing"]
    np.testing.assert_array_equal(to_numpy(idx), wi.numpy())


@pytest.mark.parametrize("n, shape, kw", AVG_CASES, ids=_ids(AVG_CASES))
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool(device, n, shape, kw, count_include_pad):
    dt, tol = fdt(device)
    a = np.random.default_rng(zlib.crc32(repr(kw).encode()) + 1).standard_normal(shape)
    f, tf = getattr(nn, f"avg_pool{n}d"), getattr(F, f"avg_pool{n}d")
    want = tf(torch.from_numpy(a), count_include_pad=count_include_pad, **kw).numpy()
    close(f(put(a, device, dt), count_include_pad=count_include_pad, **kw), want, dt, tol)
    if n > 1:
        want = tf(torch.from_numpy(a), divisor_override=5, **kw).numpy()
        close(f(put(a, device, dt), divisor_override=5, **kw), want, dt, tol)


def _random_pool(rng, n):
    """Random pooling arguments over small inputs: (shape, k, s, p, d, ceil_mode)."""
    L = tuple(int(v) for v in rng.integers(1, 6, n))
    k = tuple(int(v) for v in rng.integers(1, 5, n))
    return ((1, 2) + L, k, tuple(int(v) for v in rng.integers(1, 4, n)),
            tuple(int(rng.integers(0, ki // 2 + 1)) for ki in k),
            tuple(int(v) for v in rng.integers(1, 4, n)), bool(rng.integers(0, 2)))


def _same_outcome(ours, theirs):
    """Both raise (ours a ValueError) or neither; (ours, theirs) results or None."""
    try:
        want = theirs()
    except RuntimeError:
        with pytest.raises(ValueError, match=r"ruda.nn.(max|avg)_pool\dd: kernel_size"):
            ours()
        return None
    return ours(), want


def test_max_pool_indices_when_nothing_beats_minus_inf(device):
    """Windows of only -inf (or only padding, which dilation allows) keep torch's first index:
    the window's first position past the left padding, even beyond x on the right."""
    dt, tol = fdt(device)
    a = np.full((1, 1, 3, 4), -np.inf)
    vals, idx = nn.max_pool2d(put(a, device, dt), 3, 2, 1, 1, False, True)
    np.testing.assert_array_equal(to_numpy(idx), [[[[0, 1], [4, 5]]]])
    rng = np.random.default_rng(71)
    a = rng.standard_normal((1, 2, 1, 7, 2))
    wv, wi = F.max_pool3d(torch.from_numpy(a), (2, 3, 3), (3, 1, 3), (1, 0, 1), (2, 1, 1), True,
                          True)
    vals, idx = nn.max_pool3d(put(a, device, dt), (2, 3, 3), (3, 1, 3), (1, 0, 1), (2, 1, 1),
                              True, True)
    close(vals, wv.numpy(), dt, tol)
    np.testing.assert_array_equal(to_numpy(idx), wi.numpy())
    checked = 0
    for case in range(40):
        n = 1 + case % 3
        shape, k, s, p, d, ceil = _random_pool(rng, n)
        a = rng.standard_normal(shape)
        a[rng.random(shape) < (0.5, 1.0)[case % 2]] = -np.inf     # some, or all, -inf
        got = _same_outcome(
            lambda: getattr(nn, f"max_pool{n}d")(put(a, device, dt), k, s, p, d, ceil, True),
            lambda: getattr(F, f"max_pool{n}d")(torch.from_numpy(a), k, s, p, d, ceil, True))
        if got is None:
            continue
        (vals, idx), (wv, wi) = got
        close(vals, wv.numpy(), dt, tol)
        np.testing.assert_array_equal(to_numpy(idx), wi.numpy(), err_msg=str((shape, k, s, p, d,
                                                                             ceil)))
        checked += 1
    assert checked >= 15


def test_pool_ceil_mode_kernel_beyond_padded_input(device):
    """In ceil mode torch takes a kernel up to stride - 1 beyond the padded input (one window,
    overhanging it; the average divides by its part within the padded input or x)."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(72)
    a = rng.standard_normal((1, 1, 1))
    close(nn.max_pool1d(put(a, device, dt), 2, 3, 0, 1, True),
          F.max_pool1d(torch.from_numpy(a), 2, 3, 0, 1, True).numpy(), dt, tol)
    a = rng.standard_normal((1, 2, 1, 5))
    for cip in (True, False):
        got = nn.avg_pool2d(put(a, device, dt), (2, 3), (2, 1), 0, True, cip)
        assert got.shape == (1, 2, 1, 3)
        close(got, F.avg_pool2d(torch.from_numpy(a), (2, 3), (2, 1), 0, True, cip).numpy(),
              dt, tol)
    checked = 0
    for case in range(45):
        n = 1 + case % 3
        shape, k, s, p, d, _ = _random_pool(rng, n)
        a = rng.standard_normal(shape)
        if n == 1:                                     # max pooling takes a dilation
            args, name = (k, s, p, d, True), "max_pool1d"
        else:
            args, name = (k, s, p, True, bool(case % 2)), f"avg_pool{n}d"
        got = _same_outcome(lambda: getattr(nn, name)(put(a, device, dt), *args),
                            lambda: getattr(F, name)(torch.from_numpy(a), *args))
        if got is not None:
            close(got[0], got[1].numpy(), dt, tol)
            checked += 1
    assert checked >= 10


@pytest.mark.parametrize("n, shape, sizes", [
    (1, (2, 3, 10), [4, 3, 7, 10, 1, 13]),
    (2, (2, 3, 9, 7), [(3, 7), (4, 5), (5, 3), 1, (None, 2), (11, 9)]),
    (3, (1, 2, 5, 7, 6), [(2, 3, 4), (5, 1, None)]),
])
def test_adaptive_pool(device, n, shape, sizes):
    """Divisible and non-divisible sizes (overlapping windows), 1, None and larger than x."""
    dt, tol = fdt(device)
    a = np.random.default_rng(n + 30).standard_normal(shape)
    t, x = torch.from_numpy(a), put(a, device, dt)
    idt = xp.__array_namespace_info__().default_dtypes(device=device)["indexing"]
    for o in sizes:
        close(getattr(nn, f"adaptive_avg_pool{n}d")(x, o),
              getattr(F, f"adaptive_avg_pool{n}d")(t, o).numpy(), dt, tol * 10)
        vals, idx = getattr(nn, f"adaptive_max_pool{n}d")(x, o, return_indices=True)
        wv, wi = getattr(F, f"adaptive_max_pool{n}d")(t, o, return_indices=True)
        close(vals, wv.numpy(), dt, tol)
        assert idx.dtype == idt
        np.testing.assert_array_equal(to_numpy(idx), wi.numpy())
        close(getattr(nn, f"adaptive_max_pool{n}d")(x, o), wv.numpy(), dt, tol)


@pytest.mark.parametrize("n, shape, o", [(1, (2, 3, 7), 2), (1, (1, 2, 6), 1), (2, (2, 2, 5, 7), (2, 3)),
                                         (2, (1, 3, 4, 4), 1)])
def test_adaptive_max_pool_indices_of_nans(device, n, shape, o):
    """A window with several NaNs: its value NaN and its index the last NaN's, as torch (whose
    loop keeps a later NaN); windows that overlap (o not dividing L) included."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(n + 40)
    a = np.round(rng.standard_normal(shape))           # ties: the first maximum
    a[rng.random(shape) < 0.35] = np.nan
    wv, wi = getattr(F, f"adaptive_max_pool{n}d")(torch.from_numpy(a), o, return_indices=True)
    vals, idx = getattr(nn, f"adaptive_max_pool{n}d")(put(a, device, dt), o, return_indices=True)
    close(vals, wv.numpy(), dt, tol)
    np.testing.assert_array_equal(to_numpy(idx), wi.numpy())


INTERP = [
    (1, ["nearest", "nearest-exact", "linear", "area"]),
    (2, ["nearest", "nearest-exact", "bilinear", "bicubic", "area"]),
    (3, ["nearest", "trilinear"]),
]


@pytest.mark.parametrize("n, modes", INTERP, ids=[f"{n}d" for n, _ in INTERP])
def test_interpolate(device, n, modes):
    """Every mode, with and without align_corners, up and down, by size and by scale_factor
    (torch's 1 / scale_factor source scale, and recompute_scale_factor)."""
    dt, tol = fdt(device)
    shape = (2, 3, 7, 6, 5)[:n + 2]
    a = np.random.default_rng(40 + n).standard_normal(shape)
    t, x = torch.from_numpy(a), put(a, device, dt)
    resizes = [dict(size=(11, 4, 8)[:n]), dict(scale_factor=2.1), dict(scale_factor=0.6),
               dict(scale_factor=(1.3, 1.0, 2.0)[:n], recompute_scale_factor=True),
               dict(size=(1, 3, 5)[:n])]
    for mode in modes:
        aligns = [False, True] if mode in ("linear", "bilinear", "bicubic", "trilinear") \
            else [None]
        for kw in resizes:
            for al in aligns:
                want = F.interpolate(t, mode=mode, align_corners=al, **kw).numpy()
                got = nn.interpolate(x, mode=mode, align_corners=al, **kw)
                assert got.shape == want.shape, (mode, kw, al)
                close(got, want, dt, tol * 10)


def test_identity_cases_return_new_arrays(device):
    """Pooling with 1-element windows and resizing to x's own size still return a new array,
    as torch: writing into the result leaves x unchanged (batched and unbatched x, the 3-d and
    integer resizes that the host kernel leaves to the composed path)."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(62)
    a2, a3 = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((1, 2, 3, 4, 2))
    img = rng.integers(0, 256, (1, 3, 4, 5)).astype(np.uint8)
    cases = [("max_pool2d", a2, dict(kernel_size=1)), ("max_pool2d", a2[0], dict(kernel_size=1)),
             ("max_pool2d", a2, dict(kernel_size=(1, 1), return_indices=True)),
             ("max_pool3d", a3, dict(kernel_size=1, stride=1)),
             ("adaptive_avg_pool2d", a2, dict(output_size=(4, 5))),
             ("adaptive_avg_pool2d", a2[0], dict(output_size=(None, 5))),
             ("adaptive_max_pool2d", a2, dict(output_size=(4, 5))),
             ("interpolate", a2, dict(size=(4, 5))),
             ("interpolate", a2, dict(scale_factor=1.0, mode="bilinear")),
             ("interpolate", a2, dict(size=(4, 5), mode="area")),
             ("interpolate", a3, dict(scale_factor=1.0, mode="trilinear")),
             ("interpolate", img, dict(size=(4, 5)))]
    for name, a, kw in cases:
        d = xp.uint8 if a.dtype == np.uint8 else dt
        a = a.astype(np.dtype(d))
        x = xp.asarray(a.copy(), device=device)        # not sharing a's memory on cpu
        got, want = getattr(nn, name)(x, **kw), getattr(F, name)(torch.from_numpy(a), **kw)
        if kw.get("return_indices"):
            got, want = got[0], want[0]
        close(got, want.numpy(), d, tol)
        got[...] = 7
        close(x, a, d, 0)


@pytest.mark.parametrize("name, tol", [("bfloat16", 1e-2), ("float16", 2e-3)])
def test_half_cpu(name, tol):
    """bfloat16 and float16 on cpu (float32 inside, rounded once) vs torch in the same dtype on
    the same rounded inputs, within ``tol`` relative (about one rounding of each result)."""
    dt = getattr(xp, name, None)
    if dt is None:
        pytest.skip(f"ruda.{name} is not available")
    a = np.random.default_rng(50).standard_normal((2, 3, 9, 8))
    x = xp.astype(xp.asarray(a), dt)
    tb = torch.from_numpy(np.asarray(xp.astype(x, xp.float64))).to(getattr(torch, name))
    checks = [
        (nn.max_pool2d(x, 3, 2, 1, ceil_mode=True), F.max_pool2d(tb, 3, 2, 1, ceil_mode=True)),
        (nn.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
         F.avg_pool2d(tb, 3, 2, 1, count_include_pad=False)),
        (nn.adaptive_avg_pool2d(x, (4, 3)), F.adaptive_avg_pool2d(tb, (4, 3))),
        (nn.adaptive_max_pool2d(x, (4, 3)), F.adaptive_max_pool2d(tb, (4, 3))),
        (nn.interpolate(x, scale_factor=1.7, mode="bilinear"),
         F.interpolate(tb, scale_factor=1.7, mode="bilinear")),
        (nn.interpolate(x, size=(5, 11), mode="bicubic", align_corners=True),
         F.interpolate(tb, size=(5, 11), mode="bicubic", align_corners=True)),
        (nn.interpolate(x, scale_factor=2.0, mode="nearest"),
         F.interpolate(tb, scale_factor=2.0, mode="nearest")),
    ]
    for got, want in checks:
        assert got.dtype == dt
        np.testing.assert_allclose(np.asarray(xp.astype(got, xp.float64)),
                                   want.to(torch.float64).numpy(), rtol=tol, atol=tol)


def test_errors(device):
    x = xp.ones((2, 3, 6, 6), device=device, dtype=xp.float32)
    cases = [
        (lambda: nn.max_pool2d(x, 7), ValueError,
         r"ruda.nn.max_pool2d: kernel_size: expected a dilated kernel of at most the padded "
         r"input's 6 on spatial axis 0, got 7 \(kernel_size 7, dilation 1\)"),
        (lambda: nn.max_pool2d(x, 3, dilation=3), ValueError,
         r"got 7 \(kernel_size 3, dilation 3\)"),
        (lambda: nn.max_pool1d(x[0], 5, 3, ceil_mode=True, dilation=2), ValueError,
         r"max_pool1d: kernel_size: expected a dilated kernel of at most the padded input's "
         r"6 \+ stride - 1 = 8 on spatial axis 0, got 9 \(kernel_size 5, dilation 2\)"),
        (lambda: nn.avg_pool3d(x, (2, 3, 7), padding=1), ValueError,
         r"avg_pool3d: kernel_size: expected a kernel no larger than x's spatial sizes "
         r"\(3, 6, 6\), got \(2, 3, 7\)"),
        (lambda: nn.avg_pool2d(x, 2, stride=0), ValueError,
         r"ruda.nn.avg_pool2d: stride: expected positive values, got \(0, 0\)"),
        (lambda: nn.max_pool2d(x, 2, stride=-1), ValueError, r"max_pool2d: stride"),
        (lambda: nn.max_pool2d(x, 3, padding=2), ValueError,
         r"ruda.nn.max_pool2d: padding: expected at most \(1, 1\) \(half the kernel size "
         r"\(3, 3\)\), got \(2, 2\)"),
        (lambda: nn.max_pool2d(x, 2, padding=2), ValueError,
         r"ruda.nn.max_pool2d: padding: expected at most \(1, 1\) \(half the kernel size "
         r"\(2, 2\)\), got \(2, 2\)"),
        (lambda: nn.avg_pool2d(x, (2, 5), padding=(1, 3)), ValueError,
         r"ruda.nn.avg_pool2d: padding: expected at most \(1, 2\) \(half the kernel size "
         r"\(2, 5\)\), got \(1, 3\)"),
        (lambda: nn.max_pool1d(x, 2), ValueError,
         r"ruda.nn.max_pool1d: x: expected 2 or 3 dimensions"),
        (lambda: nn.avg_pool3d(x[0], 2), ValueError, r"avg_pool3d: x: expected 4 or 5 dimensions"),
        (lambda: nn.max_pool2d(x, (2, 2, 2)), TypeError,
         r"max_pool2d: kernel_size: expected an int or a tuple of 2 ints"),
        (lambda: nn.max_pool2d(x, 2.0), TypeError, r"max_pool2d: kernel_size"),
        (lambda: nn.avg_pool2d(xp.ones((1, 1, 4, 4), dtype=xp.int32, device=device), 2),
         TypeError, r"ruda.nn.avg_pool2d: x: expected a real floating dtype, got int32"),
        (lambda: nn.avg_pool2d(x, 2, divisor_override=0), ValueError, r"divisor_override"),
        (lambda: nn.adaptive_avg_pool2d(x, (0, 2)), ValueError,
         r"adaptive_avg_pool2d: output_size: expected 2 positive ints"),
        (lambda: nn.adaptive_max_pool2d(x[0, 0], 2), ValueError,
         r"adaptive_max_pool2d: x: expected 3 or 4 dimensions"),
        (lambda: nn.interpolate(x, size=4, mode="linear"), ValueError,
         r"ruda.nn.interpolate: x: expected 3 dimensions for mode 'linear'"),
        (lambda: nn.interpolate(x, size=4, mode="nearest", align_corners=True), ValueError,
         r"interpolate: align_corners: expected None for mode 'nearest'"),
        (lambda: nn.interpolate(x, size=4, scale_factor=2), ValueError,
         r"interpolate: size: expected exactly one of size and scale_factor"),
        (lambda: nn.interpolate(x, scale_factor=0.1), ValueError,
         r"interpolate: scale_factor: expected factors giving a non-empty output"),
        (lambda: nn.interpolate(x, size=4, mode="cubic"), ValueError, r"interpolate: mode"),
        (lambda: nn.interpolate(x, size=(4, 4, 4)), ValueError,
         r"interpolate: size: expected a positive int or 2 positive ints"),
    ]
    for f, cls, msg in cases:
        with pytest.raises(cls, match=msg):
            f()
    with pytest.raises(TypeError, match=r"ruda.nn.interpolate: x: expected a real floating dtype"):
        nn.interpolate(xp.ones((1, 1, 4, 4), dtype=xp.int32, device=device), size=3,
                       mode="bilinear")
    # nearest resizing takes integers (a gather), as torch does for uint8 images
    img = np.random.default_rng(61).integers(0, 256, (1, 3, 5, 7)).astype(np.uint8)
    got = nn.interpolate(xp.asarray(img, device=device), scale_factor=1.6)
    assert got.dtype == xp.uint8
    np.testing.assert_array_equal(to_numpy(got),
                                  F.interpolate(torch.from_numpy(img), scale_factor=1.6).numpy())
    # max pooling takes integers (a comparison), padding with the dtype's minimum
    xi = xp.asarray(np.arange(-20, 16, dtype=np.int32).reshape(1, 1, 6, 6), device=device)
    got = nn.max_pool2d(xi, 3, 2, 1)
    want = F.max_pool2d(torch.arange(-20, 16, dtype=torch.int32).reshape(1, 1, 6, 6), 3, 2, 1)
    assert got.dtype == xp.int32
    np.testing.assert_array_equal(to_numpy(got), want.numpy())


def test_host_interpolate_kernel_matches_composed(monkeypatch):
    """The cpu interpolate kernel (Numba; 1 and 2 spatial axes) against the composed namespace
    path: the same products summed in the same order, so equal bit for bit, float32 and float64."""
    from ruda.backends.host import _nn_pool
    if _nn_pool._interp2d is None:
        pytest.skip("the host interpolate kernel needs Numba")
    rng = np.random.default_rng(60)
    cases = [((2, 3, 9), "linear", dict(scale_factor=2.5)), ((2, 3, 9), "nearest", dict(size=4)),
             ((2, 3, 7, 6), "bilinear", dict(size=(13, 4), align_corners=True)),
             ((2, 3, 7, 6), "bilinear", dict(size=(7, 11))),
             ((1, 2, 7, 6), "bicubic", dict(scale_factor=(1.7, 0.6))),
             ((1, 2, 7, 6), "nearest-exact", dict(scale_factor=3.0))]
    for dt in (np.float32, np.float64):
        for shape, mode, kw in cases:
            x = xp.asarray(rng.standard_normal(shape).astype(dt))
            got = nn.interpolate(x, mode=mode, **kw)
            with monkeypatch.context() as m:
                m.setattr(_nn_pool, "_interp2d", None)
                want = nn.interpolate(x, mode=mode, **kw)
            assert got.dtype == want.dtype == x.dtype
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
