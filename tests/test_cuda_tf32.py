"""TF32 opt-in of the cuda backend (ruda/backends/cuda/_tf32.py).

The state swap is tested without a GPU against tests/_fake_cupy (its compute-type table and
cuBLAS handle math mode); the numerical effect needs an Ampere-or-newer
GPU and skips without one.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import _fake_cupy
import ruda
from ruda._devices import unavailable
from ruda.backends.cuda import _tf32

CUDA_REASON = unavailable("cuda")


class _Api(_tf32._Cupy):
    """The CuPy entry points _tf32 uses, resolved from tests/_fake_cupy; ``ct`` is its float32
    compute type, ``mode`` its cuBLAS handle's math mode."""

    def __init__(self):
        super().__init__()
        import cupy._core
        from cupy_backends.cuda.libs import cublas
        self._core, self._cublas = cupy._core, cublas

    ct = property(lambda self: self._core.compute_types[np.dtype(np.float32)],
                  lambda self, v: self._core.compute_types.__setitem__(np.dtype(np.float32), v))
    mode = property(lambda self: self._cublas.math_mode,
                    lambda self, v: setattr(self._cublas, "math_mode", v))


@pytest.fixture
def fake(monkeypatch):
    _fake_cupy.install(monkeypatch)
    f = _Api()
    assert (f.ct, f.mode) == (_tf32.COMPUTE_TYPE_DEFAULT, _tf32.CUBLAS_DEFAULT_MATH)
    monkeypatch.setattr(_tf32, "_cupy", f)
    return f


def _seen(f):
    return lambda: (f.ct, f.mode)


def test_allow_switches_both_and_restores(fake):
    during = _tf32.call(True, _seen(fake))
    assert during == (_tf32.COMPUTE_TYPE_TF32, _tf32.CUBLAS_TF32_TENSOR_OP_MATH)
    assert (fake.ct, fake.mode) == (_tf32.COMPUTE_TYPE_DEFAULT, _tf32.CUBLAS_DEFAULT_MATH)


def test_strict_overrides_cupy_tf32_and_restores(fake):
    fake.ct, fake.mode = _tf32.COMPUTE_TYPE_TF32, _tf32.CUBLAS_TF32_TENSOR_OP_MATH | 16   # + a flag bit
    during = _tf32.call(False, _seen(fake))
    assert during == (_tf32.COMPUTE_TYPE_DEFAULT, _tf32.CUBLAS_DEFAULT_MATH | 16)
    assert (fake.ct, fake.mode) == (_tf32.COMPUTE_TYPE_TF32, _tf32.CUBLAS_TF32_TENSOR_OP_MATH | 16)


def test_strict_keeps_pedantic_and_touches_nothing_when_already_strict(fake):
    calls = []
    fake.set_compute_type = lambda *a: calls.append(a)
    fake.set_math_mode = lambda *a: calls.append(a)
    fake.ct, fake.mode = 2, 2          # COMPUTE_TYPE_PEDANTIC, CUBLAS_PEDANTIC_MATH
    assert _tf32.call(False, lambda: 7) == 7
    fake.ct, fake.mode = _tf32.COMPUTE_TYPE_DEFAULT, _tf32.CUBLAS_DEFAULT_MATH
    _tf32.call(False, lambda: None)
    assert calls == []


def test_restores_after_an_error(fake):
    def boom():
        raise RuntimeError("cublas failed")
    with pytest.raises(RuntimeError, match="cublas failed"):
        _tf32.call(True, boom)
    assert (fake.ct, fake.mode) == (_tf32.COMPUTE_TYPE_DEFAULT, _tf32.CUBLAS_DEFAULT_MATH)


def test_wrap_routes_float32_and_complex64_only(fake):
    seen = []

    def impl(a, b, **kw):
        seen.append((a.dtype, fake.ct, kw))
        return "r"

    class Backend:
        allow_tf32 = True
        _tf32_capable = True
    be = Backend()
    m = _tf32.wrap("tensordot", impl)
    f32, c64, f64 = (np.zeros(2, d) for d in (np.float32, np.complex64, np.float64))
    assert m(be, f32, f32, axes=1) == "r"
    m(be, c64, c64)
    m(be, f64, f64)
    be._tf32_capable = False            # pre-Ampere: the switch does nothing
    m(be, f32, f32)
    be._tf32_capable, be.allow_tf32 = True, False
    m(be, f32, f32)
    tf, df = _tf32.COMPUTE_TYPE_TF32, _tf32.COMPUTE_TYPE_DEFAULT
    assert [s[1] for s in seen] == [tf, tf, df, df, df]
    assert seen[0][2] == {"axes": 1}


def test_process_switch_and_environment():
    prev = _tf32.allow_tf32(True)
    try:
        assert _tf32.tf32_allowed() is True and ruda.backends.cuda.allow_tf32 is _tf32.allow_tf32
        assert _tf32.allow_tf32(False) is True and _tf32.tf32_allowed() is False
    finally:
        _tf32.allow_tf32(prev)
    code = "import ruda.backends.cuda as c; print(c._tf32.tf32_allowed())"
    for val, want in (("1", "True"), ("0", "False"), (None, "False")):
        env = {k: v for k, v in os.environ.items() if k != "RUDA_TF32"}
        if val is not None:
            env["RUDA_TF32"] = val
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True).stdout.strip()
        assert out == want, (val, out)


def test_backend_attribute_the_bench_sets():
    from ruda.backends.cuda import CudaBackend
    be = CudaBackend.__new__(CudaBackend)          # no GPU needed for the attribute itself
    prev = _tf32.allow_tf32(False)
    try:
        assert be.allow_tf32 is False
        _tf32.allow_tf32(True)
        assert be.allow_tf32 is True               # follows the process setting ...
        be.allow_tf32 = False
        assert be.allow_tf32 is False              # ... until set per device
        be.allow_tf32 = None
        assert be.allow_tf32 is True
    finally:
        _tf32.allow_tf32(prev)


@pytest.mark.skipif(CUDA_REASON is not None, reason=f"no cuda device: {CUDA_REASON}")
def test_tf32_on_the_gpu():
    dev = ruda.device("cuda")
    be = dev.backend
    if not be._tf32_capable:
        pytest.skip("TF32 needs compute capability 8.0 or newer")
    rng = np.random.default_rng()
    a = rng.standard_normal((2, 512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    x, y = ruda.asarray(a, device=dev), ruda.asarray(b, device=dev)

    def err(u, v):
        got = np.asarray((u @ v).to_device("cpu"), np.float64)
        r = ref if u.ndim == 3 else ref[0]
        return float(np.max(np.abs(got - r)) / np.max(np.abs(r)))
    prev = be._allow_tf32
    try:
        be.allow_tf32 = False
        strict = (err(x, y), err(x[0], y))          # batched (math mode) and 2-D (compute type)
        be.allow_tf32 = True
        fast = (err(x, y), err(x[0], y))
        be.allow_tf32 = False
        again = err(x[0], y)
    finally:
        be._allow_tf32 = prev
    assert max(strict) < 1e-5 and again < 1e-5
    assert all(f > 10 * s for f, s in zip(fast, strict)) and max(fast) < 1e-2, (strict, fast)
