"""ruda.nn activations, row ops, layers and small functions vs torch.nn.functional (CPU), on
every device: float64 where the device has it, else float32; bfloat16 on cpu."""
import math
import re
import warnings

import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from conftest import to_numpy
from strategies import supported

torch = pytest.importorskip("torch")
F = torch.nn.functional


def fdt(device):
    """The widest float the device has, and the tolerance to hold it to."""
    if xp.float64 in supported(device, "real floating"):
        return xp.float64, 1e-12
    return xp.float32, 2e-5


def put(a, device, dt):
    return xp.asarray(np.asarray(a).astype(np.dtype(dt)), device=device)


def close(got, want, dt, tol):
    assert got.dtype == dt, (got.dtype, dt)
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), want.astype(np.float64),
                               rtol=tol, atol=tol, equal_nan=True)


ACTS = [
    ("relu", {}), ("relu6", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {"alpha": 1.5}),
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("sigmoid", {}),
    ("softplus", {"beta": 2.0, "threshold": 5.0}), ("hardswish", {}), ("hardsigmoid", {}),
]


@pytest.mark.parametrize("name, kw", ACTS, ids=[f"{n}{'-' + '-'.join(map(str, k.values())) if k else ''}"
                                                for n, k in ACTS])
def test_activations(device, name, kw):
    dt, tol = fdt(device)
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.standard_normal(60) * 4, [0.0, -3.0, 3.0, 6.0, 40.0, -40.0]])
    want = getattr(F, name)(torch.from_numpy(a), **kw).numpy()
    close(getattr(nn, name)(put(a, device, dt), **kw), want, dt, tol)


def test_gelu_tanh_keeps_its_left_tail(device):
    """x sigmoid(2u) rather than x (1 + tanh(u)) / 2, which cancels for x < 0 (torch's float64
    gives gelu(-10) = 0): within float32's relative precision of the float64 sigmoid form."""
    x = np.array([-12.0, -10.0, -6.0, -5.0, -4.0, -3.0, -1.0, 0.5, 4.0], np.float32)
    t = torch.from_numpy(x.astype(np.float64))
    want = (t * torch.sigmoid(2 * np.sqrt(2 / np.pi) * (t + 0.044715 * t ** 3))).numpy()
    got = to_numpy(nn.gelu(xp.asarray(x, device=device), approximate="tanh")).astype(np.float64)
    np.testing.assert_allclose(got, want.astype(np.float32).astype(np.float64), rtol=2e-6, atol=0)


@pytest.mark.parametrize("name,kw", ACTS)
def test_activations_0d(device, name, kw):
    """A 0-d input gives a 0-d result (the fused kernels included)."""
    for dt in supported(device, "real floating"):
        if dt in (xp.float32, xp.float64):
            want = getattr(F, name)(torch.tensor(-1.25, dtype=torch.float64), **kw).item()
            got = getattr(nn, name)(xp.asarray(-1.25, dtype=dt, device=device), **kw)
            assert got.shape == () and got.dtype == dt
            assert math.isclose(float(got), want, rel_tol=1e-6, abs_tol=1e-7), (dt, float(got))


def test_activations_float32_host():
    """float32 on the host (its fused kernels) within a few float32 ulp of torch in float64,
    tiny and large arguments included (gelu: 1e-6 absolute where 1 + erf cancels, x < -4)."""
    rng = np.random.default_rng(9)
    a = np.concatenate([rng.standard_normal(3000) * 5, np.geomspace(1e-30, 1e-3, 30),
                        -np.geomspace(1e-30, 1e-3, 30), [0.0, 88.0, -88.0, 200.0, -200.0, np.nan]])
    t = torch.from_numpy(a.astype(np.float32).astype(np.float64))
    x = xp.asarray(a.astype(np.float32))
    for name, kw in ACTS + [("erf", {})]:
        got = getattr(nn, name)(x, **kw)
        assert got.dtype == xp.float32
        want = (torch.erf(t) if name == "erf" else getattr(F, name)(t, **kw)).numpy()
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6, err_msg=name)


def test_activations_split_over_threads_host():
    """float32 inputs past the host's thread split (every worker's slice), NaN kept; relu6 of
    infinities."""
    rng = np.random.default_rng(10)
    a = (rng.standard_normal(700_001) * 8).astype(np.float32)
    a[::9973] = np.nan
    t = torch.from_numpy(a.astype(np.float64))
    for name in ("relu6", "silu", "gelu", "hardswish"):
        got = getattr(nn, name)(xp.asarray(a))
        assert got.dtype == xp.float32
        atol = 2e-6 if name == "gelu" else 1e-6         # gelu: 1 + erf cancels below x = -4
        np.testing.assert_allclose(np.asarray(got), getattr(F, name)(t).numpy(), rtol=2e-6,
                                   atol=atol, equal_nan=True, err_msg=name)
    inf = np.array([np.inf, -np.inf, np.nan, 7.0, -0.5], np.float32)
    np.testing.assert_array_equal(np.asarray(nn.relu6(xp.asarray(inf))), [6, 0, np.nan, 6, 0])


def test_activations_bfloat16_and_int():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 33)).astype(np.float32) * 3
    t = torch.from_numpy(a).to(torch.bfloat16)
    x = xp.astype(xp.asarray(a), xp.bfloat16)
    for name, kw in ACTS:
        got = getattr(nn, name)(x, **kw)
        assert got.dtype == xp.bfloat16
        want = getattr(F, name)(t, **kw).float().numpy()
        np.testing.assert_allclose(np.asarray(xp.astype(got, xp.float32)), want, rtol=1e-2,
                                   atol=1e-2)
    i = xp.asarray([-3, 0, 4, 9])
    assert nn.relu(i).dtype == i.dtype and nn.relu(i).tolist() == [0, 0, 4, 9]
    assert nn.relu6(i).tolist() == [0, 0, 4, 6]
    with pytest.raises(TypeError, match=r"ruda.nn.gelu: x: expected a real floating dtype"):
        nn.gelu(i)
    with pytest.raises(TypeError, match=r"ruda.nn.relu: x: expected a ruda array"):
        nn.relu(np.ones(3))
    with pytest.raises(ValueError, match=r"ruda.nn.gelu: approximate"):
        nn.gelu(xp.ones(3), approximate="erf")
    with pytest.raises(TypeError, match=r"ruda.nn.leaky_relu: negative_slope"):
        nn.leaky_relu(xp.ones(3), negative_slope="0.1")


def test_glu_swiglu(device):
    dt, tol = fdt(device)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 8, 5))
    for axis in (-1, 1):
        if a.shape[axis] % 2:
            with pytest.raises(ValueError, match=r"ruda.nn.glu: x: expected an even length"):
                nn.glu(put(a, device, dt), axis=axis)
            continue
        close(nn.glu(put(a, device, dt), axis=axis), F.glu(torch.from_numpy(a), axis).numpy(),
              dt, tol)
    g, u = rng.standard_normal((2, 6, 40)) * 3
    want = (F.silu(torch.from_numpy(g)) * torch.from_numpy(u)).numpy()
    close(nn.swiglu(put(g, device, dt), put(u, device, dt)), want, dt, tol)
    with pytest.raises(TypeError, match=r"ruda.nn.swiglu: up: expected gate's dtype"):
        nn.swiglu(put(g, device, dt), put(u, device, xp.int32))
    for shape in ((3, 0), (0,), (0, 4)):      # empty, as torch's silu(g) * u
        e = nn.swiglu(put(np.zeros(shape), device, dt), put(np.zeros(shape), device, dt))
        assert e.shape == shape and e.dtype == put(a, device, dt).dtype


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(device, name):
    dt, tol = fdt(device)
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 5, 37)) * 10
    a[0, 0] = -np.inf                         # a row of -inf: NaN, as torch
    a[0, 1, :3] = -np.inf
    a[1, 2, 5] = np.inf                       # a row holding +inf: NaN, as torch
    a[2, 3, 0] = 1000.0                       # no overflow
    t = torch.from_numpy(a)
    for axis in (-1, 1, 0):
        close(getattr(nn, name)(put(a, device, dt), axis=axis), getattr(F, name)(t, axis).numpy(),
              dt, tol * 10)
    if dt == xp.float64:                      # dtype= casts first, as torch
        i = np.arange(12).reshape(3, 4)
        close(getattr(nn, name)(put(i, device, xp.int64), dtype=xp.float64),
              getattr(F, name)(torch.from_numpy(i), -1, dtype=torch.float64).numpy(), dt, tol)
    with pytest.raises(TypeError, match=rf"ruda.nn.{name}: x: expected a real floating dtype"):
        getattr(nn, name)(put(np.arange(4), device, xp.int32))
    with pytest.raises(ValueError, match=rf"ruda.nn.{name}: axis: expected an axis in"):
        getattr(nn, name)(put(a, device, dt), axis=3)


def test_softmax_bfloat16():
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((7, 300)) * 5).astype(np.float32)
    t = torch.from_numpy(a).to(torch.bfloat16)
    x = xp.astype(xp.asarray(a), xp.bfloat16)
    for name in ("softmax", "log_softmax"):
        got = getattr(nn, name)(x)
        assert got.dtype == xp.bfloat16
        np.testing.assert_allclose(np.asarray(xp.astype(got, xp.float32)),
                                   getattr(F, name)(t, -1).float().numpy(), rtol=2e-2, atol=2e-2)


def test_row_ops_float32_large_logits(device):
    """float32 rows far from 0 (on the host: its fused kernel): log_softmax as torch's
    (x - max) - log(sum), not x - (max + log(sum)) rounded at the max's magnitude."""
    a = np.array([[1000, 999, 998, 500, 0], [1e4, 9999, 9998, 0, -1e4],
                  [1e30, -1e30, 1e30, 0, 0], [-1e4, -1e4 - 1, -1e4 - 2, -2e4, -3e4]], np.float32)
    t = torch.from_numpy(a)
    x = xp.asarray(a, device=device)
    for got, want in ((nn.log_softmax(x), F.log_softmax(t, -1)), (nn.softmax(x), F.softmax(t, -1)),
                      (nn.logsumexp(x, -1), torch.logsumexp(t, -1))):
        close(got, want.numpy(), xp.float32, 1e-6)


def test_row_ops_and_swiglu_quiet_at_infinities(device):
    """0-d softmax / log_softmax of +-inf and NaN, swiglu of infinities, logsumexp of a row of
    -inf: torch's values (NaN, NaN, -inf), without NumPy's warnings from the host."""
    dt, tol = fdt(device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in (np.inf, -np.inf, np.nan, 1.5):
            t = torch.tensor(v, dtype=torch.float64)
            close(nn.softmax(put(v, device, dt)), F.softmax(t, 0).numpy(), dt, tol)
            close(nn.log_softmax(put(v, device, dt)), F.log_softmax(t, 0).numpy(), dt, tol)
        g = np.array([np.inf, -np.inf, 1.0, -1000.0, 1000.0, -np.inf])
        u = np.array([1.0, 2.0, np.inf, np.inf, 3.0, 0.0])
        close(nn.swiglu(put(g, device, dt), put(u, device, dt)),
              (F.silu(torch.from_numpy(g)) * torch.from_numpy(u)).numpy(), dt, tol)
        a = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.inf, -np.inf], [np.nan, 1.0]])
        close(nn.logsumexp(put(a, device, dt), axis=-1),
              torch.logsumexp(torch.from_numpy(a), -1).numpy(), dt, tol)


def test_half_activations_quiet_at_infinities(device):
    """float16 silu, gelu, swiglu and softmax/log_softmax of rows holding inf (composed from
    namespace ops): torch's values, NaN included, without NumPy's warnings from the host.  gelu's
    oracle is torch's float64: its vectorized float16 / float32 loops give NaN at +inf (its scalar
    loop, taken for short tensors on some CPUs, gives inf, the limit)."""
    x = np.array([-np.inf, -1.0, 0.0, np.inf])
    xt = torch.from_numpy(x).to(torch.float16)
    x64 = torch.from_numpy(x)
    rows = np.array([[np.inf, 1.0], [-np.inf, 1.0]])
    rt = torch.from_numpy(rows).to(torch.float16)
    h = lambda a: xp.asarray(a, dtype=xp.float16, device=device)     # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for got, want in [(nn.silu(h(x)), F.silu(xt)), (nn.gelu(h(x)), F.gelu(x64)),
                          (nn.gelu(h(x), approximate="tanh"), F.gelu(x64, approximate="tanh")),
                          (nn.swiglu(h(x), h(x)), F.silu(xt) * xt),
                          (nn.softmax(h(rows), axis=-1), F.softmax(rt, -1)),
                          (nn.log_softmax(h(rows), axis=-1), F.log_softmax(rt, -1))]:
            assert got.dtype == xp.float16
            np.testing.assert_allclose(to_numpy(got).astype(np.float64), want.double().numpy(),
                                       rtol=1e-3, atol=1e-3)


def test_logsumexp(device):
    dt, tol = fdt(device)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 6, 9)) * 30
    a[0, 0] = -np.inf
    a[1, 1, 2] = np.inf
    t = torch.from_numpy(a)
    for axis, keep in ((-1, False), (1, True), ((0, 2), False)):
        close(nn.logsumexp(put(a, device, dt), axis=axis, keepdims=keep),
              torch.logsumexp(t, axis, keepdim=keep).numpy(), dt, tol * 10)
    with pytest.raises(TypeError, match=r"ruda.nn.logsumexp: x: expected a real floating"):
        nn.logsumexp(put([1, 2], device, xp.int32), axis=0)


def test_row_ops_over_an_empty_axis(device):
    """softmax and log_softmax of an empty axis are empty, logsumexp over one is -inf (an empty
    sum), as torch; empty axes kept or reduced, with keepdims."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(12)
    for shape in ((5, 0), (0,), (0, 5), (3, 0, 4)):
        a = rng.standard_normal(shape)
        t = torch.from_numpy(a)
        for axis in range(-len(shape), len(shape)):
            for name in ("softmax", "log_softmax"):
                got = getattr(nn, name)(put(a, device, dt), axis=axis)
                assert got.shape == shape
                close(got, getattr(F, name)(t, axis).numpy(), dt, tol)
            for keep in (False, True):
                close(nn.logsumexp(put(a, device, dt), axis=axis, keepdims=keep),
                      torch.logsumexp(t, axis, keepdim=keep).numpy(), dt, tol)
        close(nn.logsumexp(put(a, device, dt), axis=None),
              torch.logsumexp(t, tuple(range(len(shape)))).numpy(), dt, tol)


def test_logsumexp_repeated_axis(device):
    dt, _ = fdt(device)
    x = put(np.random.default_rng(13).standard_normal((2, 3, 4)), device, dt)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        torch.logsumexp(torch.zeros(2, 3, 4), (1, 1))
    for axis in ((1, 1), (1, -2), [0, 2, -1]):
        with pytest.raises(ValueError, match=r"ruda.nn.logsumexp: axis: expected distinct axes, "
                           rf"got {re.escape(repr(axis))}"):
            nn.logsumexp(x, axis=axis)


def test_erf(device):
    dt, tol = fdt(device)
    z = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 1e-10, -1e-300, 0.999, 1.0, 1.001, 30.0,
                                                   np.inf, -np.inf, np.nan]])
    want = torch.erf(torch.from_numpy(z)).numpy()
    got = nn.erf(put(z, device, dt))
    close(got, want, dt, 4e-16 if dt == xp.float64 else 1e-6)
    if dt == xp.float64:                      # relative accuracy near 0
        small = np.geomspace(1e-300, 0.5, 200)
        rel = to_numpy(nn.erf(put(small, device, dt))) / np.array([math.erf(v) for v in small]) - 1
        assert np.abs(rel).max() < 4e-16
    with pytest.raises(TypeError, match=r"ruda.nn.erf: x: expected a real floating"):
        nn.erf(put([1], device, xp.int32))


def test_linear_swiglu(device):
    """silu(x @ Wg.T + bg) * (x @ Wu.T + bu) for W = [Wg; Wu] stacked, as torch computes it."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(17)
    for lead in [(1, 1), (3,), (2, 4)]:
        x, w, b = rng.standard_normal(lead + (24,)), rng.standard_normal((22, 24)) / 4, rng.standard_normal(22)
        tx, tw, tb = (torch.from_numpy(v) for v in (x, w, b))
        for bias, tbias in [(None, None), (b, tb)]:
            g, u = F.linear(tx, tw[:11], None if tbias is None else tbias[:11]), \
                F.linear(tx, tw[11:], None if tbias is None else tbias[11:])
            got = nn.linear_swiglu(put(x, device, dt), put(w, device, dt),
                                   None if bias is None else put(bias, device, dt))
            assert got.shape == lead + (11,)
            close(got, (F.silu(g) * u).numpy(), dt, tol * 10)
    with pytest.raises(ValueError, match=r"ruda.nn.linear_swiglu: weight: expected an even number"):
        nn.linear_swiglu(put(x, device, dt), put(w[:21], device, dt))
    with pytest.raises(ValueError, match=r"ruda.nn.linear_swiglu: x: expected last axis of length"):
        nn.linear_swiglu(put(x, device, dt), put(w[:, :20], device, dt))


def test_rms_norm_linear_and_add_linear(device):
    """A pre-norm block's fused pieces as torch composes them: linear (or silu(g) * u) of
    rms_norm(x), and residual + linear(x); bias and no bias; bad input named."""
    dt, tol = fdt(device)
    rng = np.random.default_rng(23)
    for lead in [(1, 1), (3,), (2, 4)]:
        x, g = rng.standard_normal(lead + (24,)), rng.standard_normal(24)
        w, b = rng.standard_normal((22, 24)) / 4, rng.standard_normal(22)
        res = rng.standard_normal(lead + (22,))
        tx, tg, tw, tb, tr = (torch.from_numpy(v) for v in (x, g, w, b, res))
        th = F.rms_norm(tx, (24,), tg, 1e-5)
        for bias, tbias in [(None, None), (b, tb)]:
            put_b = None if bias is None else put(bias, device, dt)
            got = nn.rms_norm_linear(put(x, device, dt), put(g, device, dt), put(w, device, dt),
                                     put_b, eps=1e-5)
            assert got.shape == lead + (22,)
            close(got, F.linear(th, tw, tbias).numpy(), dt, tol * 10)
            got = nn.rms_norm_linear(put(x, device, dt), put(g, device, dt), put(w, device, dt),
                                     put_b, eps=1e-5, swiglu=True)
            gt = F.linear(th, tw[:11], None if tbias is None else tbias[:11])
            ut = F.linear(th, tw[11:], None if tbias is None else tbias[11:])
            close(got, (F.silu(gt) * ut).numpy(), dt, tol * 10)
            got = nn.add_linear(put(res, device, dt), put(x, device, dt), put(w, device, dt),
                                put_b)
            close(got, (tr + F.linear(tx, tw, tbias)).numpy(), dt, tol * 10)
    # errors name the function called and its own argument, on every path
    with pytest.raises(ValueError, match=r"ruda.nn.rms_norm_linear: x: expected last axis of length"):
        nn.rms_norm_linear(put(x, device, dt), put(g, device, dt), put(w[:, :20], device, dt))
    with pytest.raises(ValueError, match=r"ruda.nn.rms_norm_linear: norm_weight: expected shape"):
        nn.rms_norm_linear(put(x, device, dt), put(g[:20], device, dt), put(w, device, dt))
    with pytest.raises(ValueError, match=r"ruda.nn.rms_norm_linear: weight: expected an even number"):
        nn.rms_norm_linear(put(x, device, dt), put(g, device, dt), put(w[:21], device, dt),
                           swiglu=True)
    with pytest.raises(ValueError, match=r"ruda.nn.add_linear: weight: expected 2 dimensions"):
        nn.add_linear(put(res, device, dt), put(x, device, dt), put(w[0], device, dt))
    with pytest.raises(ValueError, match=r"ruda.nn.add_linear: bias: expected shape"):
        nn.add_linear(put(res, device, dt), put(x, device, dt), put(w, device, dt),
                      put(w[:3, 0], device, dt))
    with pytest.raises(ValueError, match=r"ruda.nn.add_linear: residual: expected the product's shape"):
        nn.add_linear(put(res[..., :20], device, dt), put(x, device, dt), put(w, device, dt))


def test_linear_embedding(device):
    dt, tol = fdt(device)
    rng = np.random.default_rng(7)
    x, w, b = rng.standard_normal((2, 3, 5)), rng.standard_normal((4, 5)), rng.standard_normal(4)
    want = F.linear(*(torch.from_numpy(v) for v in (x, w, b))).numpy()
    close(nn.linear(put(x, device, dt), put(w, device, dt), put(b, device, dt)), want, dt, tol)
    close(nn.linear(put(x, device, dt), put(w, device, dt)),
          F.linear(torch.from_numpy(x), torch.from_numpy(w)).numpy(), dt, tol)
    with pytest.raises(ValueError, match=r"ruda.nn.linear: x: expected last axis of length"):
        nn.linear(put(x, device, dt), put(w.T, device, dt))
    with pytest.raises(ValueError, match=r"ruda.nn.linear: bias: expected shape \(4,\)"):
        nn.linear(put(x, device, dt), put(w, device, dt), put(b[:3], device, dt))
    with pytest.raises(TypeError, match=r"ruda.nn.linear: weight: expected x's dtype"):
        nn.linear(put(x, device, dt), put(w, device, xp.int32))
    idx = rng.integers(0, 4, (3, 2))
    got = nn.embedding(put(idx, device, xp.int32), put(w, device, dt))
    want = F.embedding(torch.from_numpy(idx), torch.from_numpy(w)).numpy().astype(np.dtype(dt))
    close(got, want, dt, 0)                   # rows copied exactly
    with pytest.raises(IndexError, match=r"ruda.nn.embedding: indices: expected values in \[0, 4\)"):
        nn.embedding(put([0, 4], device, xp.int32), put(w, device, dt))
    with pytest.raises(TypeError, match=r"ruda.nn.embedding: indices: expected an integer dtype"):
        nn.embedding(put([0.0], device, dt), put(w, device, dt))


def test_one_hot(device):
    idt = xp.__array_namespace_info__().default_dtypes(device=device)["integral"]
    a = np.array([[0, 3], [2, 1]])
    x = put(a, device, xp.int32)
    for n in (-1, 6):
        got = nn.one_hot(x, n)
        assert got.dtype == idt
        np.testing.assert_array_equal(to_numpy(got), F.one_hot(torch.from_numpy(a), n).numpy())
    with pytest.raises(IndexError, match=r"ruda.nn.one_hot: x: expected values in \[0, 3\)"):
        nn.one_hot(x, 3)
    with pytest.raises(TypeError, match=r"ruda.nn.one_hot: x: expected an integer dtype"):
        nn.one_hot(put([1.0], device, xp.float32))
    small = np.array([1, 255, 7], np.uint8)     # more classes than uint8 holds: no wraparound
    got = nn.one_hot(put(small, device, xp.uint8), 300)
    np.testing.assert_array_equal(to_numpy(got),
                                  F.one_hot(torch.from_numpy(small.astype(np.int64)), 300).numpy())


def test_dropout(device):
    dt, _ = fdt(device)
    x = xp.ones((64, 64), dtype=dt, device=device)
    assert nn.dropout(x) is x                 # inference: identity
    g = xp.random.Generator(3) if hasattr(xp, "random") else None
    y = to_numpy(nn.dropout(x, p=0.25, training=True, generator=g))
    kept = y != 0
    assert 0.70 < kept.mean() < 0.80
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    y2 = to_numpy(nn.dropout(x, p=0.25, training=True, generator=xp.random.Generator(3)))
    np.testing.assert_array_equal(y, y2)      # same seed, same mask
    assert not to_numpy(nn.dropout(x, p=1.0, training=True)).any()
    with pytest.raises(ValueError, match=r"ruda.nn.dropout: p: expected a number in \[0.0, 1.0\]"):
        nn.dropout(x, p=1.5, training=True)


def test_dropout_kernel_words_and_composed_path(monkeypatch):
    """The host's fused dropout draws the very words of ruda.random (bit for bit, any seed and
    call number, any length) and gives what the composed path gives, call after call."""
    from ruda.backends.host import _nn as k, _philox
    if _philox.words(0, 0, 1) is None:
        pytest.skip("Numba is not installed: dropout composes ruda.random")
    for seed, calls, n in ((0, 0, 1), (3, 1, 1003), (2**40 + 17, 2**33 + 5, 4097)):
        g = xp.random.Generator(seed)
        g.calls = calls
        np.testing.assert_array_equal(_philox.words(seed, calls, n), to_numpy(g.bits((n,))))
    rng = np.random.default_rng(11)
    for dt in (xp.float32, xp.float64):
        x = xp.asarray(rng.standard_normal((37, 29)), dtype=dt)
        g1, g2 = xp.random.Generator(5), xp.random.Generator(5)
        fused = [to_numpy(nn.dropout(x, p=p, training=True, generator=g1)) for p in (0.3, 0.9)]
        with monkeypatch.context() as m:
            m.setattr(k, "dropout", None)
            composed = [to_numpy(nn.dropout(x, p=p, training=True, generator=g2))
                        for p in (0.3, 0.9)]
        assert g1.calls == g2.calls == 2
        for a, b in zip(fused, composed):
            assert a.dtype == b.dtype == np.dtype(dt)
            np.testing.assert_array_equal(a, b)


def test_softplus_with_a_threshold_past_exp_overflow(device):
    """softplus(x) ~ x where beta x passes float32 exp's range below the threshold: the host's
    float32 and bfloat16 loop took its underflow branch there (softplus(90) was 8e-40), cuda's
    log1p(exp(beta x)) overflowed to inf; negative beta mirrors it."""
    x = np.array([50.0, 87.5, 88.5, 90.0, 100.0, 150.0, -50.0, -90.0, -100.0])
    for dt, rtol in ((xp.float32, 2e-6), (xp.bfloat16, 2**-8), (xp.float16, 2**-11)):
        try:
            a = xp.asarray(x, dtype=dt, device=device)
        except (TypeError, ValueError):             # float16 without the adapter's shader-f16
            continue
        t = torch.from_numpy(to_numpy(a).astype(np.float64))
        for beta in (1.0, 2.0, -1.0):
            got = nn.softplus(a, beta=beta, threshold=200.0)
            assert got.dtype == dt
            g = to_numpy(got)
            want = F.softplus(t, beta=beta, threshold=200.0).numpy().astype(g.dtype)   # rounded
            np.testing.assert_allclose(g.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-30,
                                       err_msg=f"{dt} beta {beta}")


@pytest.mark.parametrize("numba", [True, False], ids=["numba", "numpy"])
def test_host_float32_elementwise_kernels(monkeypatch, numba):
    """float32 elu, silu, sigmoid, softplus, hardsigmoid, hardswish, glu and logsumexp on the
    host (one Numba pass each, or NumPy where Numba is missing) within a few float32 ulp of
    torch in float64."""
    from ruda.backends.host import _nn as k
    if not numba:
        for name in ("_act32_flat", "_glu32_rows", "_lse32_rows"):
            monkeypatch.setattr(k, name, None)
    rng = np.random.default_rng(12)
    a = np.concatenate([rng.standard_normal(4000) * 6, np.geomspace(1e-30, 1e-3, 30),
                        -np.geomspace(1e-30, 1e-3, 30), [0.0, 87.0, -87.0, 89.0, -89.0, 1e4,
                        -1e4, np.inf, -np.inf, np.nan]]).astype(np.float32)
    t = torch.from_numpy(a.astype(np.float64))
    x = xp.asarray(a)
    for name, kw in (("elu", {}), ("elu", {"alpha": 0.3}), ("silu", {}), ("sigmoid", {}),
                     ("softplus", {}), ("softplus", {"beta": 0.5, "threshold": 30.0}),
                     ("hardsigmoid", {}), ("hardswish", {})):
        got = getattr(nn, name)(x, **kw)
        assert got.dtype == xp.float32
        want = getattr(F, name)(t, **kw).numpy()
        np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6,
                                   equal_nan=True, err_msg=f"{name} {kw}")
    # softplus's tail below float32's normals: exp(x) itself, to the subnormals, then 0
    tail = np.array([-np.inf, -200, -104.5, -103.9, -100, -95, -90, -88, -87.3], np.float32)
    for beta in (1.0, 2.0):
        want = F.softplus(torch.from_numpy(tail.astype(np.float64)), beta=beta).numpy()
        np.testing.assert_allclose(np.asarray(nn.softplus(xp.asarray(tail), beta=beta)), want,
                                   rtol=1e-5, atol=3e-45, err_msg=f"softplus tail {beta}")
    b = a[:4070].reshape(55, 74)
    np.testing.assert_allclose(np.asarray(nn.glu(xp.asarray(b), axis=-1)),
                               F.glu(torch.from_numpy(b.astype(np.float64)), -1).numpy(),
                               rtol=2e-6, atol=1e-6)
    c = rng.standard_normal((5, 6, 37)).astype(np.float32) * 20
    c[0, 0, 0], c[2, 2, 3] = np.nan, np.inf
    c[1, 1, :], c[3, 3, :] = -np.inf, -1e30           # rows of -inf, and of one huge negative
    tc = torch.from_numpy(c.astype(np.float64))
    for axis in (-1, 0, (0, 2), None):
        for keep in (False, True):
            got = nn.logsumexp(xp.asarray(c), axis=axis, keepdims=keep)
            want = torch.logsumexp(tc, tuple(range(3)) if axis is None else axis, keep).numpy()
            assert got.dtype == xp.float32 and got.shape == want.shape
            np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6,
                                       equal_nan=True, err_msg=f"logsumexp {axis} {keep}")


def test_normalize(device):
    dt, tol = fdt(device)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 4, 5))
    a[0, :, 0] = 0                            # eps guards the zero vector
    for p, axis in ((2.0, 1), (1.0, -1), (3.0, 0)):
        close(nn.normalize(put(a, device, dt), p=p, axis=axis),
              F.normalize(torch.from_numpy(a), p=p, dim=axis).numpy(), dt, tol * 10)
    # the last axis with p = 2 (a fused kernel where the device has one): zero rows, rows of
    # one element, large rows past the host's thread split, a non-default eps
    for shape in ((6, 1), (5, 300), (300, 1000)):
        a = rng.standard_normal(shape) * 3
        a[1] = 0
        for eps in (1e-12, 0.5):
            close(nn.normalize(put(a, device, dt), axis=-1, eps=eps),
                  F.normalize(torch.from_numpy(a), dim=-1, eps=eps).numpy(), dt, tol * 10)
    a = rng.standard_normal((2, 3, 7))
    close(nn.normalize(put(a, device, dt), axis=2), F.normalize(torch.from_numpy(a), dim=2).numpy(),
          dt, tol * 10)
    for v, p, eps in ((-3.0, 2.0, 1e-12), (0.25, 1.0, 0.5), (0.0, 2.0, 1e-12)):   # 0-d, as torch
        want = F.normalize(torch.tensor(v, dtype=torch.float64), p=p, dim=0, eps=eps).numpy()
        close(nn.normalize(put(np.asarray(v), device, dt), p=p, axis=0, eps=eps), want, dt, tol)
    a = rng.standard_normal((300, 1000)) * 3
    close(nn.normalize(put(a, device, xp.float32), axis=1),
          F.normalize(torch.from_numpy(a.astype(np.float32).astype(np.float64)), dim=1).numpy(),
          xp.float32, 2e-6)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_negative_border_modes(device, mode):
    """Negative pads crop in every mode, as torch: reflect and replicate take their borders from
    the uncropped x, circular wraps the cropped one. Random shapes and pads (circular pads at
    most the cropped length, where torch's own result is defined)."""
    dt, _ = fdt(device)
    rng = np.random.default_rng(14)
    checked = 0
    while checked < 12:
        nd = int(rng.integers(1, 4))
        shape = (2,) + tuple(int(v) for v in rng.integers(2, 7, nd))
        pads = [int(v) for v in rng.integers(-4, 5, 2 * nd)]
        if not any(v < 0 for v in pads):
            continue
        sizes = shape[::-1]
        lens = [sizes[i] + pads[2 * i] + pads[2 * i + 1] for i in range(nd)]
        cropped = [sizes[i] - max(0, -pads[2 * i]) - max(0, -pads[2 * i + 1]) for i in range(nd)]
        if min(lens) < 1 or mode == "reflect" and max(pads) >= min(sizes[:nd]) or \
                mode == "circular" and any(max(pads[2 * i:2 * i + 2]) > cropped[i]
                                           for i in range(nd)):
            continue
        a = rng.standard_normal(shape).astype(np.dtype(dt))    # exact in the device's float
        close(nn.pad(put(a, device, dt), pads, mode=mode),
              F.pad(torch.from_numpy(a), pads, mode=mode).numpy(), dt, 0)
        checked += 1


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad(device, mode):
    dt, _ = fdt(device)
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    t = torch.from_numpy(a)
    kw = {"value": 7.5} if mode == "constant" else {}
    for arr, p in ((a[0], (1, 2)), (a, (2, 0, 1, 3)), (a, (1, 1, 0, 2, 2, 0)), (a, (4, 4, 3, 1))):
        close(nn.pad(put(arr, device, dt), p, mode=mode, **kw),
              F.pad(torch.from_numpy(arr), p, mode=mode, **kw).numpy(), dt, 0)
    if mode == "constant":
        close(nn.pad(put(a, device, dt), (-1, 2)), F.pad(t, (-1, 2)).numpy(), dt, 0)
        for p in ((-1, -2, 2, -1), (0, 0, 3, 0, -1, 1), (-2, -2, -1, -1)):   # crops with pads
            close(nn.pad(put(a, device, dt), p, value=-3.0), F.pad(t, p, value=-3.0).numpy(),
                  dt, 0)
        i = np.arange(12, dtype=np.int32).reshape(3, 4)
        got = nn.pad(xp.asarray(i, device=device), (1, 0, 0, 2), value=9)
        assert got.dtype == xp.int32
        np.testing.assert_array_equal(to_numpy(got), F.pad(torch.from_numpy(i), (1, 0, 0, 2),
                                                           value=9).numpy())
    if mode == "reflect":
        with pytest.raises(ValueError, match=r"ruda.nn.pad: pad: expected values < the axis"):
            nn.pad(put(a, device, dt), (5, 0), mode=mode)
    with pytest.raises(ValueError, match=r"ruda.nn.pad: pad: expected an even length"):
        nn.pad(put(a, device, dt), (1, 2, 3), mode=mode)
    if mode != "constant":
        with pytest.raises(ValueError, match=r"ruda.nn.pad: pad: expected an output length n \+ "
                           r"lo \+ hi >= 0 on axis 3 \(n = 5\), got \(-3, -3\)"):
            nn.pad(put(a, device, dt), (-3, -3), mode=mode)
    with pytest.raises(ValueError, match=r"ruda.nn.pad: mode"):
        nn.pad(put(a, device, dt), (1, 1), mode="edge")


def test_pad_value_fits_the_dtype(device):
    """value converted as torch's pad converts it: truncated toward 0 for integer x, NaN and
    infinities for floating x; a value outside x's dtype (torch: "cannot be converted ...
    without overflow") a ValueError naming ruda.nn.pad and value, not a wrapped value."""
    u = np.array([[1, 2]], np.uint8)
    x = xp.asarray(u, device=device)
    for v in (1.5, 2.7, 255, True, np.int64(7), np.float32(3.5)):
        got = nn.pad(x, (1, 1), value=v)
        assert got.dtype == xp.uint8
        np.testing.assert_array_equal(to_numpy(got),
                                      F.pad(torch.from_numpy(u), (1, 1), value=v).numpy())
    for v in (-1, 256, -0.5, np.nan, np.inf):
        with pytest.raises(RuntimeError, match="without overflow"):
            F.pad(torch.from_numpy(u), (1, 1), value=v)
        with pytest.raises(ValueError, match=r"ruda.nn.pad: value: expected a number within "
                           rf"uint8's range \[0, 255\], got {re.escape(str(v))}$"):
            nn.pad(x, (1, 1), value=v)
    f = np.array([[1.0, 2.0]], np.float32)
    for v in (np.nan, -np.inf):
        close(nn.pad(xp.asarray(f, device=device), (1, 0), value=v),
              F.pad(torch.from_numpy(f), (1, 0), value=v).numpy(), xp.float32, 0)
    with pytest.raises(ValueError, match=r"ruda.nn.pad: value: expected NaN, an infinity or a "
                       r"number within float32's range \[-3.40\d*e\+38, 3.40\d*e\+38\], got 1e\+39"):
        nn.pad(xp.asarray(f, device=device), (1, 0), value=1e39)
    with pytest.raises(TypeError, match=r"ruda.nn.pad: value: expected a number, got str"):
        nn.pad(x, (1, 1), value="0")


def test_pad_returns_a_new_array(device):
    """Zero pads, and border modes that only crop, still return a new array, as torch:
    writing into the result leaves x unchanged."""
    dt, _ = fdt(device)
    a = np.random.default_rng(15).standard_normal((2, 3, 4, 5)).astype(np.dtype(dt))
    for p, mode in (((0, 0), "constant"), ((0, 0, 0, 0), "constant"),
                    ((-1, -1, 0, 0), "reflect"), ((-1, 0, 0, -2), "replicate"),
                    ((0, -2, -1, 0), "circular")):
        x = put(a, device, dt)
        got = nn.pad(x, p, mode=mode)
        close(got, F.pad(torch.from_numpy(a), p, mode=mode).numpy(), dt, 0)
        got[...] = 7.0
        close(x, a, dt, 0)
