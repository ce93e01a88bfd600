"""The backend contract: what a device implements for ruda.

A backend owns storage and kernels for *native* arrays on one kind of device
(``cpu`` = NumPy, ``cuda`` = CuPy, ``wgpu`` = WebGPU buffers).  The frontend
(``ruda._array`` and the namespace modules) validates every call once --
dtype categories, shapes, devices, axes, Python scalars -- and hands a backend
only validated native arrays and plain Python parameters.  In particular:

* Python scalar *operands* are converted by the frontend to 0-d native arrays
  of the result dtype before an elementwise op is called; binary elementwise
  ops receive arrays of one dtype (the frontend casts after promotion).
* ``axis`` arguments arrive normalized (non-negative ints or tuples of them);
  ``dtype`` arguments arrive as concrete dtypes the backend supports.
* Results must be native arrays (never NumPy scalars), with ``.shape`` (tuple)
  and ``.dtype`` (a NumPy dtype object).

A backend class subclasses :class:`Backend` and provides

storage
    ``from_host(ndarray)``, ``to_host(native) -> ndarray``, ``to_host_later(native)`` (a
    callable giving the host copy: the copy is queued now, read when called),
    ``scalar(value, dtype)`` (a 0-d array), ``asarray(native, dtype, copy)`` (same-device
    copy/cast).
DLPack
    ``from_dlpack(obj, copy)`` (import from a producer on this device kind),
    ``dlpack_device(native)`` and ``export_here(native, stream, max_version, copy)`` (export on
    the array's own device; raise BufferError where the device has no in-place export).
    ``to_dlpack`` (the contract's, shared) adds the cross-device rule: ``dl_device=(kDLCPU, 0)``
    exports a capsule of a host copy (``copy=False`` raises BufferError), any other foreign
    ``dl_device`` raises BufferError naming it.
capabilities
    ``dtypes()``, ``default_dtypes()``, ``features`` and ``fallbacks``; ``binary_ufunc(name)``
    (the host's NumPy ufuncs, for the C accelerator).
ops
    one method per name in :data:`OPS` (the standard's functions, with
    ``linalg_``/``fft_`` prefixes for the extensions) plus the primitives
    ``getitem``, ``setitem``, ``astype``.  Signatures are the standard's, with
    native arrays in place of ``Array``.

nn kernels
    ``nn``: ``None``, or a module of the fused kernels ``ruda.nn`` may call, one function per
    name in :data:`NN_KERNELS` (``None`` where the device has no such kernel).  A kernel takes
    validated native arrays and Python parameters and returns native arrays, or
    ``NotImplemented`` for a dtype or shape it does not handle; ``ruda.nn`` then composes
    namespace ops.  Signatures are in ``ruda/nn/README.md``.

recording
    ``records``: whether the device can record work and replay it without the host (CUDA
    graphs); then ``capture(fn)`` runs ``fn()`` once eagerly, records a second call and returns ``(replay, out)``:
    ``out`` is what the recorded call returned and ``replay()`` runs the recorded work again
    on the same memory, or NotImplemented (with a RuntimeWarning naming the cause) when ``fn``'s
    work cannot be recorded.  ``fn`` must not read device memory on the host, and must give
    the same result when run twice on the same inputs.

An op the backend lacks raises ``NotImplementedError`` naming op and device.
A backend may run an op through the host only via :meth:`Backend.host_fallback`,
which records it, with its reason, in the class's ``fallbacks`` table (shown by
``python -m ruda info`` and the docs): no host round trip may hide elsewhere.

Registration: ``register("wgpu", "ruda.backends.wgpu:WgpuBackend")``; the
class is imported lazily, so a missing optional dependency only disables that
device.
"""
import importlib
import math

import numpy as np

# The standard's elementwise functions and the dtype category each accepts (ruda._dtypes'
# CATEGORIES): the one table.  The namespace functions (generated from it: ruda/_generate.py), the
# operators, the backends and the C accelerator's op list (checked against it at import) read it.
ELEMENTWISE_UNARY_CATEGORIES = {
    "abs": "numeric", "acos": "floating-point", "acosh": "floating-point",
    "asin": "floating-point", "asinh": "floating-point", "atan": "floating-point",
    "atanh": "floating-point", "bitwise_invert": "integer or boolean", "ceil": "real numeric",
    "conj": "numeric", "cos": "floating-point", "cosh": "floating-point",
    "exp": "floating-point", "expm1": "floating-point", "floor": "real numeric",
    "imag": "complex floating-point", "isfinite": "numeric", "isinf": "numeric",
    "isnan": "numeric", "log": "floating-point", "log1p": "floating-point",
    "log2": "floating-point", "log10": "floating-point", "logical_not": "boolean",
    "negative": "numeric", "positive": "numeric", "real": "numeric",
    "reciprocal": "floating-point", "round": "numeric", "sign": "numeric",
    "signbit": "real floating-point", "sin": "floating-point", "sinh": "floating-point",
    "sqrt": "floating-point", "square": "numeric", "tan": "floating-point",
    "tanh": "floating-point", "trunc": "real numeric",
}
ELEMENTWISE_BINARY_CATEGORIES = {
    "add": "numeric", "atan2": "real floating-point", "bitwise_and": "integer or boolean",
    "bitwise_left_shift": "integer", "bitwise_or": "integer or boolean",
    "bitwise_right_shift": "integer", "bitwise_xor": "integer or boolean",
    "copysign": "real floating-point", "divide": "numeric", "equal": "all",
    "floor_divide": "real numeric", "greater": "real numeric", "greater_equal": "real numeric",
    "hypot": "real floating-point", "less": "real numeric", "less_equal": "real numeric",
    "logaddexp": "real floating-point", "logical_and": "boolean", "logical_or": "boolean",
    "logical_xor": "boolean", "maximum": "real numeric", "minimum": "real numeric",
    "multiply": "numeric", "nextafter": "real floating-point", "not_equal": "all",
    "pow": "numeric", "remainder": "real numeric", "subtract": "numeric",
}
# the names alone, in the table's order
ELEMENTWISE_UNARY = tuple(ELEMENTWISE_UNARY_CATEGORIES)
ELEMENTWISE_BINARY = tuple(ELEMENTWISE_BINARY_CATEGORIES)
OPS = ELEMENTWISE_UNARY + ELEMENTWISE_BINARY + (
    # elementwise with extra operands
    "clip",
    # creation (parameters are Python values; dtype is concrete)
    "arange", "empty", "eye", "full", "linspace", "meshgrid", "tril", "triu",
    # data types
    "astype",
    # indexing
    "getitem", "setitem", "take", "take_along_axis",
    # manipulation
    "broadcast_to", "concat", "expand_dims", "flip", "moveaxis", "permute_dims", "repeat",
    "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    # searching
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    # set
    "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
    # sorting
    "argsort", "sort",
    # statistical
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    # utility
    "all", "any", "diff",
    # linear algebra (main namespace)
    "matmul", "tensordot", "vecdot",
    # linalg extension
    "linalg_cholesky", "linalg_cross", "linalg_det", "linalg_diagonal", "linalg_eig",
    "linalg_eigh", "linalg_eigvals", "linalg_eigvalsh", "linalg_inv", "linalg_matrix_norm",
    "linalg_matrix_power", "linalg_matrix_rank", "linalg_outer", "linalg_pinv", "linalg_qr",
    "linalg_slogdet", "linalg_solve", "linalg_svd", "linalg_svdvals", "linalg_trace",
    "linalg_vector_norm",
    # fft extension
    "fft_fft", "fft_ifft", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfftn",
    "fft_irfftn", "fft_hfft", "fft_ihfft", "fft_fftfreq", "fft_rfftfreq", "fft_fftshift",
    "fft_ifftshift",
)

# The fused kernels a backend's ``nn`` module may provide (see ruda/nn/README.md).
NN_KERNELS = (
    "softmax", "logsumexp", "layer_norm", "rms_norm", "add_rms_norm", "l2_normalize",
    "group_norm", "channel_affine", "batch_norm", "swiglu", "glu",
    "activation",
    "dropout", "apply_rope", "rope_kv_put", "sdpa", "top_k",
    "conv", "conv_transpose", "pool", "interpolate",
    "linear_quantized", "linear_swiglu", "rms_norm_linear", "add_linear",
    "rms_norm_linear_quantized", "add_linear_quantized",
)

# Cephes' erf/erfc rational approximations (ndtr.c), the coefficient tables (T, U, P, Q) that
# ``ruda.erf`` evaluates and hands to the ``activation`` kernel for "erf" and "gelu" (its p2):
# |x| < 1: erf = x T(x^2) / U(x^2); 1 <= |x|: erfc = exp(-x^2) P(|x|) / Q(|x|).
ERF_TABLES = (
    (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
     7.00332514112805075473E3, 5.55923013010394962768E4),
    (1.0, 3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
     2.26290000613890934246E4, 4.92673942608635921086E4),
    (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
     4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
     9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2),
    (1.0, 1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
     9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
     1.65666309194161350182E3, 5.57535340817727675546E2),
)


class Backend:
    """Base class of a device backend.  One instance per device index."""

    kind = None          # "cpu", "cuda", "wgpu": the device's string prefix
    fallbacks = {}       # op name -> reason it goes through the host
    features = frozenset()
    nn = None            # module of fused nn kernels (NN_KERNELS), or None

    def __init__(self, index=0):
        self.index = index

    # discovery -------------------------------------------------------------
    @classmethod
    def discover(cls):
        """Indices of the devices of this kind on this machine (may be [])."""
        return []

    @classmethod
    def unavailable_reason(cls):
        """Why no device of this kind is usable here (None when some is)."""
        return None

    def describe(self):
        """One line for ``python -m ruda info``."""
        return self.kind

    # capabilities ----------------------------------------------------------
    def dtypes(self):
        raise NotImplementedError

    def default_dtypes(self):
        raise NotImplementedError

    def supports(self, dtype):
        return dtype in self._dtype_set

    def unsupported_reason(self, dtype):
        """Why ``dtype`` is missing on this device (" (the adapter lacks ...)"), or ""."""
        return ""

    @property
    def _dtype_set(self):
        s = self.__dict__.get("_dtype_set_cache")
        if s is None:
            s = self.__dict__["_dtype_set_cache"] = frozenset(self.dtypes())
        return s

    # DLPack (1.0) -------------------------------------------------------------
    def to_dlpack(self, a, stream=None, max_version=None, dl_device=None, copy=None):
        """``__dlpack__`` of native ``a``: on its own device through :meth:`export_here`; to the
        host (``dl_device=(kDLCPU, 0)``) from another device, a capsule of a host copy (the
        consumer named the host, so the copy is asked for; ``copy=False`` raises BufferError).
        Any other ``dl_device`` raises BufferError naming it."""
        if copy is not None and copy.__class__ is not bool:
            raise TypeError(f"ruda: __dlpack__: copy must be True, False or None; got {copy!r}")
        own = tuple(self.dlpack_device(a))
        target = own if dl_device is None else dlpack_pair(dl_device)
        if target == own:
            return self.export_here(a, stream, max_version, copy)
        name = self.kind if self.kind == "cpu" else f"{self.kind}:{self.index}"
        where = f"'{name}' {dlpack_device_name(own)}"
        if target != KDL_HOST:
            raise BufferError(f"ruda: __dlpack__: dl_device={target} {dlpack_device_name(target)} cannot "
                              f"be reached from an array on {where}; ruda exports to the array's own "
                              f"device or to the host, dl_device=(1, 0) (kDLCPU)")
        if copy is False:
            raise BufferError(f"ruda: __dlpack__: copy=False, but dl_device={target} (kDLCPU) is not the "
                              f"array's device {where}: exporting to the host needs a copy")
        # The host copy is complete when to_host returns (it waits for the device), so no
        # stream is needed: DLPack asks for stream=None with kDLCPU, and others are ignored.
        return export_host(self.to_host(a), max_version)

    def export_here(self, a, stream=None, max_version=None, copy=None):
        """DLPack export on the array's own device: the native array's protocol (NumPy, CuPy)."""
        given = (("max_version", max_version), ("copy", copy))
        return a.__dlpack__(stream=stream, **{k: v for k, v in given if v is not None})

    def dlpack_device(self, a):
        return a.__dlpack_device__()

    def synchronize(self):
        """Wait for queued work (no-op where execution is synchronous)."""

    def to_host_later(self, a):
        """A copy of ``a`` to the host started now, in the device's order of work: returns a
        callable that gives the NumPy array once it has landed, so that work queued after this
        call runs on while the host waits only for what came before. Here: ``to_host`` at once."""
        out = self.to_host(a)
        return lambda: out

    records = False      # whether capture() records (see the module's "recording")

    def capture(self, fn):
        raise NotImplementedError(f"ruda: capture: device '{self.kind}' records no work")

    def binary_ufunc(self, name):
        """The NumPy ufunc that *is* this backend's binary elementwise op ``name`` on native
        arrays (``ufunc(a, b)``, ``ufunc(a, b, out=a)``), or None.  The C accelerator calls it
        directly for host arrays; only the host backend has them."""
        return None

    # anything in OPS that the subclass does not define ----------------------
    def __getattr__(self, name):
        if name in OPS:
            raise NotImplementedError(f"ruda: '{name}' is not implemented on device '{self.kind}'")
        raise AttributeError(name)

    @classmethod
    def host_fallback(cls, op, reason):
        """Make ``op`` run through the host, recorded in ``cls.fallbacks``."""
        if "fallbacks" not in cls.__dict__:
            cls.fallbacks = dict(cls.fallbacks)
        cls.fallbacks[op] = reason

        def method(self, *args, **kwargs):
            host = _host_backend()
            to = self.to_host
            conv = lambda v: _map_native(v, to, self.is_native)  # noqa: E731
            out = getattr(host, op)(*conv(args), **{k: conv(v) for k, v in kwargs.items()})
            return _map_native(out, self.from_host, host.is_native)

        method.__name__ = op
        setattr(cls, op, method)

    def is_native(self, obj):
        raise NotImplementedError


KDL_HOST = (1, 0)   # (kDLCPU, 0): the one host device DLPack knows
DLPACK_DEVICE_TYPES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan",
                       8: "kDLMetal", 9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev",
                       13: "kDLCUDAManaged", 14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon",
                       17: "kDLMAIA"}


def arange_length(start, stop, step):
    """NumPy's arange length (PyArray_ArangeObj) from Python numbers: ceil((stop - start) /
    step), at least 0; a quotient that underflows to 0 counts 1 (-0: none)."""
    delta = stop - start
    t = delta / step
    if t == 0.0 and delta != 0:
        return 0 if math.copysign(1.0, t) < 0 else 1
    return max(0, math.ceil(t))


def arange_fill(start, step, dtype):
    """The host's part of NumPy's float ``arange`` fill: (compute dtype, first, second, delta).
    first is start and second start + step, each rounded to ``dtype``; delta is their
    difference in the compute dtype (float32 for float16); value i > 1 is first + i * delta,
    the product and the sum each rounded once."""
    wide = np.dtype(np.float32) if dtype == np.float16 else dtype
    with np.errstate(all="ignore"):      # a step past the dtype's range: NumPy's inf and NaN
        first, second = np.asarray(start, dtype), np.asarray(start + step, dtype)
        return wide, first, second, second.astype(wide) - first.astype(wide)


def store_shape(value_shape, shape):
    """The shape of a value stored into ``shape`` (``x[key] = value``), its leading 1s dropped,
    under NumPy's rule (it must broadcast to ``shape``), else ValueError."""
    vs = tuple(value_shape)
    while len(vs) > len(shape) and vs[0] == 1:
        vs = vs[1:]
    if len(vs) > len(shape) or any(n not in (1, t) for n, t in zip(vs[::-1], shape[::-1])):
        raise ValueError(f"could not broadcast a value of shape {tuple(value_shape)} into shape "
                         f"{tuple(shape)}")
    return vs


def dlpack_pair(dl_device):
    """``dl_device`` as a (device type, index) pair of ints, or TypeError."""
    try:
        kind, index = dl_device
        return int(kind), int(index)
    except (TypeError, ValueError):
        raise TypeError(f"ruda: __dlpack__: dl_device must be a (device_type, device_id) pair such as "
                        f"(1, 0) for the host; got {dl_device!r}") from None


def dlpack_device_name(pair):
    """'(kDLWebGPU)' for a DLPack (device type, index) pair; the number where the type is unknown."""
    kind = int(pair[0])
    return f"({DLPACK_DEVICE_TYPES.get(kind, f'DLPack device type {kind}')})"


def export_host(host, max_version=None):
    """A DLPack capsule of NumPy array ``host`` (a fresh host copy nobody else holds)."""
    if not host.flags.writeable:   # a legacy (unversioned) capsule cannot say read-only
        host = host.copy()
    if max_version is None:
        return host.__dlpack__()
    # a versioned capsule must flag the copy (IS_COPIED); NumPy sets it only when it copies itself
    return host.__dlpack__(max_version=max_version, copy=True)


def _map_native(obj, fn, is_native):
    if is_native(obj):
        return fn(obj)
    if isinstance(obj, tuple):
        return type(obj)(*[_map_native(o, fn, is_native) for o in obj]) if hasattr(obj, "_fields") \
            else tuple(_map_native(o, fn, is_native) for o in obj)
    if isinstance(obj, list):
        return [_map_native(o, fn, is_native) for o in obj]
    return obj


_REGISTRY = {}
_CLASSES = {}


def register(kind, target):
    """Register a backend class as ``"module:Class"`` under device prefix ``kind``."""
    _REGISTRY[kind] = target
    _CLASSES.pop(kind, None)


def backend_class(kind):
    """The backend class for ``kind``, or raise ImportError with the reason."""
    cls = _CLASSES.get(kind)
    if cls is None:
        module, _, attr = _REGISTRY[kind].partition(":")
        mod = importlib.import_module(module)
        if not hasattr(mod, attr):
            raise ImportError(f"{module} does not define {attr}")
        cls = _CLASSES[kind] = getattr(mod, attr)
    return cls


def kinds():
    return tuple(_REGISTRY)


_broken = {}   # kind -> why its backend failed to load or discover
_EXTRAS = {"wgpu": "ruda[wgpu]", "cuda": "ruda[cuda12] or ruda[cuda13]"}   # what brings it


def discover(kind):
    """The device indices of ``kind`` found here; [] (and the reason kept for
    :func:`unavailable`) when its backend fails to load or discover."""
    try:
        return backend_class(kind).discover()
    except Exception as e:  # noqa: BLE001 - a broken optional backend must not break ruda.devices()
        _broken[kind] = f"{type(e).__name__}: {e}"
        return []


def unavailable(kind):
    """Why devices of ``kind`` are missing here, or None."""
    if kind in _broken:
        return f"its backend failed ({_broken[kind]})"
    try:
        cls = backend_class(kind)
    except ImportError as e:
        extra = _EXTRAS.get(kind)
        return f"cannot import its backend ({e})" + (f"; install {extra}" if extra else "")
    except Exception as e:  # noqa: BLE001 - as in discover: a broken backend is reported
        _broken[kind] = f"{type(e).__name__}: {e}"
        return f"its backend failed ({_broken[kind]})"
    if cls.discover():
        return None
    return cls.unavailable_reason() or f"no {kind} device found"


def _host_backend():
    from ruda.backends.host import HostBackend
    return HostBackend.instance()


register("cpu", "ruda.backends.host:HostBackend")
register("cuda", "ruda.backends.cuda:CudaBackend")
register("wgpu", "ruda.backends.wgpu:WgpuBackend")
