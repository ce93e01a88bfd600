"""pytest plugin: ruda's cuda backend over NumPy posing as CuPy (see README.md here).

Replaced on the backend: host<->device copies and scalars (NumPy copies), the bfloat16 kernels
(``_bf16.SOURCE`` compiled with g++ by tests/test_cuda_bf16.py), device pointers (host
addresses), ruda's own float32 fast kernels and bfloat16 GEMV (off), and the float floor_divide/remainder IR
kernels (the host's).  A harness that cannot start prints
FAKE-CUPY-UNUSABLE and exits, so the calling test skips instead of failing.
"""
import pathlib
import tempfile

import numpy as np
import pytest


def pytest_configure(config):
    try:
        _install()
    except Exception as e:  # noqa: BLE001 - the backend needs more CuPy than this fake offers
        pytest.exit(f"FAKE-CUPY-UNUSABLE: {type(e).__name__}: {e}", returncode=3)


def _install():
    from ruda.backends import Backend
    import ruda.backends.cuda as C
    from ruda.backends.cuda import _bf16, _bf16_routes, _fast, _gemv, _ops
    from ruda.backends.host import _ops as host
    import test_cuda_bf16 as T
    B = _bf16.BF16
    dll = T.build_host_kernels(pathlib.Path(tempfile.mkdtemp(prefix="ruda-fake-cupy-")))
    if dll is None:
        raise RuntimeError("no g++")

    def launch(name, *arrays, extra=()):
        assert all(a.flags.c_contiguous for a in arrays), name
        return T.call_host_kernel(dll, name, *arrays, extra=extra)

    def map_(obj, fn, _map=_bf16_routes._map):   # NumPy returns scalars where CuPy returns 0-d arrays
        return _map(np.asarray(obj) if isinstance(obj, np.generic) else obj, fn)

    def from_host(self, a):
        self._check_dtype("to_device", a.dtype)
        if a.dtype is B:
            return self.from_host(a.view(np.uint16)).view(a.dtype)
        return np.array(a, copy=True)

    def to_host(self, a):
        if a.dtype is B:
            return self.to_host(a.view(np.uint16)).view(a.dtype)
        return np.array(a, copy=True)

    _fast._FORCE_FALLBACK = True
    _gemv.ENABLED = False           # an NVRTC kernel: every bfloat16 product goes to the emulated cuBLAS

    def float_binary(op, x1, x2):   # the IR kernels need NVRTC: the host's float floor_divide/remainder/pow
        fn = {"floordiv": host.floor_divide, "mod": np.remainder, "pow": host.pow}[op]
        with np.errstate(all="ignore"):
            return fn(x1, x2)
    _ops._float_binary = float_binary
    _bf16._launch = launch
    _bf16_routes._map = map_
    _bf16._ptr = lambda a: a.ctypes.data
    _bf16.scalar = lambda v: np.asarray(v, dtype=B).view(np.uint16).copy().view(B)
    C._exact_scalar = lambda v, dt: np.asarray(v, dtype=dt).copy()
    C.CudaBackend.from_host = from_host
    C.CudaBackend.to_host = to_host
    C.CudaBackend.to_host_later = Backend.to_host_later    # at once, through to_host
