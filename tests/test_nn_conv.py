"""ruda.nn convolution (conv1d/2d/3d, conv_transpose1d/2d, unfold/fold) vs torch.nn.functional
(CPU), on every device (float64 where the device has it, else float32), bfloat16 and float16 on
cpu, the host kernel against the composed path, and every argument error."""
import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from test_nn_functional import close, fdt, put

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")
F = torch.nn.functional


def T(a):
    return None if a is None else torch.from_numpy(np.ascontiguousarray(a))


def _data(seed, xs, ws, bias=True):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(xs), rng.standard_normal(ws),
            rng.standard_normal(ws[0]) if bias else None)


def _p(a, device, dt):
    return None if a is None else put(a, device, dt)


# (nd, x shape, w shape, kwargs)
CONV = [
    (1, (2, 4, 11), (6, 4, 3), {}),
    (1, (2, 4, 11), (6, 2, 4), dict(stride=2, padding=2, groups=2)),
    (1, (1, 3, 10), (3, 3, 4), dict(padding="same", dilation=3)),
    (1, (2, 3, 9), (3, 3, 2), dict(padding="same")),
    (2, (2, 3, 7, 8), (5, 3, 3, 3), dict(padding=1)),
    (2, (2, 4, 9, 7), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                         groups=2)),
    (2, (2, 3, 8, 9), (4, 3, 2, 3), dict(padding="same", dilation=(3, 1))),
    (2, (2, 5, 9, 8), (5, 1, 3, 3), dict(padding=1, groups=5)),                  # depthwise
    (2, (1, 4, 9, 9), (4, 1, 3, 3), dict(stride=2, padding=1, groups=4)),        # depthwise s2
    (2, (1, 3, 6, 7), (6, 1, 3, 2), dict(padding="same", dilation=2, groups=3)),  # multiplier 2
    (2, (2, 3, 6, 6), (4, 3, 6, 6), dict(padding="valid")),
    (3, (2, 2, 5, 6, 4), (3, 2, 3, 2, 2), dict(padding=(1, 0, 1), stride=(1, 2, 1))),
    (3, (1, 4, 5, 5, 5), (4, 2, 2, 3, 3), dict(padding="same", groups=2)),
    (2, (2, 3, 11, 10), (6, 3, 3, 3), dict(stride=2, padding=1)),                # RGB stem
    (2, (1, 2, 9, 12), (5, 2, 3, 3), dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1))),
]


def _fn(nd):
    return getattr(nn, f"conv{nd}d"), getattr(F, f"conv{nd}d")


@pytest.mark.parametrize("case", range(len(CONV)))
def test_conv(device, case):
    nd, xs, ws, kw = CONV[case]
    dt, tol = fdt(device)
    a, w, b = _data(case, xs, ws, bias=case % 3 != 1)
    f, tf = _fn(nd)
    want = tf(T(a), T(w), T(b), **kw).numpy()
    got = f(put(a, device, dt), put(w, device, dt), _p(b, device, dt), **kw)
    assert got.shape == want.shape
    close(got, want, dt, tol * 100)


TRANSPOSED = [
    (1, (2, 4, 7), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    (1, (1, 4, 6), (4, 1, 4), dict(stride=3, groups=2, dilation=2, output_padding=2)),
    (2, (2, 3, 5, 4), (3, 2, 3, 3), {}),
    (2, (2, 4, 5, 4), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                         groups=2)),
    (2, (1, 2, 4, 5), (2, 3, 2, 3), dict(stride=1, padding=1, output_padding=1, dilation=2)),
]


@pytest.mark.parametrize("case", range(len(TRANSPOSED)))
def test_conv_transpose(device, case):
    nd, xs, ws, kw = TRANSPOSED[case]
    dt, tol = fdt(device)
    rng = np.random.default_rng(100 + case)
    a, w = rng.standard_normal(xs), rng.standard_normal(ws)
    b = rng.standard_normal(ws[1] * kw.get("groups", 1)) if case % 2 == 0 else None
    f, tf = getattr(nn, f"conv_transpose{nd}d"), getattr(F, f"conv_transpose{nd}d")
    want = tf(T(a), T(w), T(b), **kw).numpy()
    got = f(put(a, device, dt), put(w, device, dt), _p(b, device, dt), **kw)
    assert got.shape == want.shape
    close(got, want, dt, tol * 100)


EMPTY_BATCH = [
    (1, (0, 4, 8), (5, 4, 3), dict(padding=1)),
    (2, (0, 4, 8, 8), (5, 4, 3, 3), {}),
    (2, (0, 4, 8, 8), (6, 2, 3, 3), dict(stride=2, groups=2)),
    (2, (0, 4, 8, 8), (4, 1, 3, 3), dict(padding=1, groups=4)),                  # depthwise
    (3, (0, 2, 5, 6, 4), (3, 2, 3, 2, 2), dict(padding=(1, 0, 1))),
]


def test_conv_empty_batch(device):
    dt, tol = fdt(device)
    for case, (nd, xs, ws, kw) in enumerate(EMPTY_BATCH):
        a, w, b = _data(200 + case, xs, ws, bias=case % 2 == 0)
        f, tf = _fn(nd)
        want = tf(T(a), T(w), T(b), **kw).numpy()
        got = f(put(a, device, dt), put(w, device, dt), _p(b, device, dt), **kw)
        assert got.shape == want.shape
        close(got, want, dt, tol)


def test_conv_empty_channels(device):
    """C_out = 0 gives an empty output (torch refuses such a weight); C_in = 0 the bias alone
    (an empty sum; torch returns an array of C_in = 0 channels)."""
    dt, tol = fdt(device)
    a, w, b = _data(210, (2, 4, 8, 8), (0, 4, 3, 3))
    got = nn.conv2d(put(a, device, dt), put(w, device, dt), put(b, device, dt), padding=1)
    assert got.shape == (2, 0, 8, 8)
    a, w, b = _data(211, (2, 0, 7), (3, 0, 2))
    got = nn.conv1d(put(a, device, dt), put(w, device, dt), put(b, device, dt))
    close(got, np.broadcast_to(b[None, :, None], (2, 3, 6)), dt, tol)
    a, w, _ = _data(212, (2, 4, 5), (4, 0, 3), bias=False)
    assert nn.conv_transpose1d(put(a, device, dt), put(w, device, dt)).shape == (2, 0, 7)


def test_conv_transpose_empty(device):
    """An empty batch gives the empty result, as torch; an output size below 1 is a ValueError
    naming the sizes, as torch's native path raises (its oneDNN path returns an empty result)."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(213)
    a, w, b = rng.standard_normal((0, 4, 3, 2)), rng.standard_normal((4, 3, 3, 3)), \
        rng.standard_normal(3)
    want = F.conv_transpose2d(T(a), T(w), T(b), padding=1).numpy()
    got = nn.conv_transpose2d(put(a, device, dt), put(w, device, dt), put(b, device, dt),
                              padding=1)
    assert got.shape == want.shape == (0, 3, 3, 2)
    close(got, want, dt, tol)
    cases = [(1, (1, 3, 2), (3, 1, 1), dict(padding=1), r"\(2,\) give \(2,\) without padding\), "
              r"got padding \(1,\): output sizes \(0,\)"),
             (1, (2, 4, 2), (4, 3, 3), dict(padding=3), r"\(2,\) give \(4,\) without padding\), "
              r"got padding \(3,\): output sizes \(-2,\)"),
             (2, (2, 4, 2, 2), (4, 3, 3, 3), dict(padding=(2, 0)), r"\(2, 2\) give \(4, 4\) "
              r"without padding\), got padding \(2, 0\): output sizes \(0, 4\)"),
             (2, (3, 4, 3, 2), (4, 2, 2, 2), dict(stride=2, padding=(1, 2), groups=2),
              r"\(3, 2\) give \(6, 4\) without padding\), got padding \(1, 2\): output "
              r"sizes \(4, 0\)")]
    for nd, xs, ws, kw, msg in cases:
        a, w = rng.standard_normal(xs), rng.standard_normal(ws)
        with pytest.raises(RuntimeError, match="Output size is too small"):
            getattr(F, f"conv_transpose{nd}d")(T(a), T(w), **kw)
        with pytest.raises(ValueError, match=rf"ruda.nn.conv_transpose{nd}d: padding: expected "
                           rf"output sizes >= 1 \(x's spatial sizes {msg}"):
            getattr(nn, f"conv_transpose{nd}d")(put(a, device, dt), put(w, device, dt), **kw)


@pytest.mark.parametrize("kw", [dict(kernel_size=3), dict(kernel_size=(2, 3), dilation=(1, 2),
                                                           padding=1, stride=(2, 1))])
def test_unfold_fold(device, kw):
    dt, tol = fdt(device)
    a = np.random.default_rng(7).standard_normal((2, 3, 7, 8))
    want = F.unfold(T(a), **kw).numpy()
    got = nn.unfold(put(a, device, dt), **kw)
    close(got, want, dt, tol)
    cols = np.random.default_rng(8).standard_normal(want.shape)
    close(nn.fold(put(cols, device, dt), (7, 8), **kw),
          F.fold(T(cols), (7, 8), **kw).numpy(), dt, tol * 10)


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_conv_half(name):
    """Half inputs accumulate in float32 and round once: within a few units of the last place of
    torch's float64 result on the same rounded inputs (bfloat16 8 bits, float16 11 bits)."""
    hdt = getattr(xp, name, None)
    if hdt is None:
        pytest.skip(f"ruda.{name} is not available")
    tol = 2e-2 if name == "bfloat16" else 2e-3
    rng = np.random.default_rng(3)
    for f, tf, xs, ws, kw in [
            (nn.conv2d, F.conv2d, (2, 6, 8, 8), (8, 3, 3, 3), dict(padding=1, groups=2)),
            (nn.conv2d, F.conv2d, (2, 6, 8, 8), (6, 1, 3, 3), dict(stride=2, groups=6)),
            (nn.conv_transpose2d, F.conv_transpose2d, (2, 4, 5, 5), (4, 3, 3, 3),
             dict(stride=2, output_padding=1))]:
        x = xp.astype(xp.asarray(rng.standard_normal(xs).astype(np.float32)), hdt)
        w = xp.astype(xp.asarray(rng.standard_normal(ws).astype(np.float32)), hdt)
        got = f(x, w, **kw)
        assert got.dtype == hdt
        ref = tf(T(np.asarray(xp.astype(x, xp.float64))), T(np.asarray(xp.astype(w, xp.float64))),
                 **kw).numpy()
        g = np.asarray(xp.astype(got, xp.float64))
        np.testing.assert_allclose(g, ref, rtol=tol, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("missing", [None, "numba", "threadpoolctl"])
def test_host_kernel_matches_composed(monkeypatch, missing):
    """The cpu conv kernel (im2col + BLAS, Numba depthwise; depthwise through im2col and stride
    1 through the phase copies where Numba is missing; one task thread where threadpoolctl is)
    against torch and the composed namespace path, in float32 and float64, at shapes that
    reach each branch."""
    from ruda.backends.host import _nn_attention, _nn_conv
    from ruda.nn import _conv
    if missing == "numba":
        monkeypatch.setattr(_nn_conv, "_depthwise", None)
        monkeypatch.setattr(_nn_conv, "_shift_rows", None)
    if missing == "threadpoolctl":      # what _blas_one_thread finds without it
        monkeypatch.setattr(_nn_attention, "_BLAS", [None])
    monkeypatch.setattr(_nn_conv, "_ROWS", 1 << 14)       # bands of a few output rows
    rng = np.random.default_rng(5)
    for xs, ws, kw in [((2, 8, 10, 9), (16, 8, 3, 3), dict(padding=1)),
                       ((2, 8, 10, 9), (8, 1, 3, 3), dict(padding=1, groups=8)),
                       ((2, 8, 11, 10), (8, 1, 3, 3), dict(stride=2, padding=1, groups=8)),
                       ((2, 8, 11, 10), (16, 1, 5, 3), dict(padding=(2, 1), dilation=(1, 2),
                                                           groups=8)),
                       ((2, 160, 7, 6), (160, 1, 3, 3), dict(stride=2, padding=1, groups=160)),
                       ((2, 6, 9, 11), (6, 1, 3, 3), dict(stride=2, padding=(0, 2), groups=6)),
                       ((2, 4, 8, 9), (8, 1, 5, 4), dict(stride=(1, 2), padding=(2, 0),
                                                         dilation=(1, 2), groups=4)),
                       ((5, 3, 20, 20), (3, 1, 3, 3), dict(padding=1, groups=3)),
                       ((3, 12, 6, 7), (12, 1, 3, 3), dict(padding=1, groups=12)),
                       ((2, 4, 5, 1), (8, 1, 3, 3), dict(padding=1, groups=4)),   # x2, W 1
                       ((2, 4, 1, 6), (4, 1, 3, 3), dict(padding=1, groups=4)),   # H 1
                       ((3, 12, 6, 7), (12, 1, 3, 3), dict(padding=(1, 2), groups=12)),  # rows
                       ((2, 6, 5, 3), (12, 1, 3, 2), dict(padding=(0, 2), dilation=(1, 2),
                                                         groups=6)),    # of at most 8
                       ((1, 4, 7, 6), (6, 2, 1, 1), dict(stride=2, groups=2)),
                       ((1, 16, 48, 48), (8, 16, 3, 3), dict(padding=1)),   # threaded copy
                       ((2, 32, 48, 48), (8, 32, 3, 3), dict(padding=1)),   # images on threads
                       ((2, 16, 13, 12), (8, 16, 3, 3), dict(stride=2, padding=1)),  # phases
                       ((2, 16, 9, 10), (8, 16, 3, 2), dict(padding="same", dilation=(1, 3))),
                       ((2, 16, 6, 1), (8, 16, 3, 3), dict(padding=1)),     # x's own pitch
                       ((1, 16, 5, 2), (8, 16, 3, 5), dict(padding=(1, 2))),
                       ((1, 16, 12, 11), (6, 16, 3, 2), dict(padding=(2, 0), dilation=(2, 3)))]:
        for dt in (np.float32, np.float64):
            a, w = rng.standard_normal(xs).astype(dt), rng.standard_normal(ws).astype(dt)
            b = rng.standard_normal(ws[0]).astype(dt)
            x, wx, bx = xp.asarray(a), xp.asarray(w), xp.asarray(b)
            got = nn.conv2d(x, wx, bx, **kw)
            want = F.conv2d(T(a.astype(np.float64)), T(w.astype(np.float64)),
                            T(b.astype(np.float64)), **kw).numpy()
            tol = 1e-4 if dt == np.float32 else 1e-12
            np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
            assert got.dtype == x.dtype
            pads = _conv._pads("conv2d", kw.get("padding", 0), 2, ws[2:],
                               _conv._ints("", "", kw.get("dilation", 1), 2),
                               _conv._ints("", "", kw.get("stride", 1), 2))
            comp = _conv._composed(x, wx, pads, _conv._ints("", "", kw.get("stride", 1), 2),
                                   _conv._ints("", "", kw.get("dilation", 1), 2),
                                   kw.get("groups", 1), tuple(got.shape[2:]))
            np.testing.assert_allclose(np.asarray(got), np.asarray(comp) + b[:, None, None],
                                       rtol=tol, atol=tol)


def test_host_depthwise_edges_keep_non_finite_values_in_place():
    """The stride-1 3x3 depthwise kernel computes each plane at its own pitch, where the taps
    past a row's ends wrap onto the neighbouring row: an inf or NaN there must reach exactly
    the outputs it reaches in torch, and an inf weight meets the padding's zeros as there."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 5, 6))
    a[0, 0, 2, 0], a[0, 1, 1, 5], a[1, 2, 3, 0] = np.inf, -np.inf, np.nan
    w = rng.standard_normal((3, 1, 3, 3))
    w[2, 0, 1, 0] = np.inf
    for dt in (np.float32, np.float64):
        got = np.asarray(nn.conv2d(xp.asarray(a.astype(dt)), xp.asarray(w.astype(dt)),
                                   padding=1, groups=3))
        want = F.conv2d(T(a), T(w), padding=1, groups=3).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _err(cls, pattern, f, *args, **kw):
    with pytest.raises(cls, match=pattern):
        f(*args, **kw)


def test_conv_errors(device):
    dt = fdt(device)[0]
    x = xp.zeros((2, 4, 6, 6), dtype=dt, device=device)
    w = xp.zeros((6, 2, 3, 3), dtype=dt, device=device)
    _err(ValueError, r"ruda.nn.conv2d: x: expected 4 dimensions \(N, C_in, \*spatial\), got "
         r"shape \(4, 6, 6\)", nn.conv2d, x[0], w)
    _err(ValueError, r"ruda.nn.conv2d: x: expected C_in = weight.shape\[1\] \* groups = 2 "
         r"channels, got shape \(2, 4, 6, 6\)", nn.conv2d, x, w)
    _err(ValueError, r"ruda.nn.conv2d: weight: expected C_out divisible by groups=4",
         nn.conv2d, x, xp.zeros((6, 1, 3, 3), dtype=dt, device=device), groups=4)
    _err(ValueError, r"ruda.nn.conv2d: groups: expected a positive int, got 0",
         nn.conv2d, x, w, groups=0)
    _err(ValueError, r"ruda.nn.conv2d: stride: expected positive values, got \(0, 0\)",
         nn.conv2d, x, w, stride=0, groups=2)
    _err(ValueError, r"ruda.nn.conv2d: stride: expected positive values, got \(1, -1\)",
         nn.conv2d, x, w, stride=(1, -1), groups=2)
    _err(TypeError, r"ruda.nn.conv2d: stride: expected an int or a tuple of 2 ints, got "
         r"\(1, 1, 1\)", nn.conv2d, x, w, stride=(1, 1, 1), groups=2)
    _err(ValueError, r"ruda.nn.conv2d: padding: expected non-negative values, got \(-1, -1\)",
         nn.conv2d, x, w, padding=-1, groups=2)
    _err(ValueError, r"ruda.nn.conv2d: padding: expected an int, a tuple, 'same' or 'valid', "
         r"got 'full'", nn.conv2d, x, w, padding="full", groups=2)
    _err(ValueError, r"ruda.nn.conv2d: padding: expected an int or tuple with stride != 1, got "
         r"'same' with stride \(2, 2\)", nn.conv2d, x, w, padding="same", stride=2, groups=2)
    _err(ValueError, r"ruda.nn.conv2d: x: expected padded spatial sizes at least the dilated "
         r"kernel's \(7, 7\), got \(6, 6\)", nn.conv2d, x, w, dilation=3, groups=2)
    _err(ValueError, r"ruda.nn.conv2d: x: expected padded spatial sizes at least the dilated "
         r"kernel's \(8, 3\), got \(6, 6\)", nn.conv2d, x,
         xp.zeros((6, 2, 8, 3), dtype=dt, device=device), groups=2)
    _err(ValueError, r"ruda.nn.conv2d: weight: expected 4 dimensions", nn.conv2d, x, w[0],
         groups=2)
    _err(ValueError, r"ruda.nn.conv2d: bias: expected shape \(6,\), got shape \(4,\)",
         nn.conv2d, x, w, xp.zeros((4,), dtype=dt, device=device), groups=2)
    _err(TypeError, r"ruda.nn.conv2d: weight: expected x's dtype", nn.conv2d, x,
         xp.zeros((6, 2, 3, 3), dtype=xp.float32 if dt == xp.float64 else xp.int32,
                  device=device), groups=2)
    _err(TypeError, r"ruda.nn.conv2d: x: expected a real floating dtype, got int32", nn.conv2d,
         xp.zeros((2, 4, 6, 6), dtype=xp.int32, device=device), w, groups=2)
    _err(ValueError, r"ruda.nn.conv1d: x: expected 3 dimensions", nn.conv1d, x, w)
    _err(ValueError, r"ruda.nn.conv3d: x: expected 5 dimensions", nn.conv3d, x, w)
    wt = xp.zeros((4, 3, 3, 3), dtype=dt, device=device)
    _err(ValueError, r"ruda.nn.conv_transpose2d: output_padding: expected values smaller than "
         r"stride \(2, 2\) or dilation \(1, 1\) \(per axis\), got \(2, 2\)",
         nn.conv_transpose2d, x, wt, stride=2, output_padding=2)
    _err(ValueError, r"ruda.nn.conv_transpose2d: weight: expected shape\[0\] = x's C_in = 4, "
         r"divisible by groups=3", nn.conv_transpose2d, x, wt, groups=3)
    _err(ValueError, r"ruda.nn.conv_transpose2d: weight: expected shape\[0\] = x's C_in = 4",
         nn.conv_transpose2d, x, w)
    _err(ValueError, r"ruda.nn.conv_transpose2d: padding: expected output sizes >= 1",
         nn.conv_transpose2d, x, wt, padding=5)
    _err(ValueError, r"ruda.nn.unfold: x: expected 4 dimensions \(N, C, H, W\)", nn.unfold,
         x[0], 3)
    _err(ValueError, r"ruda.nn.fold: x: expected shape\[2\] = 16 blocks \(4 x 4\) for "
         r"output_size \(6, 6\), got shape \(2, 18, 15\)", nn.fold,
         xp.zeros((2, 18, 15), dtype=dt, device=device), 6, 3)
    _err(ValueError, r"ruda.nn.fold: x: expected shape\[1\] divisible by kh \* kw = 9",
         nn.fold, xp.zeros((2, 10, 16), dtype=dt, device=device), 6, 3)
