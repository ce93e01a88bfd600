"""The host backend: native arrays are ``numpy.ndarray``.

Ops come from array-api-compat's NumPy namespace (which already follows the
standard where NumPy differs) with the fixes ruda needs; every result is made
an ``ndarray`` (NumPy returns scalars from 0-d operations).
"""
import numpy as np
import array_api_compat.numpy as cnp

from ruda import _dtypes
from ruda.backends import OPS, Backend
from ruda.backends.host import _ops

_ndarray = np.ndarray
_generic = np.generic


def _fix(r):
    """Make NumPy results native: ndarray, never a NumPy scalar."""
    if isinstance(r, _generic):
        return np.asarray(r)
    if isinstance(r, tuple):
        fixed = [_fix(v) for v in r]
        return type(r)(*fixed) if hasattr(r, "_fields") else tuple(fixed)
    if isinstance(r, list):
        return [_fix(v) for v in r]
    return r


def _wrap(fn):
    if isinstance(fn, np.ufunc) and fn.nin == 1:
        def op(a):
            r = fn(a)
            return r if r.__class__ is _ndarray else _fix(r)
    elif isinstance(fn, np.ufunc) and fn.nin == 2:
        def op(a, b):
            r = fn(a, b)
            return r if r.__class__ is _ndarray else _fix(r)
    else:
        def op(*args, **kwargs):
            r = fn(*args, **kwargs)
            return r if r.__class__ is _ndarray else _fix(r)

    op.__name__ = getattr(fn, "__name__", "op")
    return op


def _source(name):
    """Where the host implementation of op ``name`` lives."""
    impl = getattr(_ops, name, None)
    if impl is not None:
        return impl
    if name.startswith("linalg_"):
        return getattr(cnp.linalg, name[7:])
    if name.startswith("fft_"):
        return getattr(cnp.fft, name[4:])
    return getattr(cnp, name)


class HostBackend(Backend):
    kind = "cpu"
    features = frozenset({"float64", "complex128", "int64"})
    fallbacks = {}

    @property
    def nn(self):
        """This device's fused nn kernels (``ruda.backends.NN_KERNELS``), imported on first use."""
        k = self.__dict__.get("_nn")
        if k is None:
            from ruda.backends.host import _nn as k
            self.__dict__["_nn"] = k
        return k
    _instance = None

    @classmethod
    def instance(cls):
        if cls._instance is None:
            cls._instance = cls(0)
        return cls._instance

    @classmethod
    def discover(cls):
        return [0]

    def describe(self):
        return f"cpu (NumPy {np.__version__})"

    def dtypes(self):
        return _dtypes.all_dtypes + _dtypes.extension_dtypes

    def default_dtypes(self):
        return {"real floating": _dtypes.float64, "complex floating": _dtypes.complex128,
                "integral": _dtypes.int64, "indexing": _dtypes.int64}

    # storage -----------------------------------------------------------
    def is_native(self, obj):
        return obj.__class__ is _ndarray

    def from_host(self, a):
        return a

    def to_host(self, a):
        return a

    def to_host_later(self, a):
        """The contract's: a copy taken now (``to_host`` hands out the array itself)."""
        out = a.copy()
        return lambda: out

    def asarray(self, a, dtype=None, copy=None):
        return np.asarray(a, dtype=dtype, copy=copy) if copy is not None else np.asarray(a, dtype=dtype)

    def scalar(self, value, dtype):
        return np.asarray(value, dtype=dtype)

    def from_dlpack(self, obj, copy=None):
        return np.from_dlpack(obj, copy=copy)

    def binary_ufunc(self, name):
        """NumPy's ufunc when op ``name`` is exactly one (this backend's method only turns NumPy
        scalars into 0-d arrays, as the C accelerator does itself)."""
        impl = _source(name)
        return impl if isinstance(impl, np.ufunc) and impl.nin == 2 else None



for _name in OPS:
    setattr(HostBackend, _name, staticmethod(_wrap(_source(_name))))
del _name
