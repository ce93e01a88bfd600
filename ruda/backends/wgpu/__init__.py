"""The wgpu backend: ruda arrays in WebGPU buffers, ops as WGSL compute shaders.

Device "wgpu:N" is the N-th adapter (high-performance first, one per physical device,
native API preferred over OpenGL).  Kernels are :mod:`ruda.runtime.ir` programs rendered by
:mod:`ruda.runtime.wgsl`; see README.md in this folder for storage, batching, dtypes and
the fallback table.

A device may be used from several threads: each entry point of the backend (and of its ``nn``
kernels) runs whole under the device's re-entrant lock (see "threads" at the end).
"""
import functools
import inspect
import os
import threading
import weakref

import numpy as np

from ruda import _dtypes, backends
from ruda.backends import Backend
from ruda.backends.wgpu import _device, _half, _queue
from ruda.backends.wgpu._array import HOST_STORAGE, IR, WArray, contiguous_strides
from ruda.backends.wgpu._base import Base
from ruda.backends.wgpu._creation import CreationOps
from ruda.backends.wgpu._elementwise import ElementwiseOps
from ruda.backends.wgpu._fft import FftOps
from ruda.backends.wgpu._indexing import IndexingOps
from ruda.backends.wgpu._linalg import LinalgOps
from ruda.backends.wgpu._matmul import MatmulOps
from ruda.backends.wgpu._plan import Plans
from ruda.backends.wgpu._reductions import ReductionOps
from ruda.backends.wgpu._sorting import SortingOps
from ruda.runtime import env

_contexts = {}
_locks = {}             # adapter index -> the lock of its queue, shared by its backends
_opening = threading.Lock()     # threads opening one adapter at once get one queue
_backends = []          # weak references to the backends, whose queues a forked child must drop


class _Forked:
    """A forked child's stand-in for its parent's queues: the driver's device and threads do not
    survive fork (a read waited forever), so any use raises instead."""

    def __getattr__(self, name):
        raise RuntimeError("ruda: wgpu cannot be used in a child forked from a process that had "
                           "opened a wgpu device (the driver's state does not survive fork); "
                           "start the workers with multiprocessing's 'spawn' or 'forkserver' "
                           "method")


def _drop_queues_in_child():
    # locks another thread of the parent held at the fork would stay held in the child: fresh
    # ones, so a use raises _Forked's error instead of hanging
    global _opening
    _opening = threading.Lock()
    if _contexts:
        dead = _Forked()
        for index in _contexts:
            _contexts[index] = dead
            _locks[index] = threading.RLock()
        for ref in _backends:
            if (b := ref()) is not None:
                b.ctx = dead
                b.lock = _locks[b.index]


os.register_at_fork(after_in_child=_drop_queues_in_child)
# the dtypes each optional feature carries (withheld or absent on browser-class adapters)
_FEATURE_DTYPES = {"shader-f64": ("float64", "complex128"), "shader-int64": ("int64", "uint64")}


def _enabled():
    """``RUDA_WGPU`` (a switch, default on); a value that is not one raises ValueError."""
    return env.flag("RUDA_WGPU", True)


def _disabled_reason():
    """Why wgpu is off by the environment (its value, or why the value is wrong), else None."""
    try:
        return None if _enabled() else f"disabled by RUDA_WGPU={env.text('RUDA_WGPU')}"
    except ValueError as e:     # named when a wgpu device is asked for, not at import
        return str(e)


class WgpuBackend(FftOps, MatmulOps, LinalgOps, ElementwiseOps, ReductionOps, IndexingOps, SortingOps,
                  CreationOps, Plans, Base, Backend):
    kind = "wgpu"
    fallbacks = {}
    _unavailable = None
    has_f16 = False

    # ------------------------------------------------------------------ discovery
    @classmethod
    def discover(cls):
        off = _disabled_reason()
        if off:
            cls._unavailable = off
            return []
        try:
            return list(range(len(_device.adapters())))
        except Exception as e:  # noqa: BLE001 - no wgpu, no driver
            cls._unavailable = f"wgpu found no adapter ({type(e).__name__}: {e})"
            return []

    @classmethod
    def unavailable_reason(cls):
        off = _disabled_reason()
        if off:
            return off
        try:
            import wgpu  # noqa: F401
        except ImportError as e:
            return f"wgpu-py is not installed ({e}); pip install wgpu"
        if cls._unavailable:
            return cls._unavailable
        if not _device.adapters():
            return ("wgpu-py found no adapter (install a Vulkan/Metal/D3D12 driver; on a CPU-only "
                    "Debian machine: apt-get install mesa-vulkan-drivers for lavapipe)")
        return None

    def __init__(self, index=0):
        super().__init__(index)
        with _opening:
            ctx = _contexts.get(index)
            if ctx is None:
                ads = _device.adapters()
                if index >= len(ads):
                    raise ValueError(f"ruda: wgpu device {index} does not exist ({len(ads)} adapters)")
                ctx = _contexts[index] = _queue.Queue(_device.Device(ads[index]))
                _locks[index] = threading.RLock()
        self.ctx = ctx
        self.lock = _locks[index]       # the device's: every backend of this adapter shares it
        _backends.append(weakref.ref(self))
        # single-pass reductions count their finished workgroups here (zero between launches)
        with self.lock:
            self.counter = WArray(ctx.upload(np.zeros(1, np.uint32)), (1,), (1,), 0,
                                  np.dtype(np.uint32))
        f = ctx.features
        self.has_f64 = "shader-f64" in f
        self.has_i64 = "shader-int64" in f
        self.has_f16 = "shader-f16" in f
        feats = set()
        if self.has_f64:
            feats |= {"float64", "complex128"}
        if self.has_i64:
            feats.add("int64")
        self.features = frozenset(feats | set(f))

    @property
    def nn(self):
        """This device's fused nn kernels (``ruda.backends.NN_KERNELS``), made on first use."""
        k = self.__dict__.get("_nn")
        if k is None:
            from ruda.backends.wgpu._nn import Kernels
            with _opening:
                if not Kernels.__dict__.get("_locked"):      # once: its kernels run under the lock
                    _lock_methods(Kernels, [n for n in backends.NN_KERNELS
                                            if inspect.isfunction(getattr(Kernels, n, None))],
                                  _kernel_locked)
                    Kernels._locked = True
            k = self.__dict__["_nn"] = Kernels(self)
        return k

    @property
    def flushes_subnormals(self):
        """Whether this adapter flushes float32 subnormals to zero, as WGSL allows (NVIDIA's
        Vulkan driver does; lavapipe does not): probed once, 2**-140 * 2 computed on the device."""
        ftz = self.__dict__.get("_ftz")
        if ftz is None:
            x = self.from_host(np.array([2.0 ** -140], np.float32))
            two = self.from_host(np.array([2.0], np.float32))
            ftz = self.__dict__["_ftz"] = bool(self.to_host(self.multiply(x, two))[0] == 0)
        return ftz

    def describe(self):
        info = self.ctx.adapter.info
        feats = ", ".join(sorted(self.ctx.features)) or "none"
        return (f"wgpu:{self.index} {info.get('device', '?')} via {info.get('backend_type', '?')} "
                f"({info.get('adapter_type', '?')}; features: {feats}; max binding "
                f"{self.ctx.max_binding >> 20} MiB)")

    def notes(self):
        """Plain-language notes for ``python -m ruda info``: what this adapter flushes, the dtypes
        it costs and why."""
        ftz = ["float32 subnormals (below 1.2e-38) flush to zero on this adapter, as WGSL allows"
               ] if self.flushes_subnormals else []
        return ftz + self._dtype_notes()

    def _dtype_notes(self):
        missing = [f for f in ("shader-f64", "shader-int64") if f not in self.ctx.features]
        if not missing:
            return []
        lost = ", ".join(d for f in missing for d in _FEATURE_DTYPES[f])
        dflt = ", ".join(f"{k} {_dtypes.name(v)}" for k, v in self.default_dtypes().items()
                         if k in ("real floating", "integral"))
        withheld = sorted(set(missing) & _device._withheld())
        if withheld:
            return [f"RUDA_WGPU_WITHOUT withholds {', '.join(withheld)}: no {lost} on this device "
                    f"(defaults: {dflt})"]
        if _device._is_gl(self.ctx.adapter):
            # wgpu lists OpenGL only where no Vulkan driver is installed (or RUDA_WGPU_BACKEND asks)
            return [f"OpenGL adapter (no Vulkan driver found): no {lost}, as it lacks "
                    f"{', '.join(missing)} (defaults: {dflt}). Fix: install the Vulkan driver "
                    f"(Debian/Ubuntu: sudo apt-get install mesa-vulkan-drivers)"]
        return [f"the adapter lacks {', '.join(missing)}: no {lost} on this device (defaults: {dflt})"]

    # ------------------------------------------------------------------ capabilities
    def dtypes(self):
        out = [_dtypes.bool, _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.uint8,
               _dtypes.uint16, _dtypes.uint32]
        if self.has_i64:
            out += [_dtypes.int64, _dtypes.uint64]
        out.append(_dtypes.float32)
        if self.has_f64:
            out.append(_dtypes.float64)
        out.append(_dtypes.complex64)
        if self.has_f64:
            out.append(_dtypes.complex128)
        if self.has_f16:                            # the extensions: WGSL f16, bfloat16 (_half)
            out.append(_dtypes.float16)
        return tuple(out) + ((_dtypes.bfloat16,) if _dtypes.bfloat16 is not None else ())

    def default_dtypes(self):
        f = _dtypes.float64 if self.has_f64 else _dtypes.float32
        i = _dtypes.int64 if self.has_i64 else _dtypes.int32
        return {"real floating": f, "complex floating": _dtypes.complex_of(f),
                "integral": i, "indexing": i}

    def supports(self, dtype):
        return dtype in self._dtype_set

    def synchronize(self):
        self.ctx.synchronize()

    def empty_cache(self):
        """Release the pooled buffers and readback staging (``_queue.Queue.empty_cache``)."""
        self.ctx.empty_cache()

    def memory_stats(self):
        """Bytes ``in_use``, ``pooled`` and ``staging`` (``_queue.Queue.memory_stats``)."""
        return self.ctx.memory_stats()

    # ------------------------------------------------------------------ storage
    def is_native(self, obj):
        return obj.__class__ is WArray

    def unsupported_reason(self, dt):
        if dt in (_dtypes.float64, _dtypes.complex128) and not self.has_f64:
            return " (the adapter lacks the shader-f64 feature)"
        if dt in (_dtypes.int64, _dtypes.uint64) and not self.has_i64:
            return " (the adapter lacks the shader-int64 feature)"
        if dt == _dtypes.float16 and not self.has_f16:
            return " (the adapter lacks the shader-f16 feature)"
        return ""

    def _check_dtype(self, fn, dt):
        if dt not in self._dtype_set:
            raise TypeError(f"ruda wgpu.{fn}: dtype {_dtypes.name(dt)} is not supported on "
                            f"'wgpu:{self.index}'{self.unsupported_reason(dt)}")

    def from_host(self, a):
        a = np.asarray(a)
        dt = a.dtype
        self._check_dtype("from_host", dt)
        store = HOST_STORAGE.get(IR[dt])
        host = np.ascontiguousarray(a, dtype=store) if store is not None else np.ascontiguousarray(a)
        st = self.ctx.upload(host)
        return WArray(st, tuple(a.shape), contiguous_strides(a.shape), 0, dt)

    def to_host(self, a):
        if a.size == 0:
            return np.empty(a.shape, a.dtype)
        if not a.is_contiguous():
            a = self.copy(a)
        store = HOST_STORAGE.get(a.ir, a.dtype)
        out = np.empty(a.shape, store)
        isz = store.itemsize
        self.ctx.read_through(a.st, a.offset * isz, a.size * isz, out.reshape(-1).view(np.uint8))
        return out if store == a.dtype else out.astype(a.dtype)

    def asarray(self, a, dtype=None, copy=None):
        if dtype is None or dtype == a.dtype:
            return self.copy(a) if copy else a
        return self.astype(a, dtype, True)

    def scalar(self, value, dtype):
        # Operand scalars (the frontend's 0-d arrays for Python scalars, never mutated) are cached
        # per device by (dtype, exact value): no dispatch, no upload after the first use, and a
        # stable buffer, so loops like ``z = z * 1.0001`` hit the bind-group cache.
        # A hit takes no lock (one dict read: every op with a Python scalar operand asks), a miss
        # uploads under the device's lock.
        key = (dtype, type(value), repr(value))     # a dtype spelled otherwise is another key
        cache = self.ctx.scalars
        a = cache.get(key)
        if a is not None:
            return a
        dtype = np.dtype(dtype)
        with self.lock:
            if dtype == _half.BF16:         # packed bits, rounded as ml_dtypes rounds
                a = _half.scalar(self, value)
            else:
                self._check_dtype("scalar", dtype)
                store = HOST_STORAGE.get(IR[dtype], dtype)
                v = np.array(value, dtype=dtype) if dtype.kind in "iu" and store != dtype else value
                a = WArray(self.ctx.upload(np.array(v, dtype=store)), (), (), 0, dtype)
            if len(cache) >= 1024:
                cache.clear()
            cache[key] = a
        return a

    def from_dlpack(self, obj, copy=None):
        raise BufferError("ruda.from_dlpack: a DLPack producer on WebGPU cannot be imported in place "
                          "(WebGPU exposes no buffer pointer); pass device='cpu' to ask it for a host copy")

    def export_here(self, a, stream=None, max_version=None, copy=None):
        raise BufferError(f"ruda: __dlpack__: an array on 'wgpu:{self.index}' (kDLWebGPU) cannot be "
                          f"exported in place (WebGPU exposes no buffer pointer); ask for a host copy "
                          f"with dl_device=(1, 0), as np.from_dlpack(x, device='cpu') does, or move it "
                          f"with x.to_device('cpu')")

    def dlpack_device(self, a):
        return (15, self.index)   # kDLWebGPU


for _op, _reason in (
        ("linalg_cholesky", "decomposition: no native kernel yet; host LAPACK"),
        ("linalg_det", "decomposition (LU): host LAPACK"),
        ("linalg_eig", "decomposition: host LAPACK"),
        ("linalg_eigh", "decomposition: host LAPACK"),
        ("linalg_eigvals", "decomposition: host LAPACK"),
        ("linalg_eigvalsh", "decomposition: host LAPACK"),
        ("linalg_inv", "decomposition (LU): host LAPACK"),
        ("linalg_pinv", "decomposition (SVD): host LAPACK"),
        ("linalg_qr", "decomposition: host LAPACK"),
        ("linalg_slogdet", "decomposition (LU): host LAPACK"),
        ("linalg_solve", "decomposition (LU): host LAPACK"),
        ("linalg_svd", "decomposition: host LAPACK"),
        ("linalg_svdvals", "decomposition (SVD): host LAPACK"),
        ("linalg_matrix_rank", "decomposition (SVD): host LAPACK"),
):
    WgpuBackend.host_fallback(_op, _reason)
del _op, _reason


def _matrix_rank(self, x, rtol=None):
    """The host fallback, with the rank in the device's default integer dtype (NumPy counts in
    int64, which an adapter without shader-int64 cannot hold)."""
    host = backends._host_backend()
    rtol = self.to_host(rtol) if self.is_native(rtol) else rtol
    rank = host.linalg_matrix_rank(self.to_host(x), rtol=rtol)
    return self.from_host(np.asarray(rank).astype(self.default_dtypes()["integral"], copy=False))


WgpuBackend.linalg_matrix_rank = _matrix_rank

# float16: accumulating and bit-pattern ops on float32 copies; bfloat16: every op on float32
# views, results rounded as ml_dtypes (_half)
for _name in _half.GUARDED:
    if getattr(WgpuBackend, _name, None) is not None:
        setattr(WgpuBackend, _name, _half.guards(_name, getattr(WgpuBackend, _name)))
del _name


# ------------------------------------------------------------------ threads
# A device may be used from several threads, as a CuPy or PyTorch device: the queue's open
# encoder and pass, the allocator's pool, the staging buffers, the plans and the caches belong
# to the device, so every public method runs whole under the device's re-entrant lock (threads
# take turns; an op calling another takes it again, ~0.1 us uncontended).  Storage frees
# (Storage.__del__, on whichever thread drops the last reference) take no lock, only append to
# the allocator's pending list: a finalizer may run on any thread, one that the lock's holder
# waits for included (a readback's host-copy workers).  Waits for the device hold the lock; the
# callbacks they poll for only count (_native), so they never need it.
# Queries that touch no device state need no lock; ``scalar`` takes it itself, on a miss only.
_UNLOCKED = frozenset({"describe", "dtypes", "default_dtypes", "supports", "unsupported_reason",
                       "is_native", "dlpack_device", "binary_ufunc", "from_dlpack", "export_here",
                       "scalar"})


def _locked(fn):
    """Method ``fn`` run under its backend's lock."""
    def method(self, *args, **kwargs):
        with self.lock:
            return fn(self, *args, **kwargs)
    return functools.wraps(fn)(method)


def _kernel_locked(fn):
    """nn kernel ``fn`` (a method of _nn.Kernels) run under its backend's lock."""
    def kernel(self, *args, **kwargs):
        with self.be.lock:
            return fn(self, *args, **kwargs)
    return functools.wraps(fn)(kernel)


def _lock_methods(cls, names, wrap):
    """Replace the methods ``names`` of ``cls`` (own or inherited) by ``wrap(method)``."""
    for name in names:
        setattr(cls, name, wrap(inspect.getattr_static(cls, name)))


# the host fallbacks lock only their transfers (to_host, from_host): a decomposition on the host
# leaves the device to the other threads
_lock_methods(WgpuBackend, [n for n in dir(WgpuBackend) if not n.startswith("_")
                            and n not in _UNLOCKED and n not in WgpuBackend.fallbacks
                            and inspect.isfunction(inspect.getattr_static(WgpuBackend, n))],
              _locked)
_capture = WgpuBackend.capture


def _locked_capture(self, fn):
    """``capture`` whose replay records under the device's lock too."""
    got = _capture(self, fn)
    if got is NotImplemented:
        return got
    replay, out = got
    lock = self.lock

    def locked_replay():
        with lock:
            replay()
    return locked_replay, out


WgpuBackend.capture = functools.wraps(_capture)(_locked_capture)
