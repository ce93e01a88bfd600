"""wgpu ``conv`` kernel (direct depthwise and implicit GEMM, float32) vs torch.nn.functional in
float64 on the same float32 inputs, through ruda.nn with a count of the kernel's launches; every
GEMM tile shape; the kernel against the composed path; what it declines."""
import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from ruda.nn._check import native, wrap
from ruda.runtime.kernels import conv_wgsl

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
F = torch.nn.functional


def _data(seed, xs, ws, bias):
    rng = np.random.default_rng(seed)
    f = np.float32
    return (rng.standard_normal(xs).astype(f), rng.standard_normal(ws).astype(f),
            rng.standard_normal(ws[0]).astype(f) if bias else None)


def _want(nd, x, w, b, kw, absolute=False):
    """torch's float64 result (``absolute``: of |x|, |w|, |b|, the scale of rounding errors)."""
    t = [None if a is None else torch.from_numpy(np.abs(a) if absolute else a).double()
         for a in (x, w, b)]
    return getattr(F, f"conv{nd}d")(*t, **kw).numpy()


def _check(got, nd, x, w, b, kw):
    want = _want(nd, x, w, b, kw)
    got = np.asarray(got.to_device("cpu"))
    assert got.dtype == np.float32 and got.shape == want.shape
    # float32: each product and each of the K + 1 additions rounds (K = C_in / groups * taps)
    k = w[0].size
    tol = (k + 3) * 2.0**-24 * _want(nd, x, w, b, kw, absolute=True)
    assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want))


@pytest.fixture
def launches(wgpu_device, monkeypatch):
    """Counts the conv kernel's calls that ran (did not decline)."""
    kern = wgpu_device.backend.nn.conv
    ran = []

    def counted(*a):
        r = kern(*a)
        ran.append(r is not NotImplemented)
        return r
    monkeypatch.setattr(wgpu_device.backend.nn, "conv", counted)
    return ran


# (x shape, w shape, kwargs): 1-d/2-d/3-d, strides, dilation, padding (symmetric, "same" with an
# even kernel: one more after), groups 1 and 2, depthwise (multiplier 1 and 2), odd sizes
CASES = [
    ((2, 3, 17), (5, 3, 4), dict(stride=2, padding=3)),
    ((2, 6, 13), (4, 3, 3), dict(padding="same", dilation=2, groups=2)),
    ((2, 4, 11), (8, 1, 5), dict(padding=2, groups=4)),
    ((2, 3, 9, 11), (5, 3, 3, 3), dict(padding=1)),
    ((1, 4, 9, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ((2, 3, 8, 9), (4, 3, 2, 4), dict(padding="same", dilation=(3, 1))),
    ((1, 64, 7, 9), (70, 64, 1, 1), {}),
    ((2, 5, 9, 8), (5, 1, 3, 3), dict(padding=1, groups=5)),
    ((1, 4, 9, 9), (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),
    ((1, 3, 7, 6), (6, 1, 3, 2), dict(padding="same", dilation=2, groups=3)),
    ((1, 3, 6, 7), (6, 1, 5, 5), dict(padding=(2, 1), groups=3)),
    ((2, 2, 5, 6, 4), (3, 2, 3, 2, 2), dict(padding=(1, 0, 1), stride=(1, 2, 1))),
    ((1, 4, 5, 5, 5), (4, 2, 2, 3, 3), dict(padding="same", groups=2)),
    ((1, 3, 4, 5, 6), (6, 1, 3, 3, 3), dict(padding=1, groups=3)),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_vs_torch(wgpu_device, launches, case, bias):
    xs, ws, kw = CASES[case]
    nd = len(xs) - 2
    x, w, b = _data([case, bias], xs, ws, bias)
    dev = wgpu_device
    got = getattr(nn, f"conv{nd}d")(*(None if a is None else xp.asarray(a, device=dev)
                                      for a in (x, w, b)), **kw)
    assert launches == [True]
    _check(got, nd, x, w, b, kw)


@pytest.mark.parametrize("cin", [6, 2 * 17])   # channel-major K (C_in / groups < slice), tap-major
@pytest.mark.parametrize("tile", conv_wgsl.TILES)
def test_gemm_tiles(wgpu_device, monkeypatch, tile, cin):
    """Every tile shape in both K orders, with partial tiles along M, C_out / groups and the
    channel slices, and two groups."""
    monkeypatch.setattr(conv_wgsl, "tiles", lambda m, c: tile)
    kw = dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=2)
    x, w, b = _data(list(tile) + [cin], (2, cin, 13, 21), (70, cin // 2, 3, 3), True)
    dev = wgpu_device
    got = nn.conv2d(*(xp.asarray(a, device=dev) for a in (x, w, b)), **kw)
    _check(got, 2, x, w, b, kw)


@pytest.mark.parametrize("depthwise", [True, False])
def test_asymmetric_padding_and_offsets(wgpu_device, depthwise):
    """The kernel called directly: per-side padding (lo != hi) and operands at non-zero offsets."""
    dev = wgpu_device
    cin, g = (4, 4) if depthwise else (4, 2)
    x, w, b = _data(3, (2, cin + 1, 7, 10), (8, cin // g, 3, 4), True)
    xd = xp.asarray(x, device=dev)[:, 1:]
    wd = xp.asarray(np.concatenate([w, w[:1]]), device=dev)[1:]
    bd = xp.asarray(np.concatenate([b[:3], b]), device=dev)[3:]
    wn = np.concatenate([w, w[:1]])[1:]
    pads = ((2, 0), (1, 3))
    y = dev.backend.nn.conv(native(xd), native(wd), native(bd), (1, 2), pads, (1, 1), g)
    assert y is not NotImplemented
    xp_ = np.pad(x[:, 1:], ((0, 0), (0, 0)) + pads)
    _check(wrap(y, dev), 2, xp_, wn, b, dict(stride=(1, 2), groups=g))


def test_kernel_matches_composed(wgpu_device, monkeypatch):
    """A MobileNet-like block: the kernel's result and the composed path's (kernel disabled)."""
    dev = wgpu_device
    x, w1, b1 = _data(5, (1, 8, 15, 15), (16, 8, 1, 1), True)
    _, w2, b2 = _data(6, (1, 16, 15, 15), (16, 1, 3, 3), True)
    args = [xp.asarray(a, device=dev) for a in (x, w1, b1, w2, b2)]

    def run():
        h = nn.conv2d(args[0], args[1], args[2])
        return np.asarray(nn.conv2d(h, args[3], args[4], stride=2, padding=1, groups=16)
                          .to_device("cpu"))
    got = run()
    monkeypatch.setattr(dev.backend.nn, "conv", None)
    ref = run()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_declines(wgpu_device):
    """Non-float32 operands come back NotImplemented (ruda.nn composes)."""
    dev = wgpu_device
    kern = dev.backend.nn.conv
    xi = native(xp.ones((1, 2, 5, 5), dtype=xp.int32, device=dev))
    wi = native(xp.ones((2, 2, 3, 3), dtype=xp.int32, device=dev))
    assert kern(xi, wi, None, (1, 1), ((0, 0), (0, 0)), (1, 1), 1) is NotImplemented
    xf = native(xp.ones((1, 2, 5, 5), dtype=xp.float32, device=dev))
    assert kern(xf, wi, None, (1, 1), ((0, 0), (0, 0)), (1, 1), 1) is NotImplemented


def test_generator_arguments():
    with pytest.raises(ValueError, match="conv_wgsl.gemm: tile"):
        conv_wgsl.gemm((3, 3, 3), False, (48, 64, 4, 4))
    with pytest.raises(ValueError, match="conv_wgsl.depthwise: ks"):
        conv_wgsl.depthwise((3, 3), False)
    assert conv_wgsl.tiles(100, 8) == (32, 16, 4, 4)
    assert conv_wgsl.tiles(5000, 100) == (128, 128, 8, 8)
    assert all(t in conv_wgsl.TILES for m in (10, 2000, 5000) for c in (8, 30, 60, 200)
               for t in [conv_wgsl.tiles(m, c)])


@pytest.mark.parametrize("xs,ws,kw", [
    ((1, 60_000, 2, 2), (3, 60_000, 1, 1), {}),                     # the GEMM's K past the loops
    ((1, 2, 40, 40), (2, 1, 31, 31), dict(groups=2)),               # depthwise taps unrolled
])
def test_kernels_decline_what_one_invocation_should_not_do(wgpu_device, launches, xs, ws, kw):
    """An implicit-GEMM K past what one invocation may loop over (lavapipe ends it after 65,535
    loop iterations in all: wrong values past ~58k) and depthwise kernels of more taps than
    compile in reasonable time (31 x 31 took 37 s) are declined; ruda.nn composes them right."""
    x, w, b = _data([len(xs), ws[0]], xs, ws, True)
    dev = wgpu_device
    got = nn.conv2d(*(xp.asarray(a, device=dev) for a in (x, w, b)), **kw)
    assert launches == [False]
    _check(got, 2, x, w, b, kw)
