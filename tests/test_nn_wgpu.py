"""The fused wgpu nn kernels (ruda/backends/wgpu/_nn.py): each kernel called directly and through
ruda.nn, float32, against torch CPU in float64 on fresh random inputs; rows short, long and of
odd length; weight/bias present or not; -inf rows.  The same file runs under the browser-class
profile (``RUDA_WGPU_WITHOUT=shader-f64,shader-int64``) in CI's second pass, and one test here
runs the kernels in a fresh process with that profile."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from ruda.nn._check import native, wrap

torch = pytest.importorskip("torch")
F = torch.nn.functional

NS = (1, 7, 64, 1000, 5000)
TOL = dict(rtol=2e-5, atol=2e-6)


def host(a):
    return np.asarray(a.to_device("cpu"))


def T(a):
    return None if a is None else torch.from_numpy(a.astype(np.float64))


def want(op, a, w=None, b=None, eps=1e-5):
    t = T(a)
    if op == "softmax":
        return torch.softmax(t, -1).numpy()
    if op == "log_softmax":
        return torch.log_softmax(t, -1).numpy()
    if op == "layer_norm":
        return F.layer_norm(t, a.shape[-1:], T(w), T(b), eps=eps).numpy()
    return F.rms_norm(t, a.shape[-1:], T(w), eps=eps).numpy()


def direct(dev, op, x, w=None, b=None, eps=1e-5):
    k = dev.backend.nn
    nx, nw, nb = (None if a is None else native(a) for a in (x, w, b))
    if op in ("softmax", "log_softmax"):
        r = k.softmax(nx, op == "log_softmax")
    elif op == "layer_norm":
        r = k.layer_norm(nx, nw, nb, eps)
    else:
        r = k.rms_norm(nx, nw, eps)
    assert r is not NotImplemented
    return wrap(r, dev)


def through_nn(op, x, w=None, b=None, eps=1e-5):
    n = x.shape[-1]
    if op == "softmax":
        return nn.softmax(x, axis=-1)
    if op == "log_softmax":
        return nn.log_softmax(x, axis=-1)
    if op == "layer_norm":
        return nn.layer_norm(x, (n,), w, b, eps=eps)
    return nn.rms_norm(x, (n,), w, eps=eps)


def f32(dev, a):
    return xp.asarray(np.asarray(a, np.float32), device=dev)


@pytest.mark.parametrize("op,affine", [("softmax", False), ("log_softmax", False), ("layer_norm", False),
                                       ("layer_norm", True), ("rms_norm", False), ("rms_norm", True)])
def test_row_kernels(wgpu_device, op, affine):
    dev = wgpu_device
    rng = np.random.default_rng([17, len(op), affine])
    for n in NS:
        a = (rng.standard_normal((5, n)) * 4 + rng.uniform(-3, 3, (5, 1))).astype(np.float32)
        w = rng.standard_normal(n).astype(np.float32) if affine else None
        b = rng.standard_normal(n).astype(np.float32) if affine and op == "layer_norm" else None
        eps = 1e-3 if op == "layer_norm" else 1e-5
        exp = want(op, a, w, b, eps)
        args = [f32(dev, a), None if w is None else f32(dev, w), None if b is None else f32(dev, b)]
        for how in (direct, through_nn):
            got = how(dev, op, *args, eps=eps) if how is direct else how(op, *args, eps=eps)
            assert got.dtype == xp.float32 and got.shape == a.shape
            np.testing.assert_allclose(host(got), exp, **TOL, err_msg=f"{op} n={n} {how.__name__}")


def test_layer_norm_bias_only_and_offset(wgpu_device):
    """A bias without weight, and rows that are a view at an offset (the kernel reads in place)."""
    dev = wgpu_device
    rng = np.random.default_rng(5)
    a = rng.standard_normal((9, 300)).astype(np.float32) * 3 + 10
    b = rng.standard_normal(300).astype(np.float32)
    x = f32(dev, a)[2:]
    got = direct(dev, "layer_norm", x, None, f32(dev, b))
    np.testing.assert_allclose(host(got), want("layer_norm", a[2:], None, b), **TOL)
    got = nn.rms_norm(f32(dev, a)[3:], 300)
    np.testing.assert_allclose(host(got), want("rms_norm", a[3:]), **TOL)
    flat = rng.standard_normal(41).astype(np.float32)      # offset 1: no vec4 loads
    x = xp.reshape(f32(dev, flat)[1:], (5, 8))
    np.testing.assert_allclose(host(direct(dev, "softmax", x)), want("softmax", flat[1:].reshape(5, 8)), **TOL)
    np.testing.assert_allclose(host(direct(dev, "rms_norm", x)), want("rms_norm", flat[1:].reshape(5, 8)), **TOL)


def test_softmax_infinities(wgpu_device):
    """Rows of only -inf give NaN (as torch); -inf elements among finite ones give 0 / -inf."""
    dev = wgpu_device
    rng = np.random.default_rng(6)
    for n in (1, 7, 1000):
        a = rng.standard_normal((4, n)).astype(np.float32)
        a[1] = -np.inf
        a[2, ::3] = -np.inf
        a[3, 1::2] = -np.inf
        for op in ("softmax", "log_softmax"):
            exp = want(op, a)
            for got in (direct(dev, op, f32(dev, a)), through_nn(op, f32(dev, a))):
                g = host(got)
                assert np.isnan(g[1]).all()
                np.testing.assert_allclose(g, exp, **TOL, equal_nan=True)


def test_softmax_other_axis_and_many_rows(wgpu_device):
    """softmax along axis 0 (ruda.nn moves it last) and more rows than one grid dimension holds
    is exercised by the grid helper; here 70,000 rows of 3."""
    dev = wgpu_device
    rng = np.random.default_rng(7)
    a = rng.standard_normal((70000, 3)).astype(np.float32)
    got = nn.softmax(f32(dev, a), axis=-1)
    np.testing.assert_allclose(host(got), want("softmax", a), **TOL)
    a = rng.standard_normal((33, 5)).astype(np.float32)
    got = nn.log_softmax(f32(dev, a), axis=0)
    np.testing.assert_allclose(host(got), torch.log_softmax(T(a), 0).numpy(), **TOL)


def test_swiglu(wgpu_device):
    dev = wgpu_device
    rng = np.random.default_rng(8)
    for shape in ((1,), (7, 3), (64, 1000)):
        g = (rng.standard_normal(shape) * 6).astype(np.float32)
        u = rng.standard_normal(shape).astype(np.float32)
        g.flat[0] = -200.0            # exp(-g) overflows: silu -> -0
        exp = (F.silu(T(g)) * T(u)).numpy()
        r = dev.backend.nn.swiglu(native(f32(dev, g)), native(f32(dev, u)))
        np.testing.assert_allclose(host(wrap(r, dev)), exp, **TOL)
        got = nn.swiglu(f32(dev, g), f32(dev, u))
        assert got.dtype == xp.float32
        np.testing.assert_allclose(host(got), exp, **TOL)


def test_declines_other_dtypes(wgpu_device):
    """float64 (where the adapter has it) goes to the composed path: the kernel says
    NotImplemented and ruda.nn still answers, in float64."""
    dev = wgpu_device
    k = dev.backend.nn
    assert k.top_k is None and k.apply_rope is None
    if xp.float64 not in xp.__array_namespace_info__().dtypes(device=dev).values():
        pytest.skip("no float64 on this adapter")
    a = np.random.default_rng(9).standard_normal((3, 10))
    x = xp.asarray(a, device=dev)
    assert k.softmax(native(x), False) is NotImplemented
    assert k.layer_norm(native(x), None, None, 1e-5) is NotImplemented
    x4 = native(xp.reshape(x, (1, 1, 3, 10)))
    assert k.sdpa(x4, x4, x4, None, False, 1.0, None) is NotImplemented
    got = nn.softmax(x, axis=-1)
    assert got.dtype == xp.float64
    np.testing.assert_allclose(host(got), want("softmax", a), rtol=1e-12, atol=1e-12)


PROFILE = "shader-f64,shader-int64"
_SCRIPT = """
import numpy as np, torch, ruda as xp, ruda.nn as nn
rng = np.random.default_rng(11)
worst = 0.0
for n in (7, 1000):
    a = rng.standard_normal((4, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    x, wx = xp.asarray(a, device="wgpu"), xp.asarray(w, device="wgpu")
    assert x.device.backend.nn.softmax is not None
    t, tw = torch.from_numpy(a.astype(np.float64)), torch.from_numpy(w.astype(np.float64))
    F = torch.nn.functional
    for got, exp in ((nn.softmax(x, axis=-1), torch.softmax(t, -1)),
                     (nn.log_softmax(x, axis=-1), torch.log_softmax(t, -1)),
                     (nn.layer_norm(x, n, wx, wx), F.layer_norm(t, (n,), tw, tw)),
                     (nn.rms_norm(x, n, wx), F.rms_norm(t, (n,), tw))):
        assert got.dtype == xp.float32
        np.testing.assert_allclose(np.asarray(got.to_device("cpu")), exp.numpy(), rtol=2e-5, atol=2e-6)
print("ok")
"""


def test_browser_profile(wgpu_device):
    """The kernels under ``RUDA_WGPU_WITHOUT=shader-f64,shader-int64`` (a fresh process, unless
    this one already runs that profile)."""
    if os.environ.get("RUDA_WGPU_WITHOUT") == PROFILE:
        code = compile(_SCRIPT, "<profile>", "exec")
        exec(code, {})
        return
    env = dict(os.environ, RUDA_WGPU_WITHOUT=PROFILE)
    r = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]


def _attn_ref(q, k, v, causal, scale, mask=None):
    q, k, v = (T(a) for a in (q, k, v))
    G = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(G, 1), v.repeat_interleave(G, 1)
    s = q @ k.transpose(-1, -2) * scale
    L, S = s.shape[-2:]
    if causal:      # lower-right aligned
        s = s.masked_fill(torch.arange(S)[None] > torch.arange(L)[:, None] + S - L, float("-inf"))
    if mask is not None:
        s = s.masked_fill(~torch.from_numpy(mask), float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ v).numpy()   # no visible key: 0


@pytest.mark.parametrize("shape", [(2, 4, 2, 40, 33, 16, 16), (2, 4, 4, 1, 40, 16, 8),
                                   (1, 2, 1, 70, 70, 64, 64), (2, 4, 2, 40, 25, 16, 16),
                                   (1, 3, 1, 5, 37, 7, 3)])
def test_sdpa(wgpu_device, shape, monkeypatch):
    """Tiled attention, causal or not, GQA head mapping, L > S (causal rows with no key: 0),
    key counts that are not a multiple of the tile, odd head dims; direct and through ruda.nn
    (the size bound of CPU adapters lifted, so the kernel runs)."""
    dev = wgpu_device
    monkeypatch.setattr(dev.backend.nn, "SDPA_CPU_MAX", 1 << 40)
    B, Hq, Hkv, L, S, D, Dv = shape
    rng = np.random.default_rng(list(shape))
    q = rng.standard_normal((B, Hq, L, D)).astype(np.float32)
    k = rng.standard_normal((B, Hkv, S, D)).astype(np.float32)
    v = rng.standard_normal((B, Hkv, S, Dv)).astype(np.float32)
    for causal in (False, True):
        scale = 0.3 if causal else 1 / np.sqrt(D)
        exp = _attn_ref(q, k, v, causal, scale)
        qx, kx, vx = (f32(dev, a) for a in (q, k, v))
        r = dev.backend.nn.sdpa(native(qx), native(kx), native(vx), None, causal, scale, None)
        assert r is not NotImplemented
        got = wrap(r, dev)
        assert got.dtype == xp.float32 and got.shape == (B, Hq, L, Dv)
        np.testing.assert_allclose(host(got), exp, **TOL)
        got = nn.scaled_dot_product_attention(qx, kx, vx, is_causal=causal, scale=scale,
                                              enable_gqa=Hq != Hkv)
        np.testing.assert_allclose(host(got), exp, **TOL)


def test_sdpa_declines_mask_and_window(wgpu_device):
    """A mask or sliding window goes to the composed path (still correct through ruda.nn)."""
    dev = wgpu_device
    rng = np.random.default_rng(21)
    q, k, v = (rng.standard_normal((1, 2, 9, 8)).astype(np.float32) for _ in range(3))
    m = rng.uniform(size=(9, 9)) > 0.3
    qx, kx, vx = (f32(dev, a) for a in (q, k, v))
    mx = xp.asarray(m, device=dev)
    kern = dev.backend.nn.sdpa
    assert kern(native(qx), native(kx), native(vx), native(mx), False, 0.5, None) is NotImplemented
    assert kern(native(qx), native(kx), native(vx), None, True, 0.5, 3) is NotImplemented
    if dev.backend.nn.cpu:      # past the CPU adapter's bound: composed
        big = native(xp.zeros((1, 1, 300, 64), dtype=xp.float32, device=dev))
        assert kern(big, big, big, None, False, 0.5, None) is NotImplemented
    got = nn.scaled_dot_product_attention(qx, kx, vx, attn_mask=mx, scale=0.5)
    np.testing.assert_allclose(host(got), _attn_ref(q, k, v, False, 0.5, m), **TOL)


def test_rows_and_attention_past_the_cpu_adapters_loop_limit(wgpu_device):
    """lavapipe ends an invocation after 65,535 loop iterations, silently: a softmax row of
    2**23 + 1 and attention over 32,768 keys (one lane walking them) lost their tails. On a CPU
    adapter these go to the composed path; every adapter gives the right values."""
    dev = wgpu_device
    n = 2**23 + 1
    y = nn.softmax(xp.ones((1, n), dtype=xp.float32, device=dev), axis=-1)
    assert float(xp.min(y)) * n == pytest.approx(1.0, rel=1e-5)
    assert float(xp.max(y)) * n == pytest.approx(1.0, rel=1e-5)
    S = 32768
    q = xp.ones((1, 1, 1, 1), dtype=xp.float32, device=dev)
    # the mean of S / 2 zeros then S / 2 ones: every partial sum is a multiple of 2**-15 and
    # exact in float32 in any order, so the answer is exactly 0.5, and a lost tail makes it less
    v = xp.reshape(xp.astype(xp.arange(S, device=dev) >= S // 2, xp.float32), (1, 1, S, 1))
    o = nn.scaled_dot_product_attention(q, xp.zeros_like(v), v)
    assert float(o[0, 0, 0, 0]) == 0.5
