"""The cuda backend: native arrays are ``cupy.ndarray`` on NVIDIA GPUs.

Ops come from array-api-compat's CuPy namespace with the fixes in ``_ops``;
hot ops on contiguous arrays (add/subtract/multiply/divide, full sums) run
ruda's own vectorized NVRTC kernels from ``_kernels`` (through ``_fast``) and
fall back to CuPy for broadcasting, strided or other dtypes.  ``_numba`` holds
Numba CUDA kernels (repeat with device-array repeats); ``_ir`` launches kernels
of the runtime IR rendered by ``ruda.runtime.cuda_c``.  Everything runs on the
current CuPy stream.  An op CuPy lacks runs through the host only via
``host_fallback`` (recorded with its reason; none with CuPy 14).

Without CuPy, a CUDA driver or a GPU this module still imports:
``discover()`` returns [] and ``unavailable_reason()`` says what is missing.

bfloat16 (``xp.bfloat16``, ml_dtypes' type, an extension beyond the standard) is a cuda dtype
where ml_dtypes is installed: ``cupy.ndarray`` views with dtype bfloat16 over uint16 storage,
computed by ruda (never by CuPy's bfloat16 loops) with ml_dtypes' semantics: float32 arithmetic
rounded to nearest even; matmul and tensordot in cuBLAS with bfloat16 operands and result and
float32 accumulation.  Promotion is the frontend's, as on every device.  ``_bf16_routes`` has the
route of every op; the linalg decompositions and solvers and complex FFTs raise
NotImplementedError for bfloat16.  Without ml_dtypes, bfloat16 is not listed and moving a
bfloat16 array to cuda raises TypeError.

float32/complex64 ``matmul`` and ``tensordot`` are strict (no TF32) unless TF32 is allowed:
``RUDA_TF32=1``, :func:`allow_tf32` (process-wide) or ``backend.allow_tf32 = True`` (one
device); see ``_tf32`` for the cuBLAS mechanism.
"""
import threading

import numpy as np

from ruda import _dtypes
from ruda.backends import OPS, Backend, _hostcopy
from ruda.backends.cuda import _tf32
from ruda.backends.cuda._tf32 import allow_tf32  # noqa: F401 - public switch
from ruda.runtime import env

try:
    import cupy
    _IMPORT_ERROR = None
except Exception as e:  # ImportError, or a CuPy that fails to load its CUDA libraries
    cupy = None
    _IMPORT_ERROR = e

_PINNED_MIN = 1 << 20       # transfers of at least this many bytes go through pinned host memory
_STAGE_BYTES = 32 << 20     # size of each of the two pinned staging buffers of from_host
_SCALAR_CACHE_MAX = 4096


def _probe():
    """(device indices, reason when there are none); never raises."""
    if cupy is None:
        return [], (f"CuPy is not installed or does not import ({type(_IMPORT_ERROR).__name__}: "
                    f"{_IMPORT_ERROR}); install ruda[cuda12] or ruda[cuda13]")
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        msg = str(e)
        if "NoDevice" in msg or "no CUDA-capable device" in msg:
            return [], f"no CUDA device found (CuPy {cupy.__version__}: {msg})"
        return [], f"the CUDA driver is missing or unusable (CuPy {cupy.__version__}: {msg})"
    if n == 0:
        return [], f"no CUDA device found (CuPy {cupy.__version__}, driver reports 0 devices)"
    return list(range(n)), None


class CudaBackend(Backend):
    kind = "cuda"
    # CuPy compiles its kernels with -ftz=true: float32 (and complex64) subnormal operands and
    # results read as 0 (ruda's own floor_divide, remainder and pow keep them)
    flushes_subnormals = True
    features = frozenset({"float64", "complex128", "int64"})
    fallbacks = {}

    @property
    def nn(self):
        """This device's fused nn kernels (``ruda.backends.NN_KERNELS``), imported on first use.

        ``RUDA_CUDA_NN_KERNELS=0`` turns them off (ruda.nn then composes CuPy-backed namespace
        ops), to compare or to rule them out."""
        if not env.flag("RUDA_CUDA_NN_KERNELS", True):
            return None
        from ruda.backends.cuda import _nn
        return _nn
    _probed = None
    _allow_tf32 = None       # per-device TF32 setting; None follows ruda.backends.cuda.allow_tf32

    @property
    def allow_tf32(self):
        """Whether float32/complex64 matmul and tensordot may use TF32 tensor cores on this
        device (bool; set it, or set None to follow the process-wide ``allow_tf32()``)."""
        return _tf32.tf32_allowed() if self._allow_tf32 is None else self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        self._allow_tf32 = None if value is None else bool(value)

    @classmethod
    def discover(cls):
        if cls._probed is None:
            cls._probed = _probe()
        return list(cls._probed[0])

    @classmethod
    def unavailable_reason(cls):
        if cls._probed is None:
            cls._probed = _probe()
        return cls._probed[1]

    def __init__(self, index=0):
        super().__init__(index)
        if cupy is None or index not in self.discover():
            raise ValueError(f"ruda: device 'cuda:{index}' is not available "
                             f"({self.unavailable_reason() or 'no such device index'})")
        self._cp_device = cupy.cuda.Device(index)
        self._sms = self._cp_device.attributes["MultiProcessorCount"]
        self._tf32_capable = int(self._cp_device.compute_capability) >= 80   # TF32: Ampere and newer
        self._scalars = {}
        self._stage_lock = threading.Lock()
        self._stage = None
        if len(self.discover()) > 1:
            _bind_on_device(self)

    def describe(self):
        p = cupy.cuda.runtime.getDeviceProperties(self.index)
        name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
        return (f"cuda:{self.index} ({name}, sm_{p['major']}{p['minor']}, "
                f"{p['totalGlobalMem'] / 2**30:.0f} GiB; CuPy {cupy.__version__}, "
                f"CUDA runtime {cupy.cuda.runtime.runtimeGetVersion()})")

    # capabilities ----------------------------------------------------------
    def dtypes(self):
        return _dtypes.all_dtypes + (_dtypes.float16,) + _bf16.extension_dtypes()

    def default_dtypes(self):
        return {"real floating": _dtypes.float64, "complex floating": _dtypes.complex128,
                "integral": _dtypes.int64, "indexing": _dtypes.int64}

    def synchronize(self):
        with self._cp_device:
            cupy.cuda.get_current_stream().synchronize()

    # storage -----------------------------------------------------------
    def is_native(self, obj):
        return obj.__class__ is _ndarray

    def _check_dtype(self, fn, dt):
        if dt not in self._dtype_set:
            raise TypeError(f"ruda: {fn}: dtype {_dtypes.name(dt)} is not supported on device "
                            f"'cuda:{self.index}' (supported: "
                            f"{', '.join(_dtypes.name(d) for d in self.dtypes())})")

    def from_host(self, a):
        """Copy a NumPy array to this GPU; large arrays through double-buffered pinned staging."""
        self._check_dtype("to_device", a.dtype)
        if a.dtype is _bf16.BF16:       # its bits (CuPy's own bfloat16 support is not needed)
            return self.from_host(a.view(np.uint16)).view(a.dtype)
        with self._cp_device:
            if not a.ndim:      # cupy.asarray fills a 0-d array, with a memset for any zero (-0.0 -> +0.0)
                return _exact_scalar(a, a.dtype)
            if a.nbytes < _PINNED_MIN:
                return cupy.asarray(a)
            src = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
            out = cupy.empty(a.shape, a.dtype)
            dst = out.reshape(-1).view(cupy.uint8)
            stream = cupy.cuda.get_current_stream()
            with self._stage_lock:
                if self._stage is None:
                    self._stage = [(cupyx_empty_pinned(_STAGE_BYTES, np.uint8), cupy.cuda.Event(),
                                    [False]) for _ in range(2)]
                for k, start in enumerate(range(0, src.size, _STAGE_BYTES)):
                    buf, ev, used = self._stage[k % 2]
                    if used[0]:
                        ev.synchronize()        # the copy that last read this buffer is done
                    stop = min(start + _STAGE_BYTES, src.size)
                    chunk = buf[:stop - start]
                    _hostcopy.copy(chunk, src[start:stop])
                    dst[start:stop].set(chunk, stream=stream)   # async: chunk is pinned
                    ev.record(stream)
                    used[0] = True
                for _, ev, used in self._stage:
                    if used[0]:
                        ev.synchronize()
                        used[0] = False
            return out

    def to_host(self, a):
        """Copy to the host; large arrays land in pinned memory (one DMA, no pageable bounce)."""
        if a.dtype is _bf16.BF16:       # its bits: no CuPy bfloat16 kernel for a strided copy
            return self.to_host(a.view(np.uint16)).view(a.dtype)
        with self._cp_device:
            if a.nbytes < _PINNED_MIN:
                return a.get()
            a = cupy.ascontiguousarray(a)
            out = cupyx_empty_pinned(a.shape, a.dtype)
            a.get(out=out, blocking=True)
            return out

    def to_host_later(self, a):
        """The contract's: an asynchronous copy into pinned memory (CuPy's pool) on the current
        stream and an event after it; the callable waits for the event only."""
        if a.dtype is _bf16.BF16:
            bits = self.to_host_later(a.view(np.uint16))
            return lambda: bits().view(a.dtype)
        with self._cp_device:
            a = cupy.ascontiguousarray(a)
            out = cupyx_empty_pinned(a.shape, a.dtype)
            a.get(out=out, blocking=False)
            done = cupy.cuda.Event(disable_timing=True)
            done.record()

        def read():
            done.synchronize()
            return out
        return read

    def asarray(self, a, dtype=None, copy=None):
        with self._cp_device:
            if _bf16.BF16 is not None and (a.dtype is _bf16.BF16 or dtype == _bf16.BF16) \
                    and dtype is not None and dtype != a.dtype:
                if copy is False:
                    raise ValueError("ruda: asarray: casting needs a copy (copy=False)")
                return _bf16.astype(a, dtype)
            if copy and a.dtype is _bf16.BF16:
                return a.view(np.uint16).copy().view(a.dtype)
            if copy:
                return cupy.array(a, dtype=dtype, copy=True)
            if copy is False and dtype is not None and dtype != a.dtype:
                raise ValueError("ruda: asarray: casting needs a copy (copy=False)")
            return cupy.asarray(a, dtype=dtype)

    def scalar(self, value, dtype):
        """A 0-d array of ``value``; cached, since the frontend makes one per Python scalar operand.

        The frontend never hands these arrays to users (ops always allocate their results).
        Only values that equality tells apart are cached: no NaNs, no float zeros, no complex with
        a zero or NaN part (``1-0j == 1+0j`` and both hash alike, so one would answer for the other).
        """
        key = (value.__class__, value, dtype)
        s = self._scalars.get(key)
        if s is not None:
            return s
        with self._cp_device:
            s = _exact_scalar(value, dtype) if dtype is not _bf16.BF16 else _bf16.scalar(value)
            cupy.cuda.get_current_stream().synchronize()   # cached: usable from any stream afterwards
        if _cacheable(value):
            if len(self._scalars) >= _SCALAR_CACHE_MAX:
                self._scalars.clear()
            self._scalars[key] = s
        return s

    records = True       # as CUDA graphs (capture)

    def capture(self, fn):
        """The contract's "recording", as a CUDA graph (``_capture``)."""
        from ruda.backends.cuda import _capture
        return _capture.capture(self._cp_device, fn)

    def export_here(self, a, stream=None, max_version=None, copy=None):
        """CuPy's export on the array's GPU, with the standard's ``copy``: CuPy copies only to the
        host, so copy=True copies on the device here first.  (To the host, the contract's
        ``to_dlpack`` exports ruda's own host copy: ``to_host``, pinned for large arrays.)"""
        if copy:
            a = self.asarray(a, copy=True)   # a fresh array nobody else holds: export it as it is
        return super().export_here(a, stream=stream, max_version=max_version)

    def from_dlpack(self, obj, copy=None):
        with self._cp_device:
            if copy:    # CuPy's exporter copies only to the host: import, then copy on the device
                return cupy.from_dlpack(obj).copy()
            return cupy.from_dlpack(obj, copy=copy)



def _cacheable(value):
    if value.__class__ is complex:
        return all(p == p and p != 0 for p in (value.real, value.imag))
    return value.__class__ in (int, bool) or value == value and value != 0


def _bind_on_device(backend):
    """On machines with several GPUs, run every op of ``backend`` with its device current."""
    dev = backend._cp_device
    for name in OPS:
        try:
            bound = getattr(backend, name)
        except (AttributeError, NotImplementedError):
            continue

        def op(*args, _fn=bound, **kwargs):
            with dev:
                return _fn(*args, **kwargs)

        op.__name__ = name
        setattr(backend, name, op)


if cupy is not None:
    import array_api_compat.cupy as _ccp
    import cupyx

    from ruda.backends.cuda import _bf16, _bf16_routes, _fast, _ops
    from ruda.backends.cuda._ops import _exact_scalar

    _ndarray = cupy.ndarray
    cupyx_empty_pinned = cupyx.empty_pinned

    def _source(name):
        impl = getattr(_ops, name, None)
        if impl is not None:
            return impl
        if name.startswith("linalg_"):
            return getattr(_ccp.linalg, name[7:], None)
        if name.startswith("fft_"):
            return getattr(_ccp.fft, name[4:], None)
        return getattr(_ccp, name, None)

    # Every op: CuPy's (array-api-compat's namespace) or ruda's fix in _ops, with bfloat16
    # operands sent to their route (_bf16_routes' ROUTES table), or recorded as a host fallback.
    for _name in OPS:
        _impl = _source(_name)
        if _impl is None:
            CudaBackend.host_fallback(_name, f"CuPy {cupy.__version__} has no {_name.replace('_', '.', 1) if _name.startswith(('linalg_', 'fft_')) else _name}")
            continue
        setattr(CudaBackend, _name, staticmethod(_bf16_routes.guard(_name, _impl)))
    del _name, _impl
    # The ops with more in front, spelled out.  ruda's own NVRTC kernels (_fast) for contiguous,
    # aligned operands of one dtype and shape (or a 0-d one); the rest goes on to the op above:
    CudaBackend.add = staticmethod(_fast.binary("add", CudaBackend.add))
    CudaBackend.subtract = staticmethod(_fast.binary("subtract", CudaBackend.subtract))
    CudaBackend.multiply = staticmethod(_fast.binary("multiply", CudaBackend.multiply))
    CudaBackend.divide = staticmethod(_fast.binary("divide", CudaBackend.divide))
    CudaBackend.sum = staticmethod(_fast.sum(CudaBackend.sum))       # full sums
    CudaBackend.argmax = staticmethod(_fast.arg_reduce("argmax", CudaBackend.argmax))
    CudaBackend.argmin = staticmethod(_fast.arg_reduce("argmin", CudaBackend.argmin))
    # float16 matmul: the 16-bit cuBLAS call and GEMV of bfloat16's (recordable in CUDA graphs)
    CudaBackend.matmul = staticmethod(_bf16.float16_matmul(CudaBackend.matmul))
    # float32/complex64 GEMMs: strict float32 unless TF32 is allowed (_tf32), then the op above
    CudaBackend.matmul = _tf32.wrap("matmul", CudaBackend.matmul)
    CudaBackend.tensordot = _tf32.wrap("tensordot", CudaBackend.tensordot)
else:
    class _ndarray:  # nothing is native without CuPy
        pass
