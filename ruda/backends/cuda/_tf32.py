"""TF32 opt-in for float32 (and complex64) matmul on the cuda backend.

Default: strict float32 (cuBLAS ``CUBLAS_COMPUTE_32F``, default math mode), whatever
``CUPY_TF32`` says.  Opt in per process with ``RUDA_TF32=1`` (read when ruda.backends.cuda is
imported) or :func:`allow_tf32` (``ruda.backends.cuda.allow_tf32(True)``), or per device with
``backend.allow_tf32 = True`` (``None`` follows the process setting).  TF32 needs compute
capability 8.0 (Ampere) or newer; on older GPUs the switch does nothing.

Mechanism (CuPy 14, checked against ``cupy/_core/_routines_linalg.pyx``): each f32/c64 call
of ``matmul`` / ``tensordot`` runs inside :func:`scope`, which sets, and afterwards restores,

* CuPy's per-dtype compute type (``cupy._core.set_compute_type(float32, COMPUTE_TYPE_TF32)``;
  ``get_compute_type`` is read on every call by ``tensordot_core_v11``, the path of 2-D
  ``matmul``/``dot``/``tensordot``, which then passes ``CUBLAS_COMPUTE_32F_FAST_TF32`` to
  ``cublasGemmEx``).  ``CUPY_TF32=1`` only seeds this value on first use; and
* the math mode of the current device's cuBLAS handle (``cublas.setMathMode(handle,
  CUBLAS_TF32_TENSOR_OP_MATH)``), which covers batched ``matmul`` (``gemmStridedBatchedEx``
  with a 32F compute type, ``sgemmBatched``/``cgemmBatched`` when broadcasting), where the
  compute-type table is not consulted.

Both are process/handle state, so a lock serializes the swap (the GEMM is only enqueued inside
it, so the lock is held for microseconds).
"""
import threading

import numpy as np

from ruda.runtime import env

# CuPy's enum values (cupy/_core/_routines_linalg.pxd) and cuBLAS's cublasMath_t.
COMPUTE_TYPE_DEFAULT = 1
COMPUTE_TYPE_TF32 = 7
CUBLAS_DEFAULT_MATH = 0
CUBLAS_TF32_TENSOR_OP_MATH = 3
_MODE_MASK = 0xF            # cublasMath_t: low bits are the mode, higher bits are flags

_F32 = np.dtype(np.float32)
TF32_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.complex64)})


_allow = env.flag("RUDA_TF32", False, at_import=True)
_lock = threading.Lock()


def allow_tf32(enabled=True):
    """Allow (or forbid) TF32 tensor-core math in float32/complex64 ``matmul`` and ``tensordot``
    on every cuda device that has no per-device setting; returns the previous setting.

    TF32 rounds the inputs of each product to a 10-bit mantissa (about 1e-3 relative error per
    product, far faster on Ampere and newer).  The default is strict float32 unless the
    environment variable ``RUDA_TF32=1`` was set when ruda.backends.cuda was imported.
    Per device: ``ruda.device("cuda:0").backend.allow_tf32 = True`` (``None`` to follow this).
    """
    global _allow
    prev = _allow
    _allow = bool(enabled)
    return prev


def tf32_allowed():
    """The process-wide setting (see :func:`allow_tf32`)."""
    return _allow


class _Cupy:
    """The CuPy entry points :func:`scope` uses (resolved once; replaceable in tests)."""

    def __init__(self):
        import cupy._core as core
        from cupy.cuda import device
        from cupy_backends.cuda.libs import cublas
        self.get_compute_type = getattr(core, "get_compute_type", None)
        self.set_compute_type = getattr(core, "set_compute_type", None)
        self.get_handle = device.get_cublas_handle
        self.get_math_mode = cublas.getMathMode
        self.set_math_mode = cublas.setMathMode


_cupy = None


def _api():
    global _cupy
    if _cupy is None:
        _cupy = _Cupy()
    return _cupy


def call(allow, fn, *args):
    """``fn(*args)`` with cuBLAS TF32 allowed (``allow``) or strictly forbidden, then restored."""
    api = _api()
    with _lock:
        # compute type: allow -> TF32; strict -> DEFAULT only where it was TF32 (PEDANTIC stays)
        ct_prev = api.get_compute_type(_F32) if api.get_compute_type is not None else None
        ct_want = COMPUTE_TYPE_TF32 if allow else COMPUTE_TYPE_DEFAULT
        if ct_prev is not None and (ct_prev == ct_want or not allow and ct_prev != COMPUTE_TYPE_TF32):
            ct_prev = None                                  # nothing to change or restore
        handle = api.get_handle()
        mm_prev = api.get_math_mode(handle)
        mode = mm_prev & _MODE_MASK
        if allow and mode == CUBLAS_DEFAULT_MATH:
            mm_want = (mm_prev & ~_MODE_MASK) | CUBLAS_TF32_TENSOR_OP_MATH
        elif not allow and mode == CUBLAS_TF32_TENSOR_OP_MATH:
            mm_want = (mm_prev & ~_MODE_MASK) | CUBLAS_DEFAULT_MATH
        else:                                               # already right, or pedantic: keep
            mm_want = mm_prev
        try:
            if ct_prev is not None:
                api.set_compute_type(_F32, ct_want)
            if mm_want != mm_prev:
                api.set_math_mode(handle, mm_want)
            return fn(*args)
        finally:
            if mm_want != mm_prev:
                api.set_math_mode(handle, mm_prev)
            if ct_prev is not None:
                api.set_compute_type(_F32, ct_prev)


def wrap(name, impl):
    """A ``CudaBackend`` method for op ``name`` that runs ``impl`` under the TF32 setting."""
    def method(self, x1, x2, **kwargs):
        if x1.dtype in TF32_DTYPES or x2.dtype in TF32_DTYPES:
            allow = self.allow_tf32 and self._tf32_capable
            if kwargs:
                return call(allow, lambda a, b: impl(a, b, **kwargs), x1, x2)
            return call(allow, impl, x1, x2)
        return impl(x1, x2, **kwargs)
    method.__name__ = name
    method.__doc__ = f"{name} (cuBLAS); float32/complex64 follow ``allow_tf32``."
    return method
