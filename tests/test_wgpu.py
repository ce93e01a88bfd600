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
    if xp.float64 not in xp.__array_namespace_info__().dtypes(device=dev).values():
        pytest.skip("adapter without shader-f64")
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    sample, bound = F64_UNARY[name]
    x = np.concatenate([sample(rng, 1500), sample(rng, 50) * 1e-9])
    got = xp.asarray(x, device=dev)
    got = np.asarray(getattr(xp, name)(got).to_device("cpu"))
    assert _ulps(got, getattr(np, name)(x)).max() <= bound


def test_f64_trig_huge_arguments(dev):
    """Payne-Hanek reduction: sin/cos of huge arguments stay accurate."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(1e6, 1e22, 200), -np.exp(rng.uniform(14, 690, 200))])
    a = xp.asarray(x, device=dev)
    for name in ("sin", "cos"):
        got = np.asarray(getattr(xp, name)(a).to_device("cpu"))
        # without the reduction, results for |x| >> 1e6 are unrelated to the true values
        np.testing.assert_allclose(got, getattr(np, name)(x), rtol=0, atol=4e-15)


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp", "pow"])
def test_f64_binary_math(dev, name):
    rng = np.random.default_rng(3)
    a = rng.uniform(0.01, 20, 2000)
    b = rng.uniform(-20, 20, 2000)
    got = np.asarray(getattr(xp, name)(xp.asarray(a, device=dev), xp.asarray(b, device=dev)).to_device("cpu"))
    bound = 128 if name == "pow" else 4     # pow = exp(y log x): error grows with |y log x|
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
    from ruda.backends.wgpu import _device
    monkeypatch.setattr(_device, "READ_CHUNK", 4096)
    rng = np.random.default_rng(4)
    a = rng.standard_normal(50_001)
    x = xp.asarray(a, device=dev)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), a)
    np.testing.assert_array_equal(np.asarray(x[7:40_007:3].to_device("cpu")), a[7:40_007:3])


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
    xp.asarray(rng.standard_normal(5), device=dev) * 3.0
    before = len(ctx.cache)
    for n in (7, 100, 1001):
        a = rng.standard_normal(n)
        r = xp.asarray(a, device=dev) * 3.0
        np.testing.assert_allclose(np.asarray(r.to_device("cpu")), a * 3.0)
    assert len(ctx.cache) == before


def test_binding_limit_error_names_the_limit(dev):
    ctx = dev.backend.ctx
    with pytest.raises(MemoryError, match="max-storage-buffer-binding-size"):
        ctx.alloc(ctx.max_binding + 4)


def test_large_reduction_uses_split_and_matches(dev):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(300_000)
    x = xp.asarray(a, device=dev)
    assert math.isclose(float(xp.sum(x)), float(np.sum(a)), rel_tol=1e-9, abs_tol=1e-9)
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


def test_fallback_table_lists_only_linalg():
    from ruda.backends.wgpu import WgpuBackend
    assert WgpuBackend.fallbacks
    for op, reason in WgpuBackend.fallbacks.items():
        assert op.startswith("linalg_") or op.startswith("fft_"), op
        assert reason


def test_vec4_map_variant_matches(dev, monkeypatch):
    """Unit-stride 4-byte maps take the vec4 kernel; misaligned views and broadcast scalars too."""
    from ruda.backends.wgpu import _ops
    monkeypatch.setattr(_ops, "VEC4_MIN", 8)
    rng = np.random.default_rng(9)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    np.testing.assert_array_equal(np.asarray((x + y).to_device("cpu")), a + b)
    np.testing.assert_array_equal(np.asarray((x * 2.5).to_device("cpu")), a * np.float32(2.5))
    np.testing.assert_array_equal(np.asarray((x[4:] - y[:996]).to_device("cpu")), a[4:] - b[:996])
    np.testing.assert_array_equal(np.asarray((x[1:997] - y[:996]).to_device("cpu")), a[1:997] - b[:996])
    np.testing.assert_array_equal(np.asarray(xp.where(x > y, x, y).to_device("cpu")), np.where(a > b, a, b))
    assert any(getattr(k, "name", "").endswith("_v4") for k in _ops._K.values())


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "asinh", "acosh", "atanh", "sinh", "cosh", "tanh",
                                  "sin", "cos", "tan", "exp"])
def test_complex_functions_and_c99_special_values(dev, name):
    """Finite values against NumPy; infinities/NaNs as C99 Annex G (the standard's special cases)."""
    rng = np.random.default_rng(10)
    z = rng.uniform(-3, 3, 200) + 1j * rng.uniform(-3, 3, 200)
    z = np.concatenate([z, [1e20 + 3e19j, -4e18 - 1e19j]])
    got = np.asarray(getattr(xp, name)(xp.asarray(z, device=dev)).to_device("cpu"))
    np.testing.assert_allclose(got, getattr(np, name)(z), rtol=1e-12, atol=1e-300)
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
        g = complex(np.asarray(getattr(xp, name)(xp.asarray(zin, device=dev)).to_device("cpu")))
        for part, want in ((g.real, er), (g.imag, ei)):
            assert (math.isnan(part) and math.isnan(want)) or abs(part) == pytest.approx(abs(want)), (zin, g)
