"""Elementwise functions, generated from a table of name -> dtype category."""
import math

import numpy as np

from ruda import _dtypes
from ruda import _validation as v
from ruda._array import Array, _speedups, new as _new
from ruda.backends import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY

UNARY = {
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
BINARY = {
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
assert set(UNARY) == set(ELEMENTWISE_UNARY) and set(BINARY) == set(ELEMENTWISE_BINARY)

_CATS = v._CATEGORY_SETS
# Ops that give a floating result for integer inputs (NumPy 2: the default float).
_FLOAT_RESULT = frozenset({"divide"})


def _cast(dev, a, dt):
    return a if a.dtype == dt else dev.backend.astype(a, dt, False)


def operands(fn, x1, x2, cat, broadcast=True):
    """Validate two operands (arrays, or one Python or NumPy scalar) of an elementwise op.

    Returns the common device and the two native arrays, cast to the promoted dtype.
    """
    c1 = x1.__class__ is Array
    if c1 and x2.__class__ is Array:
        dev = x1._device
        if x2._device is not dev:
            v.same_device(fn, x1, x2)
        a, b = x1._data, x2._data
        da, db = a.dtype, b.dtype
        if da != db:
            dt = _dtypes.promote(da, db)
            if dt not in _CATS[cat]:  # mixed inputs are judged by their promoted dtype (NumPy 2 rules)
                v.category(fn, "x1", da, cat)
                v.category(fn, "x2", db, cat)
                v.category(fn, "x1 and x2 promoted", dt, cat)
            a, b = _cast(dev, a, dt), _cast(dev, b, dt)
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
    a = _cast(dev, a, dt)
    s = v.scalar(dev, val, dt, fn)
    return (dev, a, s) if c1 else (dev, s, a)


def _make_unary(name, cat):
    allowed = _CATS[cat]

    def fn(x, /):
        if x.__class__ is not Array:
            v.array(name, "x", x)
        if x._data.dtype not in allowed:
            v.category(name, "x", x._data.dtype, cat)
        dev = x._device
        return _new(getattr(dev._backend, name)(x._data), dev)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}; x must have a {cat} dtype."
    return fn


def _make_binary(name, cat):
    float_result = name in _FLOAT_RESULT
    # dtypes that take the fast path: same dtype and shape, no cast needed
    fast = frozenset(d for d in _CATS[cat] if not (float_result and d.kind in "biu"))
    # array dtypes that take a Python int / float operand as their own dtype
    fast_scalar = {int: fast - {_dtypes.bool}, float: frozenset(d for d in fast if d.kind in "fcV")}

    def fn(x1, x2, /):
        if x1.__class__ is Array:
            dev, a = x1._device, x1._data
            if x2.__class__ is Array:
                b = x2._data
                if x2._device is dev and a.dtype is b.dtype and a.dtype in fast and a.shape == b.shape:
                    return _new(getattr(dev._backend, name)(a, b), dev)
            elif a.dtype in fast_scalar.get(x2.__class__, ()):
                backend = dev._backend
                try:
                    return _new(getattr(backend, name)(a, backend.scalar(x2, a.dtype)), dev)
                except OverflowError:
                    pass   # the general path below says which function and value
        elif x2.__class__ is Array and x2._data.dtype in fast_scalar.get(x1.__class__, ()):
            dev, b = x2._device, x2._data     # a Python scalar first (reflected operators)
            backend = dev._backend
            try:
                return _new(getattr(backend, name)(backend.scalar(x1, b.dtype), b), dev)
            except OverflowError:
                pass
        dev, a, b = operands(name, x1, x2, cat)
        if float_result and a.dtype.kind in "biu":
            dt = v.default_dtype(dev, "real floating")
            a, b = _cast(dev, a, dt), _cast(dev, b, dt)
        return _new(getattr(dev._backend, name)(a, b), dev)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}; x1 and x2 must have {cat} dtypes (Python scalars allowed)."
    if _speedups is not None:   # the same fast path in C (host arrays), else this function
        return _speedups.binary(name, fn, tuple(fast), tuple(fast_scalar[int]),
                                tuple(fast_scalar[float]))
    return fn


for _name, _cat in UNARY.items():
    globals()[_name] = _make_unary(_name, _cat)
for _name, _cat in BINARY.items():
    globals()[_name] = _make_binary(_name, _cat)
del _name, _cat


def clip(x, /, min=None, max=None):
    """Clamp x to [min, max]; bounds may be arrays or real Python scalars.  The result keeps x's dtype."""
    v.array("clip", "x", x)
    v.category("clip", "x", x._dtype, "real numeric")
    dev, dt = x._device, x._dtype
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
        return _cast(dev, b._data, dt)
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


# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py); the unary
# functions take no keywords
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("clip", *BINARY))
