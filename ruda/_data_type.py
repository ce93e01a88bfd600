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


_HALVES = frozenset(_dtypes.extension_dtypes)      # float16, bfloat16 (where ml_dtypes is)


def promote_all(fn, dts, dev=None):
    """The promoted dtype of the NumPy dtypes ``dts`` taken as one set, so that their order does
    not matter (a pairwise fold does: int16, uint16 then float32 goes through int32 to float64,
    float32 first stays float32).  Two distinct dtypes follow the pairwise table; more follow
    NumPy 2's ``result_type`` of the set, which is the standard's answer wherever every pair is
    in the standard's table (its table is associative within a kind).  The half dtypes keep the
    written table's answers: bfloat16 promotes as float16 does (the same table), and the two
    together stand for the float32 their pair gives.  With ``dev``, a result the device lacks
    raises a TypeError naming ``fn`` (a browser-class adapter has no float64)."""
    first = dts[0]
    if len(dts) <= 2 and dts[-1] == first:  # the common case (one dtype): nothing to promote
        return first
    uniq = list(dict.fromkeys(dts))         # distinct, in the order given (for the message)
    if len(uniq) == 1:
        return first
    if len(uniq) == 2:                      # the pairwise table, and its message
        return _dtypes.promote(*uniq) if dev is None else v.promote_on(fn, dev, *uniq)
    halves = [d for d in uniq if d in _HALVES]
    rest = [d for d in uniq if d not in _HALVES]
    if len(halves) == 2:
        rest.append(_dtypes.float32)
    elif halves:
        rest.append(_dtypes.float16)
    out = np.result_type(*rest)
    if out == _dtypes.float16:              # only where a half dtype went in as float16
        out = halves[0]
    if dev is not None and not dev.backend.supports(out):
        n = _dtypes.name
        raise TypeError(f"ruda.{fn}: {', '.join(map(n, uniq[:-1]))} and {n(uniq[-1])} promote "
                        f"to {n(out)}, which device '{dev}' lacks"
                        f"{dev.backend.unsupported_reason(out)}; cast an operand first (ruda.astype)")
    return out


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
    out = promote_all("result_type", dts)
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
