"""Data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type."""
from __future__ import annotations

import numpy as np

from ruda import _devices, _dtypes
from ruda import _validation as v
from ruda._array import Array
from ruda._typing import Device, DType, Scalar


def astype(x: Array, dtype: DType, /, *, copy: bool = True,
           device: Device | None = None, fn: str = "astype") -> Array:
    v.array(fn, "x", x)
    dev = x._device if device is None else _devices.device(device)
    dt = v.dtype(fn, dtype, dev)
    if x._dtype.kind == "c" and dt.kind not in "cb":     # to bool: nonzero, as the standard says
        raise TypeError(f"ruda.{fn}: casting complex {_dtypes.name(x._dtype)} to "
                        f"{_dtypes.name(dt)} would drop the imaginary part; take real() first")
    if dev is not x._device:
        if dt != x._dtype and not dev.backend.supports(x._dtype):   # cast where x's dtype is
            x = Array._new(x._device.backend.astype(x._data, dt, True), x._device)
        x = x.to_device(dev)
        copy = False
    if dt == x._dtype and not copy:
        return x
    return Array._new(dev.backend.astype(x._data, dt, bool(copy)), dev)


def _as_dtype(fn, arg, obj):
    """The NumPy dtype of array or dtype ``obj``."""
    if obj.__class__ is Array:
        return obj._dtype
    dt = _dtypes.named(obj)          # a ruda dtype, np.float32 or "float32"
    if dt is not None:
        return dt
    raise TypeError(f"ruda.{fn}: {arg} must be a ruda dtype or array; got {obj!r}")


def can_cast(from_: DType | Array, to: DType, /) -> bool:
    """Whether ``from_`` casts to ``to`` without loss: the standard's rule, and NumPy's 'safe' casting across kinds."""
    src = _as_dtype("can_cast", "from_", from_)
    dst = _as_dtype("can_cast", "to", to)
    return bool(np.can_cast(src, dst, casting="safe"))


def finfo(type: DType | Array, /) -> _dtypes.finfo_object:
    dt = _as_dtype("finfo", "type", type)
    if dt.kind not in "fcV":
        raise TypeError(f"ruda.finfo: needs a floating dtype; got {_dtypes.name(dt)}")
    return _dtypes.finfo_object(dt)


def iinfo(type: DType | Array, /) -> _dtypes.iinfo_object:
    dt = _as_dtype("iinfo", "type", type)
    if dt.kind not in "iu":
        raise TypeError(f"ruda.iinfo: needs an integer dtype; got {_dtypes.name(dt)}")
    return _dtypes.iinfo_object(dt)


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> bool:
    dt = _dtypes.named(dtype)
    if dt is None:
        raise TypeError(f"ruda.isdtype: dtype must be a ruda dtype; got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _dtypes.KINDS:
            raise ValueError(f"ruda.isdtype: unknown kind {kind!r}; expected one of "
                             f"{', '.join(_dtypes.KINDS)}")
        return dt in _dtypes.KINDS[kind]
    if (kdt := _dtypes.named(kind)) is not None:
        return dt == kdt
    raise TypeError(f"ruda.isdtype: kind must be a dtype, a kind name or a tuple; got {kind!r}")


def result_type(*arrays_and_dtypes: Array | DType | Scalar) -> DType:
    dts, scalars = [], []
    for i, a in enumerate(arrays_and_dtypes):
        if isinstance(a, np.generic):   # a 0-d array of its own dtype
            dts.append(_as_dtype("result_type", f"arrays_and_dtypes[{i}]", a.dtype))
        elif v.is_scalar(a):
            scalars.append(a)
        else:
            dts.append(_as_dtype("result_type", f"arrays_and_dtypes[{i}]", a))
    if not dts:
        raise ValueError("ruda.result_type: needs at least one array or dtype")
    out = dts[0]
    for d in dts[1:]:
        out = _dtypes.promote(out, d)
    # a Python float beside integers takes the default float of the arrays' device, as operators do
    dev = next((a._device for a in arrays_and_dtypes if a.__class__ is Array), None) or \
        _devices.default()
    for s in scalars:
        out = v.scalar_dtype("result_type", s, out, dev)
    return _dtypes.public(out)


# with the C accelerator, ruda/_accelerate.py lists the functions here it gives a host fast path
# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"))
