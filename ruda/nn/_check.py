"""Argument checks shared by ``ruda.nn``, and the one bridge to native arrays for kernels.

``native(x)`` / ``wrap(native, device)`` are the only places ``ruda.nn`` touches an array's
storage: a fused kernel of ``ruda.backends.NN_KERNELS`` takes and returns native arrays.
"""
import math
import numbers

import ruda as xp


def native(x):
    """The backend's own array behind ruda array ``x`` (no copy)."""
    return x.native


def wrap(data, device):
    """A ruda array on ``device`` around the backend array ``data`` (no copy)."""
    return xp.Array.from_native(data, device)


def err(cls, fn, arg, expected, got):
    return cls(f"ruda.nn.{fn}: {arg}: expected {expected}, got {got}")


def array(fn, arg, x):
    if not isinstance(x, xp.Array):
        raise err(TypeError, fn, arg, "a ruda array", type(x).__name__)
    return x


_KIND = {}        # (dtype, kind) -> xp.isdtype's answer: these checks run on every nn call


def _of_kind(fn, arg, x, kind, what):
    array(fn, arg, x)
    dt = x.dtype
    ok = _KIND.get((dt, kind))
    if ok is None:
        ok = _KIND[(dt, kind)] = xp.isdtype(dt, kind)
    if not ok:
        raise err(TypeError, fn, arg, what, dt)
    return x


def floating(fn, arg, x):
    """x must be a ruda array of a real floating dtype (no silent int -> float promotion)."""
    return _of_kind(fn, arg, x, "real floating", "a real floating dtype")


def real(fn, arg, x):
    """x must be a ruda array of a real numeric dtype (integer or floating, not bool)."""
    return _of_kind(fn, arg, x, ("integral", "real floating"), "a real numeric dtype")


def integral(fn, arg, x):
    return _of_kind(fn, arg, x, "integral", "an integer dtype")


def same(fn, arg, y, x, xarg="x", dtype=True):
    """y on x's device (and of x's dtype when ``dtype``)."""
    array(fn, arg, y)
    if y.device != x.device:
        raise err(ValueError, fn, arg, f"{xarg}'s device {x.device}", y.device)
    if dtype and y.dtype != x.dtype:
        raise err(TypeError, fn, arg, f"{xarg}'s dtype {x.dtype}", y.dtype)
    return y


def number(fn, arg, v, lo=None, hi=None, *, lo_open=False, hi_open=False):
    """A Python real number (not bool) within [lo, hi] (lo excluded when ``lo_open``, hi when
    ``hi_open``)."""
    if v.__class__ is not float and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
        raise err(TypeError, fn, arg, "a Python real number", type(v).__name__)
    v = float(v)
    if (lo is not None and (v < lo or lo_open and v == lo)) \
            or (hi is not None and (v > hi or hi_open and v == hi)) or math.isnan(v):
        rng = f"{'(' if lo_open else '['}{lo if lo is not None else '-inf'}, " \
              f"{hi if hi is not None else 'inf'}{')' if hi_open else ']'}"
        raise err(ValueError, fn, arg, f"a number in {rng}", v)
    return v


def count(fn, arg, v, what="a positive int"):
    """A positive Python or NumPy integer (not bool) as an int: a TypeError for another type, a
    ValueError below 1 (``what``: the expectation both state)."""
    if v.__class__ is int and v >= 1:
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise err(TypeError, fn, arg, what, repr(v))
    if v < 1:
        raise err(ValueError, fn, arg, what, int(v))
    return int(v)


def axis(fn, ax, ndim, arg="axis"):
    """A normalized (non-negative) axis of an array of ``ndim`` dimensions."""
    if isinstance(ax, bool) or not isinstance(ax, numbers.Integral):
        raise err(TypeError, fn, arg, "an int", type(ax).__name__)
    ax = int(ax)
    if not -ndim <= ax < max(ndim, 1):
        raise err(ValueError, fn, arg, f"an axis in [{-ndim}, {ndim})", ax)
    return ax % max(ndim, 1)


_LOW = frozenset(d for d in (getattr(xp, "bfloat16", None), getattr(xp, "float16", None))
                 if d is not None)


def compute_dtype(dt):
    """Statistics accumulate in float32 for bfloat16 (and float16) input, else in the input dtype."""
    return xp.float32 if dt in _LOW else dt


def norm_eps(fn, dt, eps):
    """A norm's ``eps`` as a float: None gives the machine epsilon of the compute dtype of
    ``dt`` (float32's for bfloat16), as torch; else a real number >= 0."""
    return float(xp.finfo(compute_dtype(dt)).eps) if eps is None else number(fn, "eps", eps, 0.0)


def up(x):
    """x in its compute dtype (a copy only for bfloat16/float16)."""
    cdt = compute_dtype(x.dtype)
    return x if cdt == x.dtype else xp.astype(x, cdt)


def down(y, dt):
    return y if y.dtype == dt else xp.astype(y, dt)


def fresh(y, x):
    """y, or a copy of it where it is x itself: results are new arrays, as torch's, so
    writing into one never changes the caller's input."""
    return xp.asarray(x, copy=True) if y is x else y


def kernel(x, name):
    """The fused kernel ``name`` of x's device, or None."""
    mod = getattr(x.device.backend, "nn", None)
    return None if mod is None else getattr(mod, name, None)


def call(x, name, *args):
    """Runs kernel ``name`` on native arguments (ruda arrays unwrapped, None and Python values
    as they are); the wrapped result, or None where there is no kernel or it declines."""
    k = kernel(x, name)
    if k is None:
        return None
    Array = xp.Array
    r = k(*[a.native if a.__class__ is Array else a for a in args])
    if r is NotImplemented:
        return None
    return wrap(r, x.device)


def normalized_shape(fn, x, shape):
    """``normalized_shape`` as a tuple matching x's trailing axes."""
    if shape.__class__ is tuple and shape and x.shape[-len(shape):] == shape \
            and all(s.__class__ is int for s in shape):
        return shape                                    # the common case, checked cheaply
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise err(TypeError, fn, "normalized_shape", "an int or a tuple of ints",
                  type(shape).__name__) from None
    if not shape or len(shape) > x.ndim or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise err(ValueError, fn, "normalized_shape", f"the trailing axes of x's shape {x.shape}",
                  shape)
    return shape


def param(fn, arg, w, x, shape):
    """An affine parameter (weight, bias): None, or shape ``shape`` on x's device, of x's dtype
    (float32 also allowed for bfloat16/float16 x: mixed precision)."""
    if w is None:
        return None
    array(fn, arg, w)
    if w.device != x.device:
        raise err(ValueError, fn, arg, f"x's device {x.device}", w.device)
    if w.dtype != x.dtype and w.dtype != compute_dtype(x.dtype):
        raise err(TypeError, fn, arg, f"x's dtype {x.dtype}", w.dtype)
    if tuple(w.shape) != tuple(shape):
        raise err(ValueError, fn, arg, f"shape {tuple(shape)}", f"shape {w.shape}")
    return w
