"""wgpu backend specifics: f64 libm accuracy, storage (pool, views, readback), batching, dtypes.

The device-parametrized suite covers the namespace on wgpu; these tests pin what only this
backend has.  Inputs are random; the oracle is NumPy (float64).
"""
import math

import numpy as np
import pytest

import ruda as xp

wgpu_mod = pytest.importorskip("wgpu")


@pytest.fixture(scope="module")
def dev():
    try:
        return xp.device("wgpu")
    except ValueError as e:
        pytest.skip(f"no wgpu device: {e}")


def _has_f64(dev):
    return xp.float64 in xp.__array_namespace_info__().dtypes(device=dev).values()


def _float(dev):
    """The device's default real floating dtype (float32 on an adapter without shader-f64)."""
    return np.dtype(xp.__array_namespace_info__().default_dtypes(device=dev)["real floating"])


def _ulps(got, ref):
    got = np.asarray(got, np.float64)
    ref = np.asarray(ref, np.float64)
    sp = np.spacing(np.abs(ref))
    sp[sp == 0] = np.finfo(np.float64).smallest_subnormal
    e = np.abs(got - ref) / sp
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    e[same] = 0
    return e


# function -> (sampler, max ULP against NumPy)
F64_UNARY = {
    "exp": (lambda r, n: r.uniform(-700, 700, n), 2), "expm1": (lambda r, n: r.uniform(-5, 5, n), 3),
    "log": (lambda r, n: np.exp(r.uniform(-690, 690, n)), 2), "log1p": (lambda r, n: r.uniform(-0.99, 50, n), 2),
    "log2": (lambda r, n: np.exp(r.uniform(-50, 50, n)), 2), "log10": (lambda r, n: np.exp(r.uniform(-50, 50, n)), 2),
    "sin": (lambda r, n: r.uniform(-1e4, 1e4, n), 3), "cos": (lambda r, n: r.uniform(-1e4, 1e4, n), 3),
    "tan": (lambda r, n: r.uniform(-1.5, 1.5, n), 3), "asin": (lambda r, n: r.uniform(-1, 1, n), 3),
    "acos": (lambda r, n: r.uniform(-1, 1, n), 3), "atan": (lambda r, n: r.uniform(-1e3, 1e3, n), 2),
    "sinh": (lambda r, n: r.uniform(-30, 30, n), 3), "cosh": (lambda r, n: r.uniform(-30, 30, n), 2),
    "tanh": (lambda r, n: r.uniform(-20, 20, n), 3), "asinh": (lambda r, n: r.uniform(-1e5, 1e5, n), 2),
    "acosh": (lambda r, n: r.uniform(1, 1e5, n), 2), "atanh": (lambda r, n: r.uniform(-0.999, 0.999, n), 3),
}


@pytest.mark.parametrize("name", sorted(F64_UNARY))
def test_f64_transcendentals_few_ulp(dev, name):
    """Written from f64 arithmetic in WGSL (drivers' f64 exp/sin are garbage): a few ULP."""
    if not _has_f64(dev):
        pytest.skip("adapter without shader-f64 (float32: tests/test_wgpu_f32_profile.py)")
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    sample, bound = F64_UNARY[name]
    x = np.concatenate([sample(rng, 1500), sample(rng, 50) * 1e-9])
    got = xp.asarray(x, device=dev)
    got = np.asarray(getattr(xp, name)(got).to_device("cpu"))
    assert _ulps(got, getattr(np, name)(x)).max() <= bound


def test_f64_trig_huge_arguments(dev):
    """Payne-Hanek reduction: sin/cos of huge arguments stay accurate."""
    if not _has_f64(dev):
        pytest.skip("adapter without shader-f64 (float32: tests/test_wgpu_f32_profile.py)")
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(1e6, 1e22, 200), -np.exp(rng.uniform(14, 690, 200))])
    a = xp.asarray(x, device=dev)
    for name in ("sin", "cos"):
        got = np.asarray(getattr(xp, name)(a).to_device("cpu"))
        # without the reduction, results for |x| >> 1e6 are unrelated to the true values
        np.testing.assert_allclose(got, getattr(np, name)(x), rtol=0, atol=4e-15)


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "pow"])
def test_f64_binary_math(dev, name):
    if not _has_f64(dev):
        pytest.skip("adapter without shader-f64")
    rng = np.random.default_rng(3)
    a = rng.uniform(0.01, 20, 2000)
    b = rng.uniform(-20, 20, 2000)
    got = np.asarray(getattr(xp, name)(xp.asarray(a, device=dev), xp.asarray(b, device=dev)).to_device("cpu"))
    bound = 4
    assert _ulps(got, getattr(np, name)(a, b)).max() <= bound


def test_small_int_dtypes_wrap_like_numpy(dev):
    rng = np.random.default_rng(1)
    for dt in (np.int8, np.uint8, np.int16, np.uint16):
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, 64, endpoint=True).astype(dt)
        b = rng.integers(info.min, info.max, 64, endpoint=True).astype(dt)
        x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
        for op in ("add", "subtract", "multiply", "bitwise_xor"):
            np.testing.assert_array_equal(np.asarray(getattr(xp, op)(x, y).to_device("cpu")), getattr(np, op)(a, b))
        np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray(a.astype(np.int32) * 7, device=dev), xp.int8)
                                                 .to_device("cpu")), (a.astype(np.int32) * 7).astype(np.int8))


def test_views_share_storage(dev):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    x = xp.asarray(a, device=dev)
    for v, ref in ((x.T, a.T), (x[1:5:2, ::-3], a[1:5:2, ::-3]), (xp.reshape(x, (48,)), a.reshape(48)),
                   (xp.broadcast_to(x[0], (3, 8)), np.broadcast_to(a[0], (3, 8))),
                   (xp.expand_dims(x, axis=1), a[:, None]), (xp.permute_dims(x, (1, 0)), a.T)):
        assert v._data.st is x._data.st                 # no copy
        np.testing.assert_array_equal(np.asarray(v.to_device("cpu")), ref)
    # arithmetic on strided views reads them in place
    np.testing.assert_allclose(np.asarray((x.T[::2] * 2).to_device("cpu")), a.T[::2] * 2)


def test_readback_is_chunked_and_exact(dev, monkeypatch):
    from ruda.backends.wgpu import _transfers
    monkeypatch.setattr(_transfers, "READ_CHUNK", 4096)
    rng = np.random.default_rng(4)
    a = rng.standard_normal(50_001).astype(_float(dev))
    x = xp.asarray(a, device=dev)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)
    np.testing.assert_array_equal(np.asarray(x[7:40_007:3].to_device("cpu")), a[7:40_007:3])


@pytest.mark.parametrize("wait", ["spin", "block", "public"])
def test_waits_and_maps(dev, monkeypatch, wait):
    """Synchronize and chunked readback through the native spin / blocking waits and maps, and
    through wgpu-py's public API, after work still running when the host asks."""
    from ruda.backends.wgpu import _transfers
    ctx = dev.backend.ctx
    ctx.synchronize()
    if wait == "public":
        monkeypatch.setattr(ctx, "nat", None)
    elif ctx.nat is None:
        pytest.skip("this wgpu-py has no native entry points")
    else:
        monkeypatch.setattr(ctx.nat, "spin", wait == "spin")
    monkeypatch.setattr(_transfers, "READ_CHUNK", 1 << 16)
    a = np.random.default_rng(6).standard_normal(300_001).astype(np.float32)
    x = xp.asarray(a, device=dev)
    y, ref = x, a
    for _ in range(30):
        y = y * 0.75 + x
        ref = ref * np.float32(0.75) + a
    s0 = ctx.stats["submits"]
    dev.backend.synchronize()
    dev.backend.synchronize()                         # nothing recorded: no empty submit
    assert ctx.stats["submits"] - s0 == 1
    z = xp.cumulative_sum(y)                          # still running when the readback waits
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), ref)
    np.testing.assert_allclose(np.asarray(z.to_device("cpu")), np.cumsum(ref, dtype=np.float64),
                               rtol=1e-4, atol=1e-2)
    assert float(xp.sum(x)) == pytest.approx(float(np.sum(a, dtype=np.float64)), rel=1e-5)


@pytest.mark.parametrize("path", ["native", "public"])
def test_a_refused_dispatch_raises_at_the_submit(dev, monkeypatch, path):
    """A dispatch the device refuses (more workgroups than its limit) raises wgpu's validation
    error when its encoder is finished and submitted, natively or through wgpu-py, and the
    context records and computes on afterwards."""
    import wgpu
    ctx = dev.backend.ctx
    if path == "public":
        monkeypatch.setattr(ctx, "nat", None)
    elif ctx.nat is None:
        pytest.skip("this wgpu-py has no native entry points")
    a = np.random.default_rng(8).standard_normal(1000).astype(np.float32)
    x = xp.asarray(a, device=dev)
    x + x
    ctx.record(ctx.last_pipe, ctx.last_bind, ctx.last_at, 1 << 20)
    with pytest.raises(wgpu.GPUValidationError):
        dev.backend.synchronize()
    np.testing.assert_array_equal(np.asarray((x * 2.0).to_device("cpu")), a * np.float32(2))


def test_the_next_pass_starts_with_the_last_bindings(dev, monkeypatch):
    """After a submit the next pass has the last pipeline and bind group set: the same reduction
    repeated after a sync (its buffers recycled) records only its dispatch; other ops after a
    sync set their own, and every result is right."""
    ctx = dev.backend.ctx
    if ctx.nat is None:
        pytest.skip("this wgpu-py has no native entry points")
    rng = np.random.default_rng(11)
    a = rng.standard_normal(70001).astype(np.float32)
    b = rng.standard_normal(70001).astype(np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    want = float(np.sum(a, dtype=np.float64))
    for _ in range(3):                                 # plan made, buffers settled in the pool
        assert float(xp.sum(x)) == pytest.approx(want, rel=1e-5)
    s = xp.sum(x)
    del s
    ctx.synchronize()
    assert ctx.last_pipe is not None and ctx.last_bind is not None
    binds = []
    real = ctx._bind
    monkeypatch.setattr(ctx, "_bind", lambda *args: (binds.append(args), real(*args)))
    s = xp.sum(x)
    assert binds == []
    assert float(s) == pytest.approx(want, rel=1e-5)
    for _ in range(2):                                 # other pipelines and buffers after syncs
        m = xp.max(y)
        ctx.synchronize()
        z = x + y
        ctx.synchronize()
        t = xp.sum(x)
        assert float(m) == np.max(b)
        np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), a + b)
        assert float(t) == pytest.approx(want, rel=1e-5)
    assert binds


def test_large_launches_are_submitted_at_once(dev, monkeypatch):
    """A launch over EAGER_ELEMS elements is submitted as soon as it is recorded; the results
    and the work recorded after it are unchanged."""
    from ruda.backends.wgpu import _queue
    ctx = dev.backend.ctx
    monkeypatch.setattr(_queue, "EAGER_ELEMS", 3000)
    a = np.random.default_rng(7).standard_normal(3001).astype(np.float32)
    x = xp.asarray(a, device=dev)
    ctx.synchronize()
    s0 = ctx.stats["submits"]
    y = x * 3.0 + 2.0                                  # two eager launches
    assert ctx.stats["submits"] - s0 == 2
    s = xp.sum(y[:-1])                                 # 3000 elements: eager first pass
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), a * np.float32(3) + np.float32(2))
    assert float(s) == pytest.approx(float(np.sum((a * 3 + 2)[:-1], dtype=np.float64)), rel=1e-5)


def test_a_repeated_large_launch_is_submitted_from_a_buffer_finished_ahead(dev, monkeypatch):
    """An eager launch repeated after a sync is submitted from a command buffer finished while
    the device ran the one before: nothing recorded for it, and it sums what the buffers hold
    then.  Anything else (other data, work recorded between, a new arena generation) records
    the call as usual, and every result is right."""
    from ruda.backends.wgpu import _queue
    ctx = dev.backend.ctx
    if ctx.nat is None:
        pytest.skip("this wgpu-py has no native entry points")
    monkeypatch.setattr(_queue, "EAGER_ELEMS", 3000)
    rng = np.random.default_rng(12)
    a, b = (rng.standard_normal(5001).astype(np.float32) for _ in range(2))
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)

    def total(v):
        return float(np.sum(v, dtype=np.float64))

    dispatched = []
    real = ctx._dispatch
    monkeypatch.setattr(ctx, "_dispatch", lambda *args: (dispatched.append(args), real(*args)))
    for _ in range(3):                      # plan made, output buffer settled in the pool
        assert float(xp.sum(x)) == pytest.approx(total(a), rel=1e-5)
    assert ctx.spec is not None
    dispatched.clear()
    for _ in range(3):
        assert float(xp.sum(x)) == pytest.approx(total(a), rel=1e-5)
    assert dispatched == []                 # each submitted as finished ahead
    small = xp.asarray(a[:10], device=dev)
    spec = ctx.spec
    for _ in range(2):                      # work recorded first: recorded with it, buffer kept
        w = small * 2.0
        assert float(xp.sum(x)) == pytest.approx(total(a), rel=1e-5)
        np.testing.assert_array_equal(np.asarray(w.to_device("cpu")), a[:10] * np.float32(2))
        assert ctx.spec is spec
    ctx.synchronize()
    dispatched.clear()
    assert float(xp.sum(x)) == pytest.approx(total(a), rel=1e-5)
    assert dispatched == [] and ctx.spec is not spec
    x[:] = y                                # new contents, same buffer (recorded: a usual call)
    assert float(xp.sum(x)) == pytest.approx(total(b), rel=1e-5)
    ctx.synchronize()
    a2 = rng.standard_normal(5001).astype(np.float32)
    x[:] = xp.asarray(a2, device=dev)
    ctx.synchronize()
    assert float(xp.sum(x)) == pytest.approx(total(a2), rel=1e-5)
    dispatched.clear()
    for _ in range(2):                      # alternating inputs: recorded every time
        assert float(xp.sum(y)) == pytest.approx(total(b), rel=1e-5)
        assert float(xp.sum(x)) == pytest.approx(total(a2), rel=1e-5)
    assert len(dispatched) == 4 and ctx.spec is None
    for _ in range(3):
        assert float(xp.sum(x)) == pytest.approx(total(a2), rel=1e-5)
    assert ctx.spec is not None
    epoch = ctx.epoch
    ctx.arena_used = ctx.arena.size         # the arena full: words never seen open a new generation
    ctx.put(rng.integers(0, 2 ** 32, 8, dtype=np.uint64).astype(np.uint32))
    assert ctx.epoch != epoch
    z = x * 2.0 + 1.0
    ctx.synchronize()
    dispatched.clear()
    assert float(xp.sum(x)) == pytest.approx(total(a2), rel=1e-5)
    assert dispatched                       # its slot was of the old generation
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), a2 * np.float32(2) + np.float32(1))


def test_dispatches_are_batched(dev):
    ctx = dev.backend.ctx
    rng = np.random.default_rng(5)
    a = rng.standard_normal(1000).astype(np.float32)
    x = xp.asarray(a, device=dev)
    ctx.flush()
    s0, d0 = ctx.stats["submits"], ctx.stats["dispatches"]
    y = x
    for _ in range(40):
        y = y * 0.5 + 1.0
    assert ctx.stats["dispatches"] - d0 >= 80
    assert ctx.stats["submits"] - s0 <= 1            # nothing submitted until the host needs data
    ref = a
    for _ in range(40):
        ref = ref * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_allclose(np.asarray(y.to_device("cpu")), ref, rtol=1e-5)


def test_buffer_pool_reuses_freed_buffers(dev):
    ctx = dev.backend.ctx
    x = xp.asarray(np.arange(1000, dtype=np.float32), device=dev)
    y = x + 1
    buf = y._data.st.buffer
    del y
    ctx.flush()
    z = x + 2
    assert z._data.st.buffer is buf
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), np.arange(1000, dtype=np.float32) + 2)


def test_one_pipeline_serves_every_shape(dev):
    ctx = dev.backend.ctx
    rng = np.random.default_rng(6)
    xp.asarray(rng.standard_normal(5).astype(_float(dev)), device=dev) * 3.0
    before = len(ctx.cache)
    for n in (7, 100, 1001):
        a = rng.standard_normal(n).astype(_float(dev))
        r = xp.asarray(a, device=dev) * 3.0
        np.testing.assert_allclose(np.asarray(r.to_device("cpu")), a * 3.0)
    assert len(ctx.cache) == before


def test_binding_limit_error_names_the_limit(dev):
    ctx = dev.backend.ctx
    with pytest.raises(MemoryError, match="max-storage-buffer-binding-size"):
        ctx.alloc(ctx.max_binding + 4)


def test_large_reduction_uses_split_and_matches(dev):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(300_000).astype(_float(dev))
    x = xp.asarray(a, device=dev)
    if a.dtype == np.float64:
        assert math.isclose(float(xp.sum(x)), float(np.sum(a)), rel_tol=1e-9, abs_tol=1e-9)
    else:   # float32 sums stay within 2e-6 of sum|x| (the vec4 reduction tests' bound)
        assert abs(float(xp.sum(x)) - np.sum(a.astype(np.float64))) <= 2e-6 * np.abs(a).sum()
    assert float(xp.max(x)) == float(np.max(a))
    assert int(xp.argmin(x)) == int(np.argmin(a))


def test_no_f64_adapter_drops_float64():
    """An adapter without shader-f64 (OpenGL, browsers): no float64/complex128, float32 default."""
    from ruda.backends.wgpu import WgpuBackend
    b = object.__new__(WgpuBackend)
    b.index, b.has_f64, b.has_i64 = 0, False, True
    names = [np.dtype(d).name for d in b.dtypes()]
    assert "float64" not in names and "complex128" not in names
    assert b.default_dtypes()["real floating"] == np.float32
    assert b.default_dtypes()["complex floating"] == np.complex64
    with pytest.raises(TypeError, match="shader-f64"):
        b._check_dtype("astype", np.dtype(np.float64))


def _run_without(features, code):
    """stdout lines of ``code`` run in a fresh process with the adapter's ``features`` withheld."""
    import os
    import subprocess
    import sys
    env = dict(os.environ, RUDA_WGPU_WITHOUT=features, RUDA_DEVICE="cpu")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.splitlines()


def test_withheld_f64_and_int64_on_a_real_adapter(dev):
    """RUDA_WGPU_WITHOUT makes a capable adapter stand in for a browser's (no shader-f64, no
    shader-int64): float32/int32 defaults, float64 refused with the reason, and work still runs."""
    lines = _run_without("shader-f64, shader-int64", (
        "import numpy as np, ruda as xp\n"
        "info = xp.__array_namespace_info__()\n"
        "print(sorted(info.dtypes(device='wgpu')), info.default_dtypes(device='wgpu')['real floating'],"
        " info.default_dtypes(device='wgpu')['indexing'])\n"
        "x = xp.linspace(0, 1, 9, device='wgpu')\n"
        "print(x.dtype, float(xp.sum(x)), int(xp.argmax(x)), xp.nonzero(x > 0.5)[0].dtype)\n"
        "try:\n"
        "    xp.asarray([1.0], dtype=xp.float64, device='wgpu')\n"
        "except TypeError as e:\n"
        "    print('refused:', e)\n"))
    names, rest = lines[0].split("]", 1)
    assert "float64" not in names and "int64" not in names and "complex128" not in names
    assert "float32" in names and "complex64" in names
    assert rest.split() == ["float32", "int32"]
    assert lines[1].split() == ["float32", "4.5", "8", "int32"]
    assert lines[2].startswith("refused:") and "shader-f64" in lines[2]


def test_f64_without_int64_is_no_float64(dev):
    """An adapter with shader-f64 but not shader-int64 (the f64 kernels move bits through u64):
    no float64 there, and float32 math (whose f64 helpers would not compile) runs; an unknown
    feature in RUDA_WGPU_WITHOUT is an error naming it."""
    lines = _run_without("shader-int64", (
        "import ruda as xp\n"
        "info = xp.__array_namespace_info__()\n"
        "print('float64' in info.dtypes(device='wgpu'), info.default_dtypes(device='wgpu')['real floating'])\n"
        "x = xp.asarray([1.0, 2.0], dtype=xp.float32, device='wgpu')\n"
        "print(float(xp.sum(xp.exp(x) + xp.sin(x) + xp.tanh(x) + xp.log1p(x) + x ** 0.5)))\n"
        "print(xp.linspace(0, 1, 3, device='wgpu').dtype, xp.fft.rfft(x).dtype)\n"))
    import math
    assert lines[0] == "False float32"
    want = sum(math.exp(v) + math.sin(v) + math.tanh(v) + math.log1p(v) + v ** 0.5 for v in (1.0, 2.0))
    assert abs(float(lines[1]) - want) < 1e-5 * want
    assert lines[2] == "float32 complex64"
    import os
    import subprocess
    import sys
    env = dict(os.environ, RUDA_WGPU_WITHOUT="shader_f64")
    p = subprocess.run([sys.executable, "-c", "import ruda as xp; xp.ones(2, device='wgpu')"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 1 and "RUDA_WGPU_WITHOUT='shader_f64' names shader_f64; expected " \
        "features among shader-f16, shader-f64" in p.stderr, p.stderr[-2000:]


def test_float32_math_without_f64_keeps_special_values_and_digits(dev):
    """Without shader-f64 (withheld here), float32 math cannot go through the f64 library: the
    inverse trig and hyperbolic functions are the f64 code's f32 twins and the logs use a series
    near 1, so NaN, -0, tiny and huge arguments come out as NumPy's (lavapipe's builtins gave
    atan(NaN) = 0, sinh(1e-30) = 3e-8, acosh(1e30) = inf, log2(0.999) 1049 ulp off)."""
    lines = _run_without("shader-f64", (
        "import math, warnings, numpy as np, ruda as xp\n"
        "warnings.filterwarnings('ignore')\n"
        "S = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.5,"
        " 1e-30, 1e30, 0.999, 3.7, 20.0, -0.9999], np.float32)\n"
        "for n in ['asin', 'acos', 'atan', 'asinh', 'acosh', 'atanh', 'sinh', 'cosh', 'tanh', 'expm1',"
        " 'log', 'log1p', 'log2', 'log10']:\n"
        "    g = np.asarray(getattr(xp, n)(xp.asarray(S, device='wgpu')).to_device('cpu'))\n"
        "    w = getattr(np, n)(S.astype(np.float64)).astype(np.float32)\n"
        "    ok = (np.isclose(g, w, rtol=5e-6, atol=0) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))\n"
        "    print(n, [(float(S[i]), float(g[i]), float(w[i])) for i in np.nonzero(~ok)[0]])\n"))
    assert len(lines) == 14
    bad = [ln for ln in lines if not ln.endswith(" []")]
    assert not bad, bad


def test_fallback_table_lists_only_linalg():
    from ruda.backends.wgpu import WgpuBackend
    assert WgpuBackend.fallbacks
    for op, reason in WgpuBackend.fallbacks.items():
        assert op.startswith("linalg_") or op.startswith("fft_"), op
        assert reason


def test_vec4_map_variant_matches(dev, monkeypatch):
    """Unit-stride 4-byte maps take the vec4 kernel; misaligned views and broadcast scalars too."""
    from ruda.backends.wgpu import _base
    monkeypatch.setattr(_base, "VEC4_MIN", 8)
    rng = np.random.default_rng(9)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    np.testing.assert_array_equal(np.asarray((x + y).to_device("cpu")), a + b)
    np.testing.assert_array_equal(np.asarray((x * 2.5).to_device("cpu")), a * np.float32(2.5))
    np.testing.assert_array_equal(np.asarray((x[4:] - y[:996]).to_device("cpu")), a[4:] - b[:996])
    np.testing.assert_array_equal(np.asarray((x[1:997] - y[:996]).to_device("cpu")), a[1:997] - b[:996])
    np.testing.assert_array_equal(np.asarray(xp.where(x > y, x, y).to_device("cpu")), np.where(a > b, a, b))
    assert any(getattr(k, "name", "").endswith("_v4") for k in _base._K.values())


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "tanh",
                                  "sin", "cos", "tan", "exp"])
def test_complex_functions_and_c99_special_values(dev, name):
    """Finite values against NumPy; infinities/NaNs as C99 Annex G (the standard's special cases)."""
    rng = np.random.default_rng(10)
    z = rng.uniform(-3, 3, 200) + 1j * rng.uniform(-3, 3, 200)
    z = np.concatenate([z, [1e20 + 3e19j, -4e18 - 1e19j]])
    if _has_f64(dev):
        got = np.asarray(getattr(xp, name)(xp.asarray(z, device=dev)).to_device("cpu"))
        np.testing.assert_allclose(got, getattr(np, name)(z), rtol=1e-12, atol=1e-300)
    else:        # complex64: normwise within 8 eps of complex128 (huge inputs may overflow there)
        z = z.astype(np.complex64)
        got = np.asarray(getattr(xp, name)(xp.asarray(z, device=dev)).to_device("cpu")).astype(complex)
        with np.errstate(all="ignore"):
            ref = getattr(np, name)(z.astype(complex))
        ok = np.abs(ref) < 1e37
        assert ok.sum() >= 200
        assert (np.abs(got[ok] - ref[ok]) <= 8 * 2.0 ** -24 * np.abs(ref[ok])).all()
    inf, nan = math.inf, math.nan
    special = {  # (input, expected); NaN parts compared as NaN, unspecified signs as abs
        "acos": [(complex(1.0, inf), (math.pi / 2, -inf)), (complex(-inf, inf), (3 * math.pi / 4, -inf))],
        "asinh": [(complex(inf, inf), (inf, math.pi / 4)), (complex(nan, 0.0), (nan, 0.0))],
        "atanh": [(complex(1.0, 0.0), (inf, 0.0)), (complex(inf, 2.0), (0.0, math.pi / 2))],
        "acosh": [(complex(-inf, 1.0), (inf, math.pi)), (complex(nan, inf), (inf, nan))],
        "exp": [(complex(-inf, inf), (0.0, 0.0)), (complex(inf, nan), (inf, nan))],
        "sinh": [(complex(0.0, inf), (0.0, nan)), (complex(inf, 0.0), (inf, 0.0))],
        "tanh": [(complex(inf, 1.0), (1.0, 0.0)), (complex(0.0, nan), (0.0, nan))],
    }.get(name, [])
    for zin, (er, ei) in special:
        zd = xp.asarray(zin, dtype=xp.complex128 if _has_f64(dev) else xp.complex64, device=dev)
        g = complex(np.asarray(getattr(xp, name)(zd).to_device("cpu")))
        for part, want in ((g.real, er), (g.imag, ei)):
            assert (math.isnan(part) and math.isnan(want)) or abs(part) == pytest.approx(abs(want)), (zin, g)


# ------------------------------------------------------------------ vec4 fast paths
VEC4_SIZES = [1, 3, 4, 5, 7, 8, 1023, 1025, 70_001]

VEC4_OPS = {   # name -> (dtypes, operand sampler); every elementwise category
    "add": ("f32 i32 u32 i8 u8", None), "subtract": ("f32 i32 u32", None),
    "multiply": ("f32 i32 i16", None), "divide": ("f32", "nonzero"), "floor_divide": ("i32 u32", "nonzero"),
    "remainder": ("f32 i32", "nonzero"), "pow": ("f32", "positive"), "maximum": ("f32 i32", None),
    "atan2": ("f32", None), "bitwise_and": ("i32 u32", None), "bitwise_left_shift": ("i32", "shift"),
    "less": ("f32 i32", None), "not_equal": ("u32", None), "logical_and": ("bool", None),
    "negative": ("f32 i32", None), "abs": ("f32 i32", None), "sqrt": ("f32", "positive"),
    "exp": ("f32", None), "sin": ("f32", None), "floor": ("f32", None), "sign": ("f32 i32", None),
    "isnan": ("f32", None), "logical_not": ("bool", None), "bitwise_invert": ("u32 i8", None),
}
_NP = {"f32": np.float32, "i32": np.int32, "u32": np.uint32, "i8": np.int8, "u8": np.uint8,
       "i16": np.int16, "bool": np.bool_}


def _sample(rng, dt, n, kind=None):
    if dt == "bool":
        return rng.random(n) < 0.5
    if kind == "shift":
        return rng.integers(0, 31, n).astype(_NP[dt])
    if dt == "f32":
        a = rng.standard_normal(n).astype(np.float32) * 4
        if kind == "positive":
            a = np.abs(a) + np.float32(0.5)
        if kind == "nonzero":
            a[a == 0] = 1
        return a
    info = np.iinfo(_NP[dt])
    a = rng.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(_NP[dt])
    if kind == "nonzero":
        a[a == 0] = 1
    return a


@pytest.mark.parametrize("name", sorted(VEC4_OPS))
def test_vec4_elementwise_every_category_and_tail(dev, monkeypatch, name):
    """Same-shape contiguous 4-byte operands take the vec4 kernel at every length (n % 4 tails,
    n < 4, n = 0); values and dtypes equal NumPy's."""
    from ruda.backends.wgpu import _base, _elementwise
    monkeypatch.setattr(_base, "VEC4_MIN", 0)
    dts, kind = VEC4_OPS[name]
    f = getattr(xp, name)
    nf = getattr(np, {"pow": "power", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift"}.get(name, name))
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    binary = name in _elementwise.BINARY
    for dt in dts.split():
        for n in VEC4_SIZES + [0]:
            ins = [_sample(rng, dt, n, kind if i == 1 or not binary else None) for i in range(2 if binary else 1)]
            got = f(*[xp.asarray(a, device=dev) for a in ins])
            with np.errstate(all="ignore"):
                ref = nf(*ins)
            g = np.asarray(got.to_device("cpu"))
            assert g.dtype == ref.dtype, (dt, n)
            if dt == "f32" and name == "pow" and not _has_f64(dev):
                # exp(y log x) in float32: the error grows with |y log x| (128 ULP, as f64 pow's)
                np.testing.assert_allclose(g, ref, rtol=128 * 2.0 ** -24, atol=1e-6, err_msg=f"{dt} n={n}")
            elif dt == "f32" and name in ("exp", "sin", "pow", "atan2", "divide", "remainder", "sqrt"):
                # WGSL's f32 division, sqrt and builtins are within a few ULP, not correctly rounded
                np.testing.assert_allclose(g, ref, rtol=2e-6, atol=1e-6, err_msg=f"{dt} n={n}")
            else:
                np.testing.assert_array_equal(g, ref, err_msg=f"{dt} n={n}")
    irop = {**_elementwise.UNARY, **_elementwise.BINARY}[name]
    for dt in dts.split():                             # the vec4 kernel was the one chosen
        assert any(len(k) == 3 and k[1] == "vec4" and k[0][0] == ("ub"[binary], irop) and k[0][1] == (dt,) * (1 + binary)
                   for k in _base._K if isinstance(k, tuple)), dt


def test_vec4_elementwise_views_scalars_and_fallbacks(dev, monkeypatch):
    """Views at offsets that are multiples of 4 and broadcast scalars stay on vec4; offsets that are
    not, strided views and 8-byte/mixed dtypes take the generic kernel; values/dtypes as NumPy."""
    from ruda.backends.wgpu import _base
    monkeypatch.setattr(_base, "VEC4_MIN", 0)
    rng = np.random.default_rng(11)
    n = 5_000_003                                     # many workgroups and grid-stride steps
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    cases = [
        (x + y, a + b), (x * 2.5, a * np.float32(2.5)), (3 - x, np.float32(3) - a),
        (x + xp.asarray(np.float32(0.25), device=dev), a + np.float32(0.25)),
        (x[4:] - y[:-4], a[4:] - b[:-4]), (x[8:1031] * y[4:1027], a[8:1031] * b[4:1027]),
        (x[1:] - y[:-1], a[1:] - b[:-1]), (x[3:11] + y[:8], a[3:11] + b[:8]),     # offsets not % 4
        (x[::2] + y[::2], a[::2] + b[::2]), (x[::-1] + y, a[::-1] + b),             # strided
        (xp.where(x > y, x, y), np.where(a > b, a, b)),
    ]
    for got, ref in cases:
        g = np.asarray(got.to_device("cpu"))
        assert g.dtype == ref.dtype
        np.testing.assert_array_equal(g, ref)
    m = dev.backend._vec4_mask                        # the choice: True vec4, False broadcast, None generic
    assert m([x[4:]._data, y._data], [(1,), (0,)]) == (True, False)
    assert m([x[1:]._data], [(1,)]) is None and m([x[::2]._data], [(2,)]) is None
    i32 = rng.integers(-50, 50, 1001).astype(np.int32)
    mixed = [(xp.asarray(i32, device=dev) + 1, i32 + 1)]
    if _has_f64(dev):                                 # 8-byte operands (and int32 * float32 = float64)
        assert m([xp.asarray(a[:8].astype(np.float64), device=dev)._data], [(1,)]) is None
        a64 = rng.standard_normal(1001)
        mixed += [(x[:1001] + xp.asarray(a64, device=dev), a[:1001] + a64),
                  (xp.asarray(i32, device=dev) * x[:1001], i32 * a[:1001])]
    for got, ref in mixed:
        g = np.asarray(got.to_device("cpu"))
        assert g.dtype == ref.dtype
        np.testing.assert_allclose(g, ref, rtol=1e-15)
    # a store into a view writes exactly its elements, the tail included
    z = xp.zeros(2000, dtype=xp.float32, device=dev)
    zr = np.zeros(2000, np.float32)
    for lo, m in ((4, 101), (8, 1), (12, 3), (200, 1003), (1500, 500)):
        z[lo:lo + m] = x[:m] + 1
        zr[lo:lo + m] = a[:m] + 1
    np.testing.assert_array_equal(np.asarray(z.to_device("cpu")), zr)


RED_CASES = [  # (function, dtype)
    ("sum", "f32"), ("sum", "i32"), ("sum", "u32"), ("prod", "f32"), ("prod", "i32"), ("max", "f32"),
    ("min", "f32"), ("max", "i32"), ("min", "u32"), ("mean", "f32"), ("all", "bool"), ("any", "bool"),
    ("count_nonzero", "f32"), ("var", "f32"),
]


@pytest.mark.parametrize("subgroup", [True, False], ids=["subgroup", "shared"])
@pytest.mark.parametrize("fname,dt", RED_CASES)
def test_vec4_full_reductions(dev, monkeypatch, fname, dt, subgroup):
    """Full reductions of contiguous 4-byte arrays take the split vec4 kernel (workgroup fold by
    subgroup builtins where the adapter has them, else shared memory; all/any of bool stay on the
    generic kernel); values and dtypes as NumPy's, f32 sums within 2e-6 * sum|x| of the float64 sum."""
    from ruda.backends.wgpu import _base
    ctx = dev.backend.ctx
    if subgroup and not ctx.renderer.subgroup:
        pytest.skip("adapter without subgroups")
    monkeypatch.setattr(_base, "VEC4_MIN", 0)
    monkeypatch.setattr(ctx.renderer, "subgroup", subgroup)
    monkeypatch.setattr(ctx.cache, "programs", {})       # render again under this renderer setting
    monkeypatch.setattr(ctx.cache, "by_id", {})
    rng = np.random.default_rng(abs(hash((fname, dt))) % 2**32)
    idt = np.dtype(xp.__array_namespace_info__().default_dtypes(device=dev)["integral"])
    f = getattr(xp, fname)
    for n in VEC4_SIZES + [5_000_003]:
        if dt == "bool":
            a = rng.random(n) < (0.999 if fname == "all" else 0.001)
        elif fname == "prod":
            a = (rng.uniform(0.999, 1.001, n) if dt == "f32" else rng.choice([-1, 1, 1, 1, 2], n)).astype(_NP[dt])
        else:
            a = _sample(rng, dt, n)
        x = xp.asarray(a, device=dev)
        for view, ref_in in ((x, a), (x[4:], a[4:]), (x[1:], a[1:])):
            if ref_in.size == 0:
                continue
            g = np.asarray(f(view).to_device("cpu"))
            ref = {"count_nonzero": lambda v: np.asarray(np.count_nonzero(v), np.int64)}.get(fname, getattr(np, fname))(ref_in)
            if fname in ("sum", "prod") and dt in ("i32", "u32") and idt.itemsize == 4:
                ref = np.asarray(ref).astype(_NP[dt])   # the default integer is int32 without shader-int64
            assert g.dtype == np.asarray(ref).dtype or fname == "count_nonzero", (fname, dt, n)
            if dt == "f32" and fname in ("sum", "mean"):
                exact = ref_in.astype(np.float64)
                scale = np.abs(exact).sum() / (ref_in.size if fname == "mean" else 1)
                assert abs(float(g) - getattr(np, fname)(exact)) <= 2e-6 * scale, (fname, n)
            elif dt == "f32" and fname in ("prod", "var"):
                # an f32 product of n factors drifts by up to ~n * eps even in IEEE order (NumPy's too)
                np.testing.assert_allclose(g, getattr(np, fname)(ref_in.astype(np.float64)),
                                           rtol=max(2e-4, ref_in.size * 2e-9))
            else:
                np.testing.assert_array_equal(g, ref, err_msg=f"{fname} {dt} n={n}")
    v4 = any(k[0] == "reduce_v4" and k[2][0] == dt for k in _base._K if isinstance(k, tuple) and k)
    assert v4 == (dt != "bool"), (fname, dt)


def test_vec4_reduction_without_compilable_subgroups_uses_shared_memory(dev, monkeypatch):
    """An adapter that lists subgroups but whose compiler refuses the builtins: one warning, then
    the shared-memory fold."""
    from ruda.backends.wgpu import _base
    from ruda.runtime import wgsl
    ctx = dev.backend.ctx
    monkeypatch.setattr(_base, "VEC4_MIN", 0)
    monkeypatch.setattr(ctx.renderer, "subgroup", True)
    monkeypatch.setattr(ctx.cache, "programs", {})
    monkeypatch.setattr(ctx.cache, "by_id", {})
    monkeypatch.setattr(ctx, "plans", {})               # no replay of an earlier call's kernels
    monkeypatch.setattr(wgsl._Render, "subgroup_op",
                        lambda self, op, dt: "subgroupNoSuchBuiltin" if self.r.subgroup else None)
    a = np.random.default_rng(14).integers(-9, 9, 70_001).astype(np.int32)
    with pytest.warns(RuntimeWarning, match="subgroup"):
        got = xp.sum(xp.asarray(a, device=dev))
    assert int(np.asarray(got.to_device("cpu"))) == a.sum() and not ctx.renderer.subgroup


def test_vec4_max_min_propagate_nan(dev, monkeypatch):
    from ruda.backends.wgpu import _base
    monkeypatch.setattr(_base, "VEC4_MIN", 0)
    rng = np.random.default_rng(12)
    for n, at in ((70_001, 70_000), (70_001, 5), (9, 2)):
        a = rng.standard_normal(n).astype(np.float32)
        a[at] = np.nan
        x = xp.asarray(a, device=dev)
        assert np.isnan(np.asarray(xp.max(x).to_device("cpu")))
        assert np.isnan(np.asarray(xp.min(x).to_device("cpu")))
        assert np.isnan(np.asarray(xp.sum(x).to_device("cpu")))


def test_readback_threads_are_exact(dev, monkeypatch):
    from ruda.backends import _hostcopy
    from ruda.backends.wgpu import _transfers
    monkeypatch.setattr(_transfers, "READ_CHUNK", 40_000)
    monkeypatch.setattr(_hostcopy, "SPLIT", 3000)
    monkeypatch.setattr(_hostcopy, "THREADS", 3)
    rng = np.random.default_rng(13)
    for n in (1, 7, 9_999, 100_003):
        a = rng.standard_normal(n).astype(np.float32)
        x = xp.asarray(a, device=dev)
        np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)
        np.testing.assert_array_equal(np.asarray(x[5::3].to_device("cpu")), a[5::3])


def _host(a):
    return np.asarray(a.to_device("cpu"))


def test_scans_longer_than_one_invocation_may_loop(dev):
    """lavapipe ends a shader invocation after 65,535 loop iterations in all, silently: scans of
    rows past ~1.7M elements (and nonzero, masks, unique built on them) run in blocks."""
    n = 2_000_000
    c = _host(xp.cumulative_sum(xp.ones(n, dtype=xp.int32, device=dev)))
    np.testing.assert_array_equal(c, np.arange(1, n + 1))
    m = np.zeros(n, bool)
    m[::3] = True
    np.testing.assert_array_equal(_host(xp.nonzero(xp.asarray(m, device=dev))[0]),
                                  np.nonzero(m)[0])
    u = np.random.default_rng(0).integers(0, 1000, n).astype(np.int32)
    got = xp.unique_counts(xp.asarray(u, device=dev))
    want = np.unique(u, return_counts=True)
    np.testing.assert_array_equal(_host(got.values), want[0])
    np.testing.assert_array_equal(_host(got.counts), want[1])


@pytest.mark.parametrize("include_initial", [False, True])
def test_blocked_scans(dev, monkeypatch, include_initial):
    """The blocked scan itself with tiny blocks: blocks of blocks (an exclusive scan of the
    totals, itself blocked), strided axes, sums and products."""
    from ruda.backends.wgpu import _reductions
    monkeypatch.setattr(_reductions, "SCAN_ROW", 7)
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (3, 200)).astype(np.int32)
    x = xp.asarray(a, device=dev)
    for axis in (0, 1):
        got = _host(xp.cumulative_sum(x, axis=axis, include_initial=include_initial))
        want = np.cumsum(a, axis=axis, dtype=got.dtype)
        if include_initial:
            want = np.concatenate([np.zeros_like(np.take(want, [0], axis)), want], axis=axis)
        np.testing.assert_array_equal(got, want)
    p = (1 + rng.standard_normal(120) * 0.1).astype(np.float32)
    np.testing.assert_allclose(_host(xp.cumulative_prod(xp.asarray(p, device=dev))),
                               np.cumprod(p.astype(np.float64)), rtol=1e-5)
    m = rng.random(500) < 0.4
    np.testing.assert_array_equal(_host(xp.nonzero(xp.asarray(m, device=dev))[0]),
                                  np.nonzero(m)[0])


@pytest.mark.parametrize("dtype,K", [("int32", 70_000), ("float32", 1_100_000),
                                     ("complex64", 70_001)])
def test_matmul_inner_axis_longer_than_one_invocation_may_loop(dev, dtype, K):
    """A long inner axis is summed over blocks (lavapipe's loop limit cut it at 65,535
    iterations: K = 65,535 for the generic kernel, 1,048,560 for the tuned float32 ones)."""
    rng = np.random.default_rng(5)
    a = rng.integers(-2, 3, (2, K)).astype(dtype)
    b = rng.integers(-2, 3, (K, 3)).astype(dtype)
    got = _host(xp.asarray(a, device=dev) @ xp.asarray(b, device=dev))
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, a @ b)          # small integers: exact in any order
    np.testing.assert_array_equal(_host(xp.asarray(a[0], device=dev) @ xp.asarray(b, device=dev)),
                                  a[0] @ b)
