"""The cuda backend: discovery without a GPU, storage, ruda's own kernels, DLPack and streams.

Tests that need a GPU skip with the reason the device is missing; the
device-parametrized suite (every other test file) runs on cuda wherever one is found.
"""
import numpy as np
import pytest

import _fake_cupy
import ruda
from ruda._devices import unavailable

CUDA_REASON = unavailable("cuda")
needs_cuda = pytest.mark.skipif(CUDA_REASON is not None, reason=f"no cuda device: {CUDA_REASON}")


def host(x):
    return np.asarray(x.to_device("cpu"))


# ----------------------------------------------------------------- without a GPU
def test_discover_never_raises_and_reason_is_consistent():
    from ruda.backends.cuda import CudaBackend
    found = CudaBackend.discover()
    assert isinstance(found, list)
    if found:
        assert CudaBackend.unavailable_reason() is None
    else:
        reason = CudaBackend.unavailable_reason()
        assert any(w in reason for w in ("CuPy", "driver", "device")), reason


@pytest.mark.skipif(CUDA_REASON is None, reason="a cuda device is present")
def test_asarray_on_missing_cuda_says_what_is_missing():
    with pytest.raises(ValueError) as e:
        ruda.asarray([1.0, 2.0], device="cuda")
    msg = str(e.value)
    assert "cuda" in msg and CUDA_REASON in msg


@pytest.mark.parametrize("count, words", [
    (None, "CuPy is not installed"),
    (RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient"),
     "driver is missing or unusable"),
    (RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected"), "no CUDA device"),
    (0, "no CUDA device"),
])
def test_probe_names_what_is_missing(monkeypatch, count, words):
    import ruda.backends.cuda as cb
    fake = None if count is None else _fake_cupy.install(monkeypatch, device_count=count)
    monkeypatch.setattr(cb, "cupy", fake)
    if fake is None:
        monkeypatch.setattr(cb, "_IMPORT_ERROR", ImportError("No module named 'cupy'"))
    found, reason = cb._probe()
    assert found == [] and words in reason


# ----------------------------------------------------------------- with a GPU
if CUDA_REASON is None:
    import cupy
    from ruda.backends.cuda import _fast

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64", "complex64", "complex128"]


def _random(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 5), (1 << 19, 3)])
def test_roundtrip_host_cuda(rng, dtype, shape):
    a = _random(rng, dtype, shape)
    x = ruda.asarray(a, device="cuda")
    assert x.device == "cuda" and x.dtype == a.dtype and x.shape == a.shape
    assert isinstance(x._data, cupy.ndarray)
    np.testing.assert_array_equal(host(x), a)


@needs_cuda
def test_roundtrip_large_multi_chunk_and_strided(rng):
    a = rng.standard_normal((9, 1 << 20)).astype(np.float64)     # 72 MiB: three staging chunks
    x = ruda.asarray(a, device="cuda")
    np.testing.assert_array_equal(host(x), a)
    b = a[::2, ::3]                                                  # non-contiguous host source
    np.testing.assert_array_equal(host(ruda.asarray(b, device="cuda")), b)
    y = ruda.asarray(a, device="cuda")[:, ::2]                       # non-contiguous device source
    np.testing.assert_array_equal(host(y), a[:, ::2])


@needs_cuda
def test_bfloat16_is_refused_on_cuda_only_without_support():
    if getattr(ruda, "bfloat16", None) is None:
        pytest.skip("ml_dtypes is not installed")
    from ruda.backends.cuda import _bf16
    a = ruda.asarray(np.ones(3, dtype=ruda.bfloat16), device="cpu")
    if _bf16.unavailable_reason() is None:     # supported: tests/test_cuda_bf16.py
        assert a.to_device("cuda").dtype == ruda.bfloat16
        return
    with pytest.raises(TypeError, match="bfloat16"):
        a.to_device("cuda")
    with pytest.raises(TypeError, match="bfloat16"):
        ruda.zeros(3, dtype=ruda.bfloat16, device="cuda")


FAST_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32",
               "float64"]
SIZES = [0, 1, 3, 15, 16, 17, 255, 1000, (1 << 20) + 3]


def _np_op(name, a, b):
    with np.errstate(all="ignore"):
        return {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
                "divide": np.divide}[name](a, b)


@needs_cuda
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide"])
@pytest.mark.parametrize("dtype", FAST_DTYPES)
def test_fast_binary_matches_numpy(rng, name, dtype):
    if name == "divide" and np.dtype(dtype).kind != "f":
        pytest.skip("divide of integers promotes to float64 in the frontend")
    fn = getattr(ruda, name)
    for n in SIZES:
        a, b = _random(rng, dtype, (n,)), _random(rng, dtype, (n,))
        xa, xb = ruda.asarray(a, device="cuda"), ruda.asarray(b, device="cuda")
        before = _fast.STATS["fast"]
        out = fn(xa, xb)
        if n:
            assert _fast.STATS["fast"] == before + 1, "the fast path did not run"
        np.testing.assert_array_equal(host(out), _np_op(name, a, b), err_msg=f"{name} {dtype} n={n}")
        # 0-d operand on either side (the frontend's Python scalars arrive as 0-d arrays)
        s = _random(rng, dtype, ())
        xs = ruda.asarray(s, device="cuda")
        np.testing.assert_array_equal(host(fn(xa, xs)), _np_op(name, a, s), err_msg=f"{name} vs n={n}")
        np.testing.assert_array_equal(host(fn(xs, xa)), _np_op(name, s, a), err_msg=f"{name} sv n={n}")
    # 2-D, misaligned views and broadcasting go through the other paths; results must agree
    a, b = _random(rng, dtype, (33, 65)), _random(rng, dtype, (33, 65))
    xa, xb = ruda.asarray(a, device="cuda"), ruda.asarray(b, device="cuda")
    np.testing.assert_array_equal(host(fn(xa, xb)), _np_op(name, a, b))
    np.testing.assert_array_equal(host(fn(xa[:, 1:], xb[:, :-1])), _np_op(name, a[:, 1:], b[:, :-1]))
    np.testing.assert_array_equal(host(fn(xa, xb[:1])), _np_op(name, a, b[:1]))
    flat_a, flat_b = ruda.reshape(xa, (-1,)), ruda.reshape(xb, (-1,))
    np.testing.assert_array_equal(host(fn(flat_a[1:], flat_b[1:])), _np_op(name, a.ravel()[1:], b.ravel()[1:]))


@needs_cuda
def test_fast_binary_integer_wraparound_and_float_specials():
    i8 = ruda.asarray(np.array([127, -128, 100], np.int8), device="cuda")
    np.testing.assert_array_equal(host(i8 + i8), np.array([127, -128, 100], np.int8) * np.int8(2))
    u16 = ruda.asarray(np.array([65535, 300], np.uint16), device="cuda")
    np.testing.assert_array_equal(host(u16 * u16), np.array([65535, 300], np.uint16) ** 2)
    f = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], np.float32)
    xf = ruda.asarray(f, device="cuda")
    for name in ("add", "subtract", "multiply", "divide"):
        got = host(getattr(ruda, name)(xf, ruda.asarray(f[::-1].copy(), device="cuda")))
        want = _np_op(name, f, f[::-1])
        finite_sign = ~np.isnan(want)        # the sign of a NaN is not specified (x86 and CUDA differ)
        np.testing.assert_array_equal(np.signbit(got)[finite_sign], np.signbit(want)[finite_sign], err_msg=name)
        np.testing.assert_array_equal(got, want, err_msg=name)


@needs_cuda
def test_python_scalar_operands_are_cached_safely(rng):
    a = rng.standard_normal(1000).astype(np.float32)
    x = ruda.asarray(a, device="cuda")
    for _ in range(3):
        np.testing.assert_array_equal(host(x + 2.5), a + np.float32(2.5))
        np.testing.assert_array_equal(host(2.5 - x), np.float32(2.5) - a)
    np.testing.assert_array_equal(np.signbit(host(ruda.zeros(3, device="cuda") * -0.0)),
                                  np.signbit(np.zeros(3) * -0.0))
    np.testing.assert_array_equal(host(x * -0.0), a * np.float32(-0.0))


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fast_sum_matches_numpy(rng, dtype):
    for shape in [(), (1,), (5,), (17,), (4, 1000), (3, 7, 11), ((1 << 22) + 7,)]:
        a = rng.standard_normal(shape).astype(dtype)
        x = ruda.asarray(a, device="cuda")
        before = _fast.STATS["fast"]
        s = ruda.sum(x)
        assert _fast.STATS["fast"] == before + 1, "the fast path did not run"
        assert s.shape == () and s.dtype == a.dtype
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(host(s), a.astype(np.float64).sum(), rtol=tol, atol=tol * np.abs(a).sum())
        k = ruda.sum(x, keepdims=True)
        assert k.shape == (1,) * a.ndim
        np.testing.assert_allclose(host(k).reshape(()), host(s))
    a = rng.standard_normal((64, 33)).astype(dtype)
    x = ruda.asarray(a, device="cuda")
    np.testing.assert_allclose(host(ruda.sum(x, axis=1)), a.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(host(ruda.sum(x[:, ::2])), a[:, ::2].sum(), rtol=1e-5)
    np.testing.assert_array_equal(host(ruda.sum(ruda.zeros((0, 3), dtype=getattr(ruda, dtype), device="cuda"))), 0)


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_fast_arg_reduce_matches_numpy(rng, dtype, name):
    """ruda's kernels for every call (a block per row; few long rows: chunks, then a merge);
    NumPy's first-NaN and first-extreme rules, every row length."""
    ref = getattr(np, name)
    for shape in [(1,), (7,), (3, 1), (5, 1023), (2, 1025), (4, 3, 333), (49152,), (2, 128256),
                  (3, 70001)]:
        a = rng.standard_normal(shape).astype(dtype)
        flat = a.reshape(-1, shape[-1])
        flat[:, rng.integers(0, shape[-1], flat.shape[0])] = a.max() if name == "argmax" else a.min()
        if flat.shape[0] > 2:                   # ties, a NaN row, infinities, a row of -inf
            flat[1, -1] = np.nan
            flat[1, rng.integers(0, shape[-1])] = np.nan
            flat[2, :] = -np.inf if name == "argmax" else np.inf
        x = ruda.asarray(a, device="cuda")
        for axis, keep in [(None, False), (None, True), (a.ndim - 1, False), (a.ndim - 1, True)]:
            before = _fast.STATS["fast"]
            got = getattr(ruda, name)(x, axis=axis, keepdims=keep)
            assert _fast.STATS["fast"] == before + 1, "the fast path did not run"
            want = ref(a, axis=axis, keepdims=keep)
            assert got.dtype == ruda.int64 and got.shape == np.shape(want)
            np.testing.assert_array_equal(host(got), want)
    a = rng.standard_normal((6, 40)).astype(dtype)
    x = ruda.asarray(a, device="cuda")
    np.testing.assert_array_equal(host(getattr(ruda, name)(x, axis=0)), ref(a, axis=0))
    np.testing.assert_array_equal(host(getattr(ruda, name)(x[:, ::3], axis=1)), ref(a[:, ::3], axis=1))


@needs_cuda
def test_fast_paths_agree_with_cupy(rng, monkeypatch):
    a, b = rng.standard_normal(4097).astype(np.float32), rng.standard_normal(4097).astype(np.float32)
    xa, xb = ruda.asarray(a, device="cuda"), ruda.asarray(b, device="cuda")
    fast = [host(f(xa, xb)) for f in (ruda.add, ruda.subtract, ruda.multiply, ruda.divide)]
    monkeypatch.setattr(_fast, "_FORCE_FALLBACK", True)
    slow = [host(f(xa, xb)) for f in (ruda.add, ruda.subtract, ruda.multiply, ruda.divide)]
    for f, s in zip(fast, slow):
        np.testing.assert_array_equal(f, s)


@needs_cuda
def test_dlpack_with_cupy_is_zero_copy(rng):
    c = cupy.asarray(rng.standard_normal((4, 5)))
    x = ruda.from_dlpack(c)
    assert x.device == "cuda" and x._data.data.ptr == c.data.ptr
    y = ruda.asarray(c, device="cuda")
    assert y.device == "cuda" and y._data.data.ptr == c.data.ptr
    back = cupy.from_dlpack(x)
    assert back.data.ptr == c.data.ptr
    assert x.__dlpack_device__() == (2, 0)
    np.testing.assert_array_equal(host(x), cupy.asnumpy(c))
    with pytest.raises(ValueError, match="copy=False"):
        ruda.from_dlpack(c, device="cpu", copy=False)
    z = ruda.from_dlpack(c, copy=True)
    assert z._data.data.ptr != c.data.ptr


@needs_cuda
def test_dlpack_with_torch_is_zero_copy(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA here")
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    x = ruda.from_dlpack(t)
    assert x.device == "cuda" and x._data.data.ptr == t.data_ptr()
    back = torch.from_dlpack(x)
    assert back.data_ptr() == t.data_ptr()
    np.testing.assert_array_equal(host(x * 2.0), t.cpu().numpy() * 2)


@needs_cuda
def test_work_runs_on_the_current_cupy_stream(rng):
    a = rng.standard_normal(1 << 20).astype(np.float32)
    x = ruda.asarray(a, device="cuda")
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = ruda.add(x, x)
        z = ruda.sum(y)
        h = host(z)         # to_host synchronizes the current stream
    np.testing.assert_allclose(h, (a + a).astype(np.float64).sum(), rtol=1e-5)


@needs_cuda
def test_to_device_between_devices(rng):
    a = rng.standard_normal((5, 7)).astype(np.float32)
    x = ruda.asarray(a)
    y = x.to_device("cuda")
    assert y.device == "cuda"
    np.testing.assert_array_equal(host(y), a)
    if "wgpu" in [d.kind for d in ruda.devices()]:
        w = y.to_device("wgpu")
        assert w.device.kind == "wgpu"
        np.testing.assert_array_equal(host(w.to_device("cuda")), a)
    with pytest.raises(ValueError, match="different devices"):
        ruda.add(x, y)


@needs_cuda
def test_no_host_fallbacks_on_this_cupy():
    from ruda.backends.cuda import CudaBackend
    assert CudaBackend.fallbacks == {}, CudaBackend.fallbacks


@needs_cuda
def test_describe_and_info():
    d = ruda.device("cuda")
    text = d.backend.describe()
    assert text.startswith("cuda:0 (") and "CuPy" in text
