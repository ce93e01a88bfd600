"""ruda.nn normalizations vs torch.nn.functional (CPU), on every device (float64 where the
device has it, else float32), bfloat16 on cpu, and the fused host kernels against the
composed path."""
import warnings

import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from test_nn_functional import close, fdt, put

torch = pytest.importorskip("torch")
F = torch.nn.functional


def T(a):
    return None if a is None else torch.from_numpy(a)


@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(device, affine):
    dt, tol = fdt(device)
    rng = np.random.default_rng(10)
    a = rng.standard_normal((3, 4, 6)) * 5 + 2
    for shape in (6, (4, 6)):
        sh = (shape,) if isinstance(shape, int) else shape
        w = rng.standard_normal(sh) if affine else None
        b = rng.standard_normal(sh) if affine else None
        want = F.layer_norm(T(a), sh, T(w), T(b), eps=1e-3).numpy()
        got = nn.layer_norm(put(a, device, dt), shape, None if w is None else put(w, device, dt),
                            None if b is None else put(b, device, dt), eps=1e-3)
        close(got, want, dt, tol * 100)


@pytest.mark.parametrize("affine", [False, True])
def test_rms_norm(device, affine):
    dt, tol = fdt(device)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((5, 2, 8)) * 3
    for shape in (8, (2, 8)):
        sh = (shape,) if isinstance(shape, int) else shape
        w = rng.standard_normal(sh) if affine else None
        for eps in (None, 1e-2):
            ta = T(a) if dt == xp.float64 else T(a.astype(np.float32))   # default eps: dtype's
            want = F.rms_norm(ta, sh, None if w is None else T(w).to(ta.dtype), eps=eps).numpy()
            got = nn.rms_norm(put(a, device, dt), shape,
                              None if w is None else put(w, device, dt), eps=eps)
            close(got, want, dt, tol * 100)


@pytest.mark.parametrize("affine", [True, False])
def test_add_rms_norm(device, affine):
    """The sum as x + residual gives it, and torch's rms_norm of that sum."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(13)
    for shape, n in [((3, 1, 64), 64), ((2, 5, 40), 40), ((4, 576), 576), ((2, 3, 8), (3, 8))]:
        sh = (n,) if isinstance(n, int) else n
        a, r = rng.standard_normal(shape) * 3, rng.standard_normal(shape)
        w = rng.standard_normal(sh) if affine else None
        x, res = put(a, device, dt), put(r, device, dt)
        wd = None if w is None else put(w, device, dt)
        for eps in (None, 1e-2):
            h, y = nn.add_rms_norm(x, res, n, wd, eps=eps)
            assert h.dtype == dt and y.dtype == dt and h.shape == y.shape == shape
            np.testing.assert_array_equal(np.asarray(h.to_device("cpu")),
                                          np.asarray((x + res).to_device("cpu")))
            th = T(np.asarray(h.to_device("cpu")).astype(np.float64 if dt == xp.float64
                                                           else np.float32))
            want = F.rms_norm(th, sh, None if w is None else T(w).to(th.dtype), eps=eps).numpy()
            close(y, want, dt, tol * 100)
    x = put(np.ones((2, 4)), device, dt)
    with pytest.raises(ValueError, match=r"ruda.nn.add_rms_norm: residual: expected x's shape"):
        nn.add_rms_norm(x, put(np.ones((1, 4)), device, dt), 4)
    with pytest.raises(TypeError, match=r"ruda.nn.add_rms_norm: residual: expected x's dtype"):
        nn.add_rms_norm(x, put(np.ones((2, 4)), device, xp.int32), 4)
    with pytest.raises(TypeError, match=r"ruda.nn.add_rms_norm: residual: expected a ruda array"):
        nn.add_rms_norm(x, np.ones((2, 4)), 4)
    xi = put(np.ones((2, 4)), device, xp.int32)
    with pytest.raises(TypeError, match=r"ruda.nn.add_rms_norm: x: expected a real floating"):
        nn.add_rms_norm(xi, xi, 4)


def test_group_norm(device):
    dt, tol = fdt(device)
    rng = np.random.default_rng(12)
    a = rng.standard_normal((2, 6, 3, 4)) * 2 + 1
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    for G in (1, 2, 3):
        close(nn.group_norm(put(a, device, dt), G, put(w, device, dt), put(b, device, dt)),
              F.group_norm(T(a), G, T(w), T(b)).numpy(), dt, tol * 100)
    close(nn.group_norm(put(a, device, dt), 2), F.group_norm(T(a), 2).numpy(), dt, tol * 100)
    with pytest.raises(ValueError, match=r"ruda.nn.group_norm: num_groups: expected a positive "
                                         r"int dividing the 6 channels, got 4"):
        nn.group_norm(put(a, device, dt), 4)


def test_group_norm_numpy_integer_groups(device):
    """num_groups as a NumPy integer, as conv's groups and top_k's k take; a non-integer is a
    TypeError, one not dividing the channels a ValueError."""
    dt, tol = fdt(device)
    a = np.random.default_rng(14).standard_normal((2, 4, 5))
    for G in (np.int64(2), np.int32(4), np.uint8(1)):
        close(nn.group_norm(put(a, device, dt), G), F.group_norm(T(a), int(G)).numpy(), dt,
              tol * 100)
    for G, cls, got in ((np.int64(3), ValueError, "3"), (np.int64(0), ValueError, "0"),
                        (2.0, TypeError, "2.0"), (True, TypeError, "True")):
        with pytest.raises(cls, match=r"ruda.nn.group_norm: num_groups: expected a positive int "
                                      rf"dividing the 4 channels, got {got}$"):
            nn.group_norm(put(a, device, dt), G)


def test_norms_of_empty_inputs(device):
    """Empty inputs (an empty normalized axis included) give empty results of x's shape and
    dtype, as torch, without NumPy's warnings of statistics over empty axes."""
    dt, _ = fdt(device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for shape, ns in (((3, 0), (0,)), ((3, 2, 0), (2, 0)), ((0, 4), (4,))):
            a = np.zeros(shape)
            w = np.ones(ns)
            for got, want in ((nn.layer_norm(put(a, device, dt), ns, put(w, device, dt)),
                               F.layer_norm(T(a), ns, T(w))),
                              (nn.rms_norm(put(a, device, dt), ns), F.rms_norm(T(a), ns))):
                assert got.shape == tuple(want.shape) and got.dtype == dt
        a = np.zeros((2, 4, 0))
        got = nn.group_norm(put(a, device, dt), 2, put(np.ones(4), device, dt))
        assert got.shape == tuple(F.group_norm(T(a), 2, T(np.ones(4))).shape) and got.dtype == dt


def test_batch_norm(device):
    dt, tol = fdt(device)
    rng = np.random.default_rng(13)
    a = rng.standard_normal((4, 3, 5)) * 2 + 1
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    want = F.batch_norm(T(a), T(rm), T(rv), T(w), T(b), eps=1e-4).numpy()
    close(nn.batch_norm(put(a, device, dt), put(rm, device, dt), put(rv, device, dt),
                        put(w, device, dt), put(b, device, dt), eps=1e-4), want, dt, tol * 100)
    # training: batch statistics, running statistics updated in place as torch
    trm, trv = T(rm.copy()), T(rv.copy())
    want = F.batch_norm(T(a), trm, trv, T(w), T(b), training=True, momentum=0.3).numpy()
    grm, grv = put(rm, device, dt), put(rv, device, dt)
    got = nn.batch_norm(put(a, device, dt), grm, grv, put(w, device, dt), put(b, device, dt),
                        training=True, momentum=0.3)
    close(got, want, dt, tol * 100)
    close(grm, trm.numpy(), dt, tol * 100)
    close(grv, trv.numpy(), dt, tol * 100)
    with pytest.raises(ValueError, match=r"ruda.nn.batch_norm: running_mean: expected a \(C,\)"):
        nn.batch_norm(put(a, device, dt), None, None)


def test_batch_norm_large_and_2d(device):
    """Inference past the host's thread split (every worker's share of planes) and on (N, C)
    input, with and without weight and bias."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(14)
    for shape in ((8, 24, 40, 40), (64, 7)):
        a = rng.standard_normal(shape) * 3 + 1
        C = shape[1]
        rm, rv = rng.standard_normal(C), rng.random(C) + 0.5
        w, b = rng.standard_normal(C), rng.standard_normal(C)
        want = F.batch_norm(T(a), T(rm), T(rv), T(w), T(b)).numpy()
        got = nn.batch_norm(put(a, device, dt), put(rm, device, dt), put(rv, device, dt),
                            put(w, device, dt), put(b, device, dt))
        close(got, want, dt, tol * 100)
        want = F.batch_norm(T(a), T(rm), T(rv)).numpy()
        close(nn.batch_norm(put(a, device, dt), put(rm, device, dt), put(rv, device, dt)), want,
              dt, tol * 100)


def test_norm_errors(device):
    dt, _ = fdt(device)
    x = put(np.ones((2, 3, 4)), device, dt)
    with pytest.raises(ValueError, match=r"ruda.nn.layer_norm: normalized_shape: expected the "
                                         r"trailing axes"):
        nn.layer_norm(x, (3,))
    with pytest.raises(ValueError, match=r"ruda.nn.layer_norm: weight: expected shape \(4,\)"):
        nn.layer_norm(x, 4, put(np.ones(3), device, dt))
    with pytest.raises(TypeError, match=r"ruda.nn.rms_norm: weight: expected x's dtype"):
        nn.rms_norm(x, 4, put(np.ones(4), device, xp.int32))
    with pytest.raises(TypeError, match=r"ruda.nn.rms_norm: x: expected a real floating dtype"):
        nn.rms_norm(put(np.ones((2, 4)), device, xp.int32), 4)
    with pytest.raises(ValueError, match=r"ruda.nn.layer_norm: eps: expected a number in"):
        nn.layer_norm(x, 4, eps=-1.0)


def test_norms_bfloat16():
    rng = np.random.default_rng(14)
    a = (rng.standard_normal((6, 64)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    bf = xp.bfloat16
    tb = torch.bfloat16
    x = xp.astype(xp.asarray(a), bf)
    pairs = [
        (nn.layer_norm(x, 64, xp.astype(xp.asarray(w), bf), xp.astype(xp.asarray(b), bf)),
         F.layer_norm(T(a).to(tb), (64,), T(w).to(tb), T(b).to(tb))),
        (nn.layer_norm(x, 64, xp.asarray(w), xp.asarray(b)),          # float32 parameters
         F.layer_norm(T(a).to(tb), (64,), T(w).to(tb), T(b).to(tb))),
        (nn.rms_norm(x, 64, xp.astype(xp.asarray(w), bf)), F.rms_norm(T(a).to(tb), (64,),
                                                                      T(w).to(tb))),
        (nn.group_norm(xp.reshape(x, (3, 4, 32)), 2),
         F.group_norm(T(a).to(tb).reshape(3, 4, 32), 2)),
    ]
    for got, want in pairs:
        assert got.dtype == bf
        np.testing.assert_allclose(np.asarray(xp.astype(got, xp.float32)).ravel(),
                                   want.float().numpy().ravel(), rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_host_kernels_match_composite(dtype):
    """The host's fused kernels (softmax, layer_norm, rms_norm, swiglu) against the namespace
    composition, on rows wider than one SIMD block and with an odd tail."""
    from ruda.backends.host import _nn as k
    rng = np.random.default_rng(15)
    a = (rng.standard_normal((37, 1029)) * 4).astype(dtype)
    a[3, :5] = -np.inf
    w, b = rng.standard_normal((2, 1029)).astype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    ta = T(a.astype(np.float64))
    checks = []
    if k.softmax is not None:
        checks += [(k.softmax(a, False), F.softmax(ta, -1)),
                   (k.softmax(a, True), F.log_softmax(ta, -1))]
    if k.layer_norm is not None:
        checks += [(k.layer_norm(a, w, b, 1e-5), F.layer_norm(ta, (1029,), T(w).double(),
                                                               T(b).double())),
                   (k.layer_norm(a, None, None, 1e-5), F.layer_norm(ta, (1029,)))]
    if k.rms_norm is not None:
        checks += [(k.rms_norm(a, w, 1e-6), F.rms_norm(ta, (1029,), T(w).double(), eps=1e-6)),
                   (k.rms_norm(a, None, 1e-6), F.rms_norm(ta, (1029,), eps=1e-6))]
    if k.swiglu is not None:
        checks += [(k.swiglu(a[4:], a[4:] * 0.5), F.silu(ta[4:]) * ta[4:] * 0.5)]
    assert checks, "the host has no fused nn kernel"
    for got, want in checks:
        assert got.dtype == a.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.numpy(), rtol=tol, atol=tol * 10)


def test_batch_norm_asks_for_a_fused_kernel(monkeypatch):
    """Inference batch_norm hands a device's ``batch_norm`` kernel x as (N, C, L) and the
    statistics in the compute dtype (float32 for bfloat16 x), and returns its answer in x's
    shape; where the kernel declines, the composed path answers."""
    from ruda.backends.host import _nn as k
    seen = []

    def kernel(x, mean, var, weight, bias, eps):
        seen.append((x.shape, mean.dtype, var.dtype, weight, getattr(bias, "dtype", None), eps))
        return NotImplemented if len(seen) > 1 else np.full(x.shape, 7, x.dtype)
    monkeypatch.setattr(k, "batch_norm", kernel, raising=False)
    rng = np.random.default_rng(17)
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    rm, rv, b = rng.standard_normal(3), rng.random(3) + 0.5, rng.standard_normal(3)
    args = [xp.astype(xp.asarray(v), xp.bfloat16) for v in (a, rm, rv, b)]
    got = nn.batch_norm(args[0], args[1], args[2], None, args[3], eps=1e-3)
    assert got.shape == a.shape and got.dtype == xp.bfloat16
    np.testing.assert_array_equal(np.asarray(xp.astype(got, xp.float32)), 7)
    assert seen == [((2, 3, 20), np.float32, np.float32, None, np.float32, 1e-3)]
    x32 = xp.asarray(a)
    got = nn.batch_norm(x32, xp.asarray(rm.astype(np.float32)), xp.asarray(rv.astype(np.float32)))
    want = F.batch_norm(T(a).double(), T(rm), T(rv)).numpy()
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
    assert len(seen) == 2


def test_host_kernels_without_numba(monkeypatch):
    """Where Numba is missing, the host's norms and float32 erf/gelu run blocked NumPy."""
    from ruda.backends.host import _nn as k
    for name in ("_ln_rows", "_rms_rows", "_gn_rows", "_erf32_flat"):
        monkeypatch.setattr(k, name, None)
    rng = np.random.default_rng(16)
    a = (rng.standard_normal((2, 4, 300)) * 3).astype(np.float32)
    w, b = rng.standard_normal((2, 300)).astype(np.float32)
    x, t = xp.asarray(a), T(a).double()
    pairs = [(nn.layer_norm(x, 300, xp.asarray(w), xp.asarray(b)),
              F.layer_norm(t, (300,), T(w).double(), T(b).double())),
             (nn.rms_norm(x, 300, xp.asarray(w)), F.rms_norm(t, (300,), T(w).double())),
             (nn.group_norm(x, 2), F.group_norm(t, 2)),
             (nn.erf(x), torch.erf(t)), (nn.gelu(x), F.gelu(t))]
    for got, want in pairs:
        assert got.dtype == xp.float32
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-5, atol=1e-6)
