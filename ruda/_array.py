"""The Array object: a thin wrapper around one backend's native array.

Arrays are made only by ruda's functions (``Array._new``), never by calling
``Array(...)``.  Operators and ``__getitem__``/``__setitem__`` are the namespace
functions of their names, assigned by the namespace layer (``ruda._operators``,
which owns validation and promotion) and declared here for type checkers; this
module holds what needs no namespace function.

With the optional C accelerator (``ruda._speedups``, built at install where a
compiler exists; ``RUDA_PURE_PYTHON=1`` turns it off at import), Array's base
is its C type: the same slots, plus C fast paths for host arrays in the
operators and indexing that hand every other case to the Python code
(registered by ``ruda._accelerate``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ruda import _dtypes, _host_conversion
from ruda._devices import CPU, Device, device as _device
from ruda.runtime import accelerator

API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")
API_VERSION = "2025.12"

_speedups = accelerator.speedups



def check_build(speedups):
    """ImportError unless C module ``speedups`` knows exactly the table's binary elementwise ops
    (OP_NAMES of ruda/_speedups_c/state.h against ruda.backends.ELEMENTWISE_BINARY_CATEGORIES)."""
    from ruda.backends import ELEMENTWISE_BINARY
    built = getattr(speedups, "BINARY_OPS", ())
    if set(built) != set(ELEMENTWISE_BINARY) or len(built) != len(ELEMENTWISE_BINARY):
        raise ImportError(
            "ruda._speedups was built for other binary elementwise ops than "
            "ruda.backends.ELEMENTWISE_BINARY_CATEGORIES (ruda/_speedups_c/state.h: OP_NAMES): "
            f"missing in C {sorted(set(ELEMENTWISE_BINARY) - set(built))}, not in the table "
            f"{sorted(set(built) - set(ELEMENTWISE_BINARY))}; rebuild it "
            "(python3 setup.py build_ext --inplace) or set RUDA_PURE_PYTHON=1")


if _speedups is not None:
    check_build(_speedups)
    _Base = _speedups.Base
else:
    class _Base:
        __slots__ = ("_data", "_device", "__weakref__")


class Array(_Base):
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise TypeError("ruda.Array cannot be constructed directly; use ruda.asarray() "
                        "or another creation function")

    @classmethod
    def _new(cls, data, device):
        self = object.__new__(cls)
        self._data = data
        self._device = device
        return self

    # the kernel bridge: the device library's own array, shared ----------
    @property
    def native(self) -> Any:
        """The device library's own array behind this one, shared, not copied: a NumPy array on
        cpu, a CuPy array on cuda, the backend's buffer view on wgpu.  For kernels of the backend
        contract (``ruda.backends``); writing to it writes to this array."""
        return self._data

    @classmethod
    def from_native(cls, data: Any, device: Device | str) -> Array:
        """A ruda array on ``device`` (a Device or its spelling) sharing ``data``, that device
        library's own array (the inverse of :attr:`native`; no copy)."""
        if isinstance(device, str):
            device = _device(device)
        if not isinstance(device, Device):
            raise TypeError(f"ruda.Array.from_native: device: expected a ruda.Device or its "
                            f"name, got {type(device).__name__}")
        if not device.backend.is_native(data):
            raise TypeError(f"ruda.Array.from_native: data: expected {device}'s native array, "
                            f"got {type(data).__module__}.{type(data).__name__}")
        return cls._new(data, device)

    # attributes --------------------------------------------------------
    @property
    def dtype(self) -> _dtypes.DType:
        return _dtypes.public(self._data.dtype)

    @property
    def _dtype(self):
        """The NumPy dtype (ruda's own code works in these; ``dtype`` is the public object)."""
        return self._data.dtype

    @property
    def device(self) -> Device:
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self._data.shape:
            n *= s
        return n

    @property
    def T(self) -> Array:
        if self.ndim != 2:
            raise ValueError(f"ruda: Array.T needs a 2-D array; got {self.ndim}-D "
                             f"(use ruda.permute_dims or .mT for stacks of matrices)")
        return Array._new(self._device.backend.permute_dims(self._data, (1, 0)), self._device)

    @property
    def mT(self) -> Array:
        n = self.ndim
        if n < 2:
            raise ValueError(f"ruda: Array.mT needs at least 2 dimensions; got {n}-D")
        axes = tuple(range(n - 2)) + (n - 1, n - 2)
        return Array._new(self._device.backend.permute_dims(self._data, axes), self._device)

    def __len__(self) -> int:
        if not self._data.shape:
            raise TypeError("ruda: len() of a 0-d array")
        return self._data.shape[0]

    def __iter__(self):
        # Iterates over the first axis (sub-arrays on the same device), as NumPy/CuPy do;
        # libraries (e.g. scikit-learn) test hasattr(x, "__iter__") for sequences.
        if not self._data.shape:
            raise TypeError("ruda: iteration over a 0-d array")
        return (self[i] for i in range(self._data.shape[0]))

    # namespace and interchange -----------------------------------------
    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in API_VERSIONS:
            raise ValueError(f"ruda: unsupported api_version {api_version!r}; supported: "
                             f"{', '.join(API_VERSIONS)}")
        return namespace

    def __dlpack__(self, /, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        if _dtypes.bfloat16 is not None and self._dtype == _dtypes.bfloat16 and \
                self._device.kind != "cuda":          # CuPy exports it; NumPy's DLPack cannot
            raise BufferError("ruda: __dlpack__: bfloat16 does not travel over DLPack from the host "
                              "(NumPy's DLPack lacks it); export x.astype(ruda.float32) instead, "
                              "or its bits: np.asarray(x).view(np.uint16)")
        return self._device.backend.to_dlpack(self._data, stream=stream, max_version=max_version,
                                              dl_device=dl_device, copy=copy)

    def __dlpack_device__(self, /) -> tuple[int, int]:
        return self._device.backend.dlpack_device(self._data)

    def to_device(self, device: Device | str, /, *, stream: Any = None) -> Array:
        dest = _device(device)
        if dest is self._device:
            return self
        if not dest.backend.supports(self._dtype):
            raise TypeError(f"ruda: to_device: {_dtypes.name(self._dtype)} is not supported on "
                            f"'{dest}'{dest.backend.unsupported_reason(self._dtype)}; cast it "
                            f"first (astype(x, dtype, device=...) does both)")
        host = self._device.backend.to_host(self._data)
        return Array._new(dest.backend.from_host(host), dest)

    def _host(self, what):
        if self._device is not CPU:
            raise TypeError(f"ruda: {what} needs a host array; this array is on "
                            f"'{self._device}': call x.to_device('cpu') first")
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if self._device is not CPU:   # TypeError, or a host copy under ruda.allow_host_conversion()
            return _host_conversion.to_numpy(self, dtype, copy)
        a = self._data
        if copy is False and dtype is not None and np.dtype(dtype) != a.dtype:   # NumPy 2's protocol
            raise ValueError(f"ruda: __array__: copy=False with dtype={np.dtype(dtype)}; this array "
                             f"is {a.dtype}, so that needs a copy")
        return np.asarray(a, dtype=dtype, copy=copy)

    def __buffer__(self, flags, /):
        return memoryview(self._host("the buffer protocol"))

    # Python scalars ----------------------------------------------------
    def _scalar(self, what, hint=""):
        if self._data.shape != ():
            raise TypeError(f"ruda: {what}() needs a 0-d array; got shape {self.shape}{hint}")
        return _python(self._device.backend.to_host(self._data)).item()

    def __bool__(self) -> bool:
        return builtins_bool(self._scalar("bool"))

    def __int__(self) -> int:
        v = self._scalar("int")
        if isinstance(v, complex):
            raise TypeError("ruda: int() of a complex array")
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise (ValueError if v != v else OverflowError)(f"ruda: cannot convert {v} to int")
        return int(v)

    def __float__(self) -> float:
        v = self._scalar("float")
        if isinstance(v, complex):
            raise TypeError("ruda: float() of a complex array")
        return float(v)

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __format__(self, spec: str) -> str:
        if self._data.shape == ():
            return format(self._scalar("format"), spec)   # f"{loss:.4f}"
        if spec:
            raise TypeError(f"ruda: format spec {spec!r} needs a 0-d array; got shape {self.shape}")
        return str(self)

    def __round__(self, ndigits: int | None = None) -> int | float:
        """``round(loss, 4)`` of a 0-d array, as of its Python scalar; elementwise: ruda.round."""
        return round(self._scalar("round", " (ruda.round(x) rounds elementwise)"), ndigits)

    # Python objects (extensions beyond the standard, as in NumPy, CuPy and PyTorch) ----------
    def item(self) -> bool | int | float | complex:
        """The one element as a Python scalar (any shape of size 1); copies it to the host."""
        if self.size != 1:
            raise ValueError(f"ruda: item() needs an array of one element; got shape {self.shape}")
        return _python(self._device.backend.to_host(self._data)).item()

    def tolist(self) -> Any:
        """Nested Python lists of Python scalars (a scalar for a 0-d array); copies to the host."""
        return _python(self._device.backend.to_host(self._data)).tolist()

    # copy and pickle: every device, through a host copy for pickle -----------------------------
    def __copy__(self) -> Array:
        return Array._new(self._device.backend.astype(self._data, self._data.dtype, True),
                          self._device)

    def __deepcopy__(self, memo: Any) -> Array:
        return self.__copy__()

    def __reduce__(self):
        return (_unpickle, (self._device.backend.to_host(self._data), str(self._device)))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iu":
            raise TypeError(f"ruda: __index__ needs an integer array; got {_dtypes.name(self._dtype)}")
        return int(self._scalar("index"))

    # display -----------------------------------------------------------
    def _shown(self):
        """(host array, print options) for NumPy's array2string under the current print options.
        Past the threshold only each long axis's edge items come to the host, with one middle
        item between them that NumPy's summary (forced by threshold 0) drops for the "..."."""
        data, backend = self._data, self._device.backend
        opts = np.get_printoptions()
        e = opts["edgeitems"]
        if data.size <= opts["threshold"]:
            return backend.to_host(data), {}
        for axis, n in enumerate(data.shape):
            if n > 2 * e + 1:
                head = (slice(None),) * axis
                data = backend.concat([backend.getitem(data, head + (part,)) for part in (
                    slice(0, e), slice(n // 2, n // 2 + 1), slice(n - e, n))], axis=axis)
        return backend.to_host(data), {"threshold": 0}

    def __repr__(self) -> str:
        host, opts = self._shown()
        body = np.array2string(host, separator=", ", prefix="Array(", **opts)
        extra = f", shape={self.shape}" if 0 in self.shape else ""
        return f"Array({body}{extra}, dtype={_dtypes.name(self._dtype)}, device='{self._device}')"

    def __str__(self) -> str:
        host, opts = self._shown()
        return np.array2string(host, **opts)

    if TYPE_CHECKING:
        # Installed by ruda._operators (each is the namespace function of its name; with the C
        # accelerator the number slots of ruda._speedups.Base); declared here for type checkers.
        def __add__(self, other: Array | _Scalar, /) -> Array: ...
        def __radd__(self, other: _Scalar, /) -> Array: ...
        def __iadd__(self, other: Array | _Scalar, /) -> Array: ...
        def __sub__(self, other: Array | _Scalar, /) -> Array: ...
        def __rsub__(self, other: _Scalar, /) -> Array: ...
        def __isub__(self, other: Array | _Scalar, /) -> Array: ...
        def __mul__(self, other: Array | _Scalar, /) -> Array: ...
        def __rmul__(self, other: _Scalar, /) -> Array: ...
        def __imul__(self, other: Array | _Scalar, /) -> Array: ...
        def __truediv__(self, other: Array | _Scalar, /) -> Array: ...
        def __rtruediv__(self, other: _Scalar, /) -> Array: ...
        def __itruediv__(self, other: Array | _Scalar, /) -> Array: ...
        def __floordiv__(self, other: Array | _Scalar, /) -> Array: ...
        def __rfloordiv__(self, other: _Scalar, /) -> Array: ...
        def __ifloordiv__(self, other: Array | _Scalar, /) -> Array: ...
        def __mod__(self, other: Array | _Scalar, /) -> Array: ...
        def __rmod__(self, other: _Scalar, /) -> Array: ...
        def __imod__(self, other: Array | _Scalar, /) -> Array: ...
        def __pow__(self, other: Array | _Scalar, /) -> Array: ...
        def __rpow__(self, other: _Scalar, /) -> Array: ...
        def __ipow__(self, other: Array | _Scalar, /) -> Array: ...
        def __and__(self, other: Array | _Scalar, /) -> Array: ...
        def __rand__(self, other: _Scalar, /) -> Array: ...
        def __iand__(self, other: Array | _Scalar, /) -> Array: ...
        def __or__(self, other: Array | _Scalar, /) -> Array: ...
        def __ror__(self, other: _Scalar, /) -> Array: ...
        def __ior__(self, other: Array | _Scalar, /) -> Array: ...
        def __xor__(self, other: Array | _Scalar, /) -> Array: ...
        def __rxor__(self, other: _Scalar, /) -> Array: ...
        def __ixor__(self, other: Array | _Scalar, /) -> Array: ...
        def __lshift__(self, other: Array | _Scalar, /) -> Array: ...
        def __rlshift__(self, other: _Scalar, /) -> Array: ...
        def __ilshift__(self, other: Array | _Scalar, /) -> Array: ...
        def __rshift__(self, other: Array | _Scalar, /) -> Array: ...
        def __rrshift__(self, other: _Scalar, /) -> Array: ...
        def __irshift__(self, other: Array | _Scalar, /) -> Array: ...
        def __lt__(self, other: Array | _Scalar, /) -> Array: ...
        def __le__(self, other: Array | _Scalar, /) -> Array: ...
        def __gt__(self, other: Array | _Scalar, /) -> Array: ...
        def __ge__(self, other: Array | _Scalar, /) -> Array: ...
        def __eq__(self, other: object, /) -> Array: ...  # type: ignore[override]
        def __ne__(self, other: object, /) -> Array: ...  # type: ignore[override]
        def __neg__(self, /) -> Array: ...
        def __pos__(self, /) -> Array: ...
        def __abs__(self, /) -> Array: ...
        def __invert__(self, /) -> Array: ...
        def __matmul__(self, other: Array, /) -> Array: ...
        def __imatmul__(self, other: Array, /) -> Array: ...
        def __getitem__(self, key: Any, /) -> Array: ...
        def __setitem__(self, key: Any, value: Array | _Scalar, /) -> None: ...
        # the methods of ruda._methods: the namespace function of the same name
        def astype(self, dtype: _dtypes.DType, /, **kwargs: Any) -> Array: ...
        def reshape(self, *shape: Any, **kwargs: Any) -> Array: ...
        def sum(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def prod(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def mean(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def std(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def var(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def min(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def max(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def all(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def any(self, axis: int | tuple[int, ...] | None = None, **kwargs: Any) -> Array: ...
        def argmax(self, axis: int | None = None, **kwargs: Any) -> Array: ...
        def argmin(self, axis: int | None = None, **kwargs: Any) -> Array: ...


builtins_bool = bool
_Scalar = bool | int | float | complex   # the Python scalars an operator takes
Array.__hash__ = None


def _python(host):
    """A host array whose .item()/.tolist() give Python scalars (bfloat16 ones give ml_dtypes')."""
    bf16 = _dtypes.bfloat16   # None without ml_dtypes (and a NumPy dtype equals None if float64)
    return host.astype(np.float32) if bf16 is not None and host.dtype == bf16 else host


def _unpickle(host, device_spec):
    """An array of ``host``'s values on the device spelled ``device_spec`` (pickle's rebuild)."""
    dev = _device(device_spec)
    return Array._new(dev.backend.from_host(host), dev)


def new(data, device, _alloc=object.__new__):
    """Wrap native ``data`` on ``device`` (the fast twin of ``Array._new``)."""
    self = _alloc(Array)
    self._data = data
    self._device = device
    return self


if _speedups is not None:
    _speedups.setup(Array, CPU, np.ndarray, np.asarray, _dtypes.float64, _dtypes.int64,
                    _dtypes.complex128, np.empty((2, 3, 5)))
    new = _speedups.new
    Array._new = staticmethod(new)
    from ruda import _devices
    _speedups.devices(_devices.default, _devices.block_default)   # what ruda.asarray's fast path
    _devices.watch_default(_speedups.fixed_default)                # asks: is the default cpu?

# The namespace that ``__array_namespace__`` returns: ``ruda/__init__.py`` sets it to the ``ruda``
# module once that is complete (the array layer sits below the namespace and does not import it).
namespace = None

Device.__module__ = "ruda"
Array.__module__ = "ruda"
