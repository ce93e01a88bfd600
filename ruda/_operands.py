"""What the elementwise functions share: operand validation and promotion, the dtypes of their
fast paths, and ``clip`` (the one elementwise function with optional operands).

The functions themselves are generated from the table in ``ruda.backends`` into
ruda/_elementwise.py (ruda/_generate.py).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ruda import _dtypes
from ruda import _validation as v
from ruda._array import Array
from ruda._typing import Scalar

_CATS = v._CATEGORY_SETS
# the comparisons, each as Python's operator: uint64 with int64 goes to compare_mixed_sign
COMPARISONS = {"equal": operator.eq, "not_equal": operator.ne, "less": operator.lt,
                "less_equal": operator.le, "greater": operator.gt, "greater_equal": operator.ge}
_MIXED_SIGN = frozenset((_dtypes.uint64, _dtypes.int64))


def cast(dev, a, dt):
    """Native ``a`` as dtype ``dt`` on ``dev`` (itself when it has that dtype)."""
    return a if a.dtype == dt else dev.backend.astype(a, dt, False)


def operands(fn, x1, x2, cat, broadcast=True, float_result=False):
    """Validate two operands (arrays, or one Python or NumPy scalar) of an elementwise op.

    Returns the common device and the two native arrays, cast to the promoted dtype.
    ``float_result``: integer operands give the default real floating dtype (divide); an array and
    a Python scalar are then promoted straight to it, so a Python int is made that float and the
    array's integer range never matters (``uint8 / 256``, as NumPy 2).
    """
    c1 = x1.__class__ is Array
    if c1 and x2.__class__ is Array:
        dev = x1._device
        if x2._device is not dev:
            v.same_device(fn, x1, x2)
        a, b = x1._data, x2._data
        da, db = a.dtype, b.dtype
        if da != db:
            if fn in COMPARISONS and {da, db} == _MIXED_SIGN:    # exact: compare_mixed_sign
                if broadcast and a.shape != b.shape:
                    v.broadcast_shapes(fn, a.shape, b.shape)
                return dev, a, b
            dt = v.promote_on(fn, dev, da, db)
            if dt not in _CATS[cat]:  # mixed inputs are judged by their promoted dtype (NumPy 2 rules)
                v.category(fn, "x1", da, cat)
                v.category(fn, "x2", db, cat)
                v.category(fn, "x1 and x2 promoted", dt, cat)
            a, b = cast(dev, a, dt), cast(dev, b, dt)
        elif da not in _CATS[cat]:
            v.category(fn, "x1", da, cat)
        if broadcast and a.shape != b.shape:
            v.broadcast_shapes(fn, a.shape, b.shape)
        return dev, a, b
    if c1:
        arr, val, arg = x1, x2, "x2"
    elif x2.__class__ is Array:
        arr, val, arg = x2, x1, "x1"
    else:
        raise TypeError(f"ruda.{fn}: at least one of x1, x2 must be a ruda array; got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    if val.__class__ is np.ndarray and val.ndim == 0:   # as NumPy hands its scalars to __array_ufunc__
        val = val[()]
    if isinstance(val, np.generic):   # a 0-d array of its own dtype on arr's device (np.float64 too)
        s = Array._new(v.numpy_scalar(fn, arg, val, arr._device), arr._device)
        return operands(fn, x1, s, cat, broadcast) if c1 else operands(fn, s, x2, cat, broadcast)
    if not v.is_scalar(val):
        raise v.operand_error(fn, arg, val)
    dev = arr._device
    a = arr._data
    dt = v.scalar_dtype(fn, val, a.dtype, dev)
    if dt not in _CATS[cat]:
        v.category(fn, "x1" if c1 else "x2", a.dtype, cat)
        v.category(fn, arg, dt, cat)
    if float_result and dt.kind in "iu":
        dt = v.default_dtype(dev, "real floating")
    a = cast(dev, a, dt)
    try:
        s = v.scalar(dev, val, dt, fn)
    except OverflowError:   # an int beyond dt's range: comparisons answer, the rest raise
        if fn not in COMPARISONS or dt.kind not in "iu":
            raise
        a, s = _beyond_range(dev, a, val, dt)
    return (dev, a, s) if c1 else (dev, s, a)


def _beyond_range(dev, a, val, dt):
    """Stand-ins for integer array ``a`` (dtype ``dt``) compared with a Python int ``val`` outside
    dt's range, which NumPy 2 answers exactly (uint8 == 256 all False, uint8 > -1 all True).
    Every element lies on one side of val: the elements as 0 against a scalar 1 (val above the
    range) or as 1 against a scalar 0 (below) give each comparison's answer in either order."""
    above = int(val > 0)
    return dev.backend.full(a.shape, 1 - above, dt), v.scalar(dev, above, dt)


def compare_mixed_sign(dev, fn, op, a, b):
    """``op(a, b)``, the backend's comparison ``fn``, exactly for uint64 with int64: the pair's
    promotion to float64 would round integers past 2**53. A negative int64 decides alone (the
    uint64 is greater); the rest compare as uint64."""
    bk = dev._backend
    signed_first = a.dtype == _dtypes.int64
    s = a if signed_first else b
    zero = bk.scalar(0, s.dtype)
    neg = bk.less(s, zero)
    s = bk.astype(bk.maximum(s, zero), _dtypes.uint64, False)
    r = op(s, b) if signed_first else op(a, s)
    if COMPARISONS[fn](-1, 0) if signed_first else COMPARISONS[fn](0, -1):
        return bk.logical_or(r, neg)
    return bk.logical_and(r, bk.logical_not(neg))


def fast_dtypes(cat, float_result=False):
    """The dtypes of a binary function's fast paths: (same dtype and shape, no cast needed;
    {int: array dtypes that take a Python int operand as their own dtype, float: ... a float}).
    ``float_result``: integer inputs give a floating result (divide), so they take no fast path."""
    fast = frozenset(d for d in _CATS[cat] if not (float_result and d.kind in "biu"))
    return fast, {int: fast - {_dtypes.bool}, float: frozenset(d for d in fast if d.kind in "fcV")}


def c_dtypes(fast, scalar):
    """``fast_dtypes``' sets as the C accelerator takes them: (fast, int operands, float operands)."""
    return tuple(fast), tuple(scalar[int]), tuple(scalar[float])


def clip(x: Array, /, min: Array | Scalar | None = None,
         max: Array | Scalar | None = None) -> Array:
    """Clamp x to [min, max]; bounds may be arrays or real Python scalars.  The result keeps x's dtype."""
    v.array("clip", "x", x)
    v.category("clip", "x", x._dtype, "real numeric")
    dev = x._device
    lo = _clip_bound(dev, x, "min", min, math.ceil)
    hi = _clip_bound(dev, x, "max", max, math.floor)
    shapes = [x.shape] + [b.shape for b in (lo, hi) if b is not None]
    if len(set(shapes)) > 1:
        v.broadcast_shapes("clip", *shapes)
    return Array._new(dev.backend.clip(x._data, lo, hi), dev)


def _clip_bound(dev, x, arg, b, to_int):
    """A clip bound as a native array of x's dtype (None stays None)."""
    dt = x._dtype
    if b is None:
        return None
    if b.__class__ is Array:
        v.same_device("clip", x, b)
        v.category("clip", arg, b._dtype, "real numeric")
        if dt.kind in "iu" and b._dtype != dt:
            return cast(dev, _saturated(dev, b, dt, arg), dt)
        return cast(dev, b._data, dt)
    b = v.python_scalar(b)
    if not v.is_scalar(b) or isinstance(b, complex):
        raise TypeError(f"ruda.clip: {arg} must be a ruda array, a real Python scalar or None; "
                        f"got {type(b).__name__}")
    if dt.kind in "iu":
        if isinstance(b, float):
            if b != b:
                raise ValueError(f"ruda.clip: {arg} is NaN for an integer array")
            if math.isinf(b):
                b = -(2**64) if b < 0 else 2**64
            else:
                b = to_int(b)
        info = _dtypes.iinfo_object(dt)
        b = info.min if b < info.min else info.max if b > info.max else b
    return v.scalar(dev, b, dt, "clip")


def _saturated(dev, b, dt, arg):
    """An array bound of another dtype than the integer x's, as the scalar bounds are: rounded
    inward and held to dt's range in its own dtype, so that the cast keeps its value (int8 x
    clipped at an int16 200 is 127, never the wrapped -56)."""
    bk, bdt, info = dev.backend, b._dtype, _dtypes.iinfo_object(dt)
    data = b._data
    if bdt.kind == "f":
        data = (bk.ceil if arg == "min" else bk.floor)(data)
        lims = float(info.min), float(info.max)
    else:
        own = _dtypes.iinfo_object(bdt)
        lims = max(info.min, own.min), min(info.max, own.max)
    return bk.clip(data, *(v.scalar(dev, lim, bdt, "clip") for lim in lims))


# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("clip",))
