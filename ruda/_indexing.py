"""Indexing: __getitem__/__setitem__ key validation, take and take_along_axis."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ruda import _dtypes
from ruda import _validation as v
from ruda._array import Array, new as _new


def _index(fn, k):
    try:
        return operator.index(k)
    except TypeError:
        raise IndexError(f"ruda: {fn} got an unsupported index of type {type(k).__name__}; "
                         f"use integers, slices, ..., None, or integer/boolean ruda arrays") from None


def _slice(fn, s):
    parts = []
    for p in (s.start, s.stop, s.step):
        parts.append(None if p is None else _index(fn, p))
    if parts[2] == 0:
        raise ValueError(f"ruda: {fn}: slice step must not be zero")
    return slice(*parts)


def _index_array(fn, dev, k):
    """A list or NumPy array index as a native index array on ``dev``, checked on the host
    first (integers or booleans; int64 goes as the index dtype of a device without it)."""
    from ruda._creation import asarray
    k = np.asarray(k)
    if k.size == 0 and k.dtype.kind == "f":     # [] and [[], []]: NumPy's empty integer index
        k = k.astype(np.intp)
    if k.dtype.kind not in "iub":
        raise IndexError(f"ruda: {fn}: list and NumPy array indices must hold integers or booleans")
    if k.dtype.kind in "iu" and not dev.backend.supports(k.dtype):
        idx = np.dtype(v.default_dtype(dev, "indexing"))
        info = np.iinfo(idx)
        if k.size and (k.min() < info.min or k.max() > info.max):
            raise IndexError(f"ruda: {fn}: index values beyond {_dtypes.name(idx)}, the index "
                             f"dtype of device '{dev}'")
        k = k.astype(idx)
    return k, asarray(k, device=dev)._data


def normalize_key(fn, x, key):
    """Validate ``key`` for array ``x``; return it with native arrays in place of ruda arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    dev = x._device
    out = []
    dims = []          # dimensions each entry consumes (None for Ellipsis)
    hosts = {}         # position in out -> a list or NumPy index, checked against its axis
    for k in key:
        if k is None:
            out.append(None)
            dims.append(0)
        elif k is Ellipsis:
            if None in dims:
                raise IndexError(f"ruda: {fn}: an index can only have a single ellipsis (...)")
            out.append(Ellipsis)
            dims.append(None)
        elif isinstance(k, slice):
            out.append(_slice(fn, k))
            dims.append(1)
        elif k.__class__ is Array:
            if k._device is not dev:
                v.same_device(fn, x, k)
            kind = k._dtype.kind
            if kind == "b":
                dims.append(k.ndim)
            elif kind in "iu":
                dims.append(1)
            else:
                raise IndexError(f"ruda: {fn}: array indices must have an integer or boolean dtype; "
                                 f"got {_dtypes.name(k._dtype)}")
            out.append(k._data)
        elif isinstance(k, builtins.bool | np.bool_):    # np.True_ as True (NumPy)
            out.append(builtins.bool(k))
            dims.append(0)
        elif isinstance(k, list | np.ndarray):   # as an index array on x's device
            hosts[len(out)], arr = _index_array(fn, dev, k)
            out.append(arr)
            dims.append(arr.ndim if arr.dtype.kind == "b" else 1)
        else:
            out.append(_index(fn, k))
            dims.append(1)
    _check_ints(fn, x.shape, out, dims, hosts)
    shapes = [o.shape for o, d in zip(out, dims) if d == 1 and getattr(o, "dtype", None) is not None]
    if len(shapes) > 1:     # NumPy's IndexError on every device (CuPy raises ValueError)
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError(f"ruda: {fn}: shape mismatch: indexing arrays could not be broadcast "
                             f"together with shapes {' '.join(map(str, shapes))}") from None
    return tuple(out)


def _check_ints(fn, shape, key, dims, hosts):
    used = sum(d for d in dims if d is not None)
    if used > len(shape):
        raise IndexError(f"ruda: {fn}: too many indices for an array of shape {shape}: "
                         f"{used} dimensions indexed")
    pos = 0
    for i, (k, d) in enumerate(zip(key, dims)):
        if d is None:
            pos = len(shape) - sum(d2 for d2 in dims[dims.index(None) + 1:])
            continue
        h = hosts.get(i)
        if h is not None and h.dtype.kind in "iu" and h.size:   # its extremes, as NumPy reports
            lo = int(h.min())
            k = lo if lo < -shape[pos] else int(h.max())
        if isinstance(k, int) and not isinstance(k, builtins.bool):
            n = shape[pos]
            if not -n <= k < n:
                raise IndexError(f"ruda: {fn}: index {k} is out of bounds for axis {pos} with size {n}")
        pos += d


def _simple(key):
    """A lone int or a slice of ints/None: needs no further validation."""
    c = key.__class__
    if c is int:
        return True
    return c is slice and key.step != 0 and all(
        p is None or p.__class__ is int for p in (key.start, key.stop, key.step))


def getitem(self, key, /):
    data = self._data
    if data.shape and _simple(key) and (key.__class__ is slice or -data.shape[0] <= key < data.shape[0]):
        return _new(self._device._backend.getitem(data, (key,)), self._device)
    k = normalize_key("__getitem__", self, key)
    try:
        return Array._new(self._device.backend.getitem(self._data, k), self._device)
    except (IndexError, ValueError) as e:    # CuPy's index arrays that do not broadcast: ValueError
        raise IndexError(f"ruda: __getitem__: {e}") from None


_SCALAR_KINDS = {int: "iufc", float: "fc"}   # Python scalar -> array kinds that store it as is


def _int0d(e):
    """A 0-d integer index array: one position, as an int."""
    return getattr(e, "shape", None) == () and e.dtype.kind in "iu"


def setitem(self, key, value, /):
    v.writable("__setitem__", self)
    data = self._data
    if data.shape and _simple(key) and data.dtype.kind in _SCALAR_KINDS.get(value.__class__, "") \
            and (key.__class__ is slice or -data.shape[0] <= key < data.shape[0]):
        backend = self._device._backend
        return backend.setitem(data, (key,), v.scalar(self._device, value, data.dtype, "__setitem__"))
    k = normalize_key("__setitem__", self, key)
    dev, dt = self._device, self._data.dtype
    if isinstance(value, np.generic):   # a 0-d array of its own dtype, as in operators
        value = Array._new(v.numpy_scalar("__setitem__", "value", value, dev), dev)
    if value.__class__ is Array:
        if value._device is not dev:
            v.same_device("__setitem__", self, value)
        val = value._data
        if val.ndim and len(k) == self.ndim and all(e.__class__ is int or _int0d(e) for e in k):
            # one element (NumPy's rule; a GPU backend would take the first of a size-1 value)
            raise ValueError(f"ruda: __setitem__: setting an array element with a sequence: the "
                             f"key names one element, the value has shape {val.shape}")
        if val.dtype != dt:
            if _dtypes.kind_rank(val.dtype) > _dtypes.kind_rank(dt):
                raise TypeError(f"ruda: __setitem__: cannot store {_dtypes.name(val.dtype)} values "
                                f"in a {_dtypes.name(dt)} array")
            val = dev.backend.astype(val, dt, True)
    elif v.is_scalar(value):
        if v.scalar_dtype("__setitem__", value, dt, dev) != dt and not isinstance(value, int | float):
            raise TypeError(f"ruda: __setitem__: cannot store a {type(value).__name__} in a "
                            f"{_dtypes.name(dt)} array")
        if isinstance(value, float) and dt.kind in "iub":
            raise TypeError(f"ruda: __setitem__: cannot store a float in a {_dtypes.name(dt)} array")
        if isinstance(value, int) and dt.kind == "b" and not isinstance(value, builtins.bool):
            raise TypeError("ruda: __setitem__: cannot store an int in a bool array")
        val = v.scalar(dev, value, dt, "__setitem__")
    else:
        raise v.operand_error("__setitem__", "value", value)
    try:
        dev.backend.setitem(self._data, k, val)
    except (IndexError, ValueError) as e:
        raise type(e)(f"ruda: __setitem__: {e}") from None


def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    v.array("take", "x", x)
    v.array("take", "indices", indices)
    dev = v.same_device("take", x, indices)
    v.category("take", "indices", indices._dtype, "integer")
    if indices.ndim != 1:
        raise ValueError(f"ruda.take: indices must be 1-D; got shape {indices.shape}")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"ruda.take: axis is required for a {x.ndim}-D array")
        axis = 0
    axis = v.axis("take", axis, max(x.ndim, 1))
    data = x._data if x.ndim else dev.backend.reshape(x._data, (1,))   # NumPy's: 0-d as 1-d
    try:
        return Array._new(dev.backend.take(data, indices._data, axis=axis), dev)
    except IndexError as e:     # cpu: an index out of bounds (a GPU reads 0 there)
        raise IndexError(f"ruda.take: {e}") from None


def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    v.array("take_along_axis", "x", x)
    v.array("take_along_axis", "indices", indices)
    dev = v.same_device("take_along_axis", x, indices)
    v.category("take_along_axis", "indices", indices._dtype, "integer")
    if indices.ndim != x.ndim:
        raise ValueError(f"ruda.take_along_axis: indices must have x's number of dimensions "
                         f"({x.ndim}); got shape {indices.shape}")
    axis = v.axis("take_along_axis", axis, x.ndim)
    if any(a != b and 1 not in (a, b) for i, (a, b) in enumerate(zip(x.shape, indices.shape))
           if i != axis):       # the other axes broadcast, as NumPy's
        raise ValueError(f"ruda.take_along_axis: x's shape {x.shape} and indices' shape "
                         f"{indices.shape} must broadcast on the axes other than {axis}")
    try:
        return Array._new(dev.backend.take_along_axis(x._data, indices._data, axis=axis), dev)
    except IndexError as e:     # cpu: an index out of bounds (a GPU reads 0 there)
        raise IndexError(f"ruda.take_along_axis: {e}") from None

# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("take", "take_along_axis"))
