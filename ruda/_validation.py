"""Validation shared by every namespace function: one helper per check.

Messages name the function (``ruda.<fn>``), the argument, what was expected
and what came.  Dtype category -> TypeError; shape/device/axis -> ValueError.
"""
import builtins
import numbers
import operator

import numpy as np

from ruda import _dtypes, _devices
from ruda._array import Array

_CATEGORY_SETS = {k: frozenset(v) for k, v in _dtypes.CATEGORIES.items()}
_SCALAR_TYPES = (builtins.bool, int, float, complex)
# Operands an operator takes besides arrays: Python scalars and NumPy scalars (np.generic), the
# latter as 0-d arrays of their own dtype (NumPy 2's rule: np.int64(2) is an int64 array).
_OPERAND_TYPES = _SCALAR_TYPES + (np.generic,)
# What the operators refuse with a TypeError rather than answer NotImplemented (which would make
# `x == np_array` the bare False of Python's identity fallback): other libraries' arrays, lists.
_FOREIGN_ARRAYS = (np.ndarray, list, tuple, range)


def array(fn, arg, x):
    """Require an ruda Array."""
    if x.__class__ is not Array:
        raise TypeError(f"ruda.{fn}: {arg} must be a ruda array; got {type(x).__name__}")
    return x


def category(fn, arg, dtype, cat):
    if dtype not in _CATEGORY_SETS[cat]:
        a = "an" if cat[0] in "aeiou" else "a"
        raise TypeError(f"ruda.{fn}: {arg} must have {a} {cat} dtype; got {_dtypes.name(dtype)}")


def writable(fn, x):
    """ValueError if x is a broadcast view (a zero stride on an axis longer than 1): its elements
    share memory, so a write would land on all of them (NumPy makes such views read-only).
    Empty arrays, whose strides may be 0 anywhere, hold nothing to share."""
    data = x._data
    if 0 in data.strides and 0 not in data.shape and \
            any(s == 0 and n > 1 for n, s in zip(data.shape, data.strides)):
        raise ValueError(f"ruda.{fn}: the array is a broadcast view (broadcast_to, "
                         f"broadcast_arrays) whose elements share memory; write into a copy, "
                         f"ruda.asarray(x, copy=True)")


def same_device(fn, *arrays):
    """The common device of ``arrays``; ValueError naming both if they differ."""
    dev = arrays[0]._device
    for a in arrays[1:]:
        if a._device is not dev:
            raise ValueError(f"ruda.{fn}: arrays are on different devices, '{dev}' and "
                             f"'{a._device}'; move one explicitly with .to_device()")
    return dev


def device_or_default(dev):
    return _devices.default() if dev is None else _devices.device(dev)


def dtype(fn, dt, dev, arg="dtype"):
    """A dtype argument, checked to be a ruda dtype the device supports: its NumPy dtype."""
    dt = _dtypes.as_numpy(dt)
    if isinstance(dt, np.dtype) and dt in dev.backend._dtype_set:
        return dt
    if not _dtypes.is_dtype(dt):
        if isinstance(dt, type) and dt in _SCALAR_RANK:   # NumPy's dtype=float: the default
            rank = _SCALAR_RANK[dt]                          # of that kind on the device
            return np.dtype(bool) if rank == 0 else default_dtype(dev, _KIND_DEFAULT[rank])
        dt = _dtypes.named(dt) or dt       # np.float32, "float32"
        if not _dtypes.is_dtype(dt):
            raise TypeError(f"ruda.{fn}: {arg} must be a ruda dtype such as ruda.float32; "
                            f"got {dt!r}")
    dt = np.dtype(dt)
    if not dev.backend.supports(dt):
        raise TypeError(f"ruda.{fn}: {arg}={_dtypes.name(dt)} is not supported on device "
                        f"'{dev}'{dev.backend.unsupported_reason(dt)} "
                        f"(supported: {', '.join(_dtypes.name(d) for d in dev.backend.dtypes())})")
    return dt


def default_dtype(dev, kind):
    return dev.backend.default_dtypes()[kind]


def promote_on(fn, dev, dt1, dt2):
    """The promoted dtype of ``dt1`` and ``dt2``, which device ``dev`` must have (a browser-class
    adapter lacks the float64 that int32 with float32 gives)."""
    dt = _dtypes.promote(dt1, dt2)
    if not dev.backend.supports(dt):
        n = _dtypes.name
        raise TypeError(f"ruda.{fn}: {n(dt1)} with {n(dt2)} promotes to {n(dt)}, "
                        f"which device '{dev}' lacks{dev.backend.unsupported_reason(dt)}; cast "
                        f"an operand first (ruda.astype)")
    return dt


def integer(fn, arg, value):
    """An integer argument (anything with ``__index__``) as an int, else a TypeError naming it."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"ruda.{fn}: {arg} must be an integer; got {type(value).__name__}") from None


def axis(fn, ax, ndim, arg="axis"):
    """Normalize one axis to a non-negative int (a bool is no axis, as in NumPy)."""
    if ax.__class__ is bool or isinstance(ax, np.bool_):
        raise TypeError(f"ruda.{fn}: {arg} must be an integer; got bool")
    ax = integer(fn, arg, ax)
    if not -ndim <= ax < ndim:
        raise IndexError(f"ruda.{fn}: {arg}={ax} is out of bounds for an array of {ndim} dimensions")
    return ax % ndim if ndim else 0


_ALL_AXES = [tuple(range(n)) for n in range(65)]


def axes(fn, ax, ndim, arg="axis"):
    """Normalize None / int / tuple of ints to a tuple of unique non-negative axes."""
    if ax is None:
        return _ALL_AXES[ndim]
    if isinstance(ax, tuple | list):
        out = tuple(axis(fn, a, ndim, arg) for a in ax)
        if len(set(out)) != len(out):
            raise ValueError(f"ruda.{fn}: {arg}={ax} repeats an axis")
        return out
    return (axis(fn, ax, ndim, arg),)


def shape(fn, sh, arg="shape"):
    """A shape argument as a tuple of non-negative ints."""
    if isinstance(sh, tuple | list):
        try:
            out = tuple(operator.index(s) for s in sh)
        except TypeError:
            raise TypeError(f"ruda.{fn}: {arg} must be a tuple of integers; got {sh!r}") from None
    else:
        try:
            out = (operator.index(sh),)
        except TypeError:
            raise TypeError(f"ruda.{fn}: {arg} must be an integer or a tuple of integers; "
                            f"got {sh!r}") from None
    if any(s < 0 for s in out):
        raise ValueError(f"ruda.{fn}: {arg} must not have negative sizes; got {out}")
    return out


def broadcast_shapes(fn, *shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        off = ndim - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if o == 1:
                out[off + i] = d
            elif d != 1 and d != o:
                raise ValueError(f"ruda.{fn}: shapes {', '.join(str(tuple(t)) for t in shapes)} "
                                 f"cannot be broadcast together")
    return tuple(out)


def is_scalar(v):
    return isinstance(v, _SCALAR_TYPES)


def python_scalar(value):
    """A numeric NumPy scalar as the Python scalar it holds (for parameters that take numbers,
    such as ``correction`` or ``rtol``); anything else unchanged."""
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        return value.item()
    return value


def numpy_scalar(fn, arg, value, dev):
    """NumPy scalar ``value`` as a 0-d native array of its own dtype on ``dev``."""
    dt = value.dtype
    if not _dtypes.is_dtype(dt):
        raise TypeError(f"ruda.{fn}: {arg} is a NumPy {dt} scalar, which has no ruda dtype")
    return scalar(dev, value, dtype(fn, dt, dev, arg), fn)


def foreign_array(value):
    """Is ``value`` another library's array (or a list/tuple), which operators must refuse?"""
    return isinstance(value, _FOREIGN_ARRAYS) or hasattr(value, "__array_namespace__") \
        or hasattr(value, "__dlpack__")


def foreign_number(value):
    """Is ``value`` a number of a type ruda does not take (Decimal, Fraction, ...)?"""
    return isinstance(value, numbers.Number) and not isinstance(value, _OPERAND_TYPES)


def operand_error(fn, arg, value):
    hint = " (convert it with ruda.asarray)" if foreign_array(value) else \
        " (convert it with float() or int())" if foreign_number(value) else ""
    return TypeError(f"ruda.{fn}: {arg} must be a ruda array, a Python scalar or a NumPy scalar; got "
                     f"{type(value).__name__}{hint}")


_SCALAR_RANK = {builtins.bool: 0, int: 1, float: 2, complex: 3}
_KIND_DEFAULT = {1: "integral", 2: "real floating", 3: "complex floating"}


def scalar_dtype(fn, value, dt, dev):
    """Dtype of ``array(dt) <op> value`` for a Python scalar ``value``.

    The standard's rule (the scalar takes the array's dtype) where it applies;
    otherwise NumPy 2's: a scalar of a higher kind gives that kind's default
    dtype, and a complex scalar with a real floating array gives the complex
    dtype of the same precision.
    """
    srank = _SCALAR_RANK.get(type(value))
    if srank is None:
        srank = _SCALAR_RANK[_scalar_type(fn, value)]
    arank = _dtypes.kind_rank(dt)
    if srank <= arank:
        return dt
    if srank == 3 and arank == 2:
        return _dtypes.complex_of(dt)
    if srank == 1 and arank == 0:
        return default_dtype(dev, "integral")
    return default_dtype(dev, _KIND_DEFAULT[srank])


def _scalar_type(fn, value):
    for t in (builtins.bool, int, float, complex):
        if isinstance(value, t):
            return t
    raise TypeError(f"ruda.{fn}: expected a ruda array or a Python scalar; got {type(value).__name__}")


def scalar(dev, value, dt, fn="asarray"):
    """A 0-d native array holding Python scalar ``value`` as ``dt`` on ``dev``."""
    if isinstance(value, np.generic):
        value = value.item()
    if dt.kind in "iu" and isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"ruda.{fn}: cannot represent {value} in {_dtypes.name(dt)}")
    try:
        return dev.backend.scalar(value, dt)
    except OverflowError:
        raise OverflowError(f"ruda.{fn}: the Python scalar {value} is out of range for "
                            f"{_dtypes.name(dt)}") from None
