"""Host implementations of ops that array-api-compat does not provide as ruda needs them."""
import math

import numpy as np
import array_api_compat.numpy as _cnp

from ruda import _dtypes
from ruda.backends._numpylike import half_by_f32, ops_for

globals().update(ops_for(np))


def getitem(x, key):
    """``x[key]``; where NumPy gives a scalar (integers alone) a 0-d view of ``x`` instead, as
    the C accelerator's fast path does (``x[0]`` of a host array shares its memory)."""
    r = x[key]
    if r.__class__ is np.ndarray:
        return r
    return x[(key if key.__class__ is tuple else (key,)) + (Ellipsis,)]


def full(shape, fill_value, dtype):
    if _positive_zero(fill_value):
        return np.zeros(shape, dtype=dtype)   # calloc'd: lazily zeroed pages
    return np.full(shape, fill_value, dtype=dtype)


def _positive_zero(v):
    parts = (v.real, v.imag) if isinstance(v, complex) else (v,)
    return all(p == 0 and math.copysign(1.0, p) > 0 for p in parts)


def reshape(x, shape, copy=None):
    if copy:
        return np.reshape(x, shape).copy()
    return np.reshape(x, shape, copy=copy)


_REAL_FLOATS = _dtypes.CATEGORIES["real floating-point"]


def floor_divide(x1, x2):
    """NumPy's floor_divide, with the standard's results where an operand is infinite."""
    with np.errstate(all="ignore"):
        out = np.floor_divide(x1, x2)
        if x1.dtype in _REAL_FLOATS:       # bfloat16 too (its NumPy kind is "V")
            inf1, inf2 = np.isinf(x1), np.isinf(x2)
            if inf1.any() or inf2.any():
                fix = (inf1 & np.isfinite(x2)) | (np.isfinite(x1) & inf2)
                out = np.where(fix, np.divide(x1, x2), out)
    return out


def pow(x1, x2):
    """NumPy's power; a scalar exponent 0.5, which NumPy computes as sqrt, keeps the standard's
    special cases ((-0) ** 0.5 is +0, (-inf) ** 0.5 is +inf, not -0 and NaN)."""
    if np.ndim(x2) == 0 and x2 == 0.5 and np.result_type(x1, x2).kind == "f":
        with np.errstate(invalid="ignore"):        # sqrt(-inf): replaced below
            r = np.power(x1, x2)
        return np.where(np.isneginf(x1), r.dtype.type(np.inf), r) + r.dtype.type(0)  # -0 -> +0
    try:
        return np.power(x1, x2)
    except ValueError as e:     # integers to negative integer powers
        raise ValueError(f"ruda.pow: {e}") from None


def vecdot(x1, x2, axis=-1):
    """np.vecdot is a ufunc: spelled out here so the ufunc fast path keeps the axis keyword."""
    return np.vecdot(x1, x2, axis=axis)


# Reductions through the ufuncs' C-level reduce (np.sum & co. add a Python wrapper per call);
# the frontend has already normalized the axes and made the result dtype concrete.
def sum(x, axis, dtype, keepdims=False):
    return np.add.reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


def prod(x, axis, dtype, keepdims=False):
    return np.multiply.reduce(x, axis=axis, dtype=dtype, keepdims=keepdims)


def max(x, axis, keepdims=False):
    return np.maximum.reduce(x, axis=axis, keepdims=keepdims)


def min(x, axis, keepdims=False):
    return np.minimum.reduce(x, axis=axis, keepdims=keepdims)


# bfloat16 orders through NumPy's generic compare-based sorts, which some NumPy/ml_dtypes builds
# get wrong around NaN (NumPy 2.3.5 left [-0, nan, -inf, ...] unsorted); bfloat16 -> float32 is
# exact, so the ordering ops work on float32 copies.
_BF16 = _dtypes.bfloat16


def _as_f32(a):
    return a.astype(np.float32) if a.__class__ is np.ndarray and a.dtype == _BF16 else a


def _bf16_by_f32(fn, restore=None):
    """``fn`` on float32 copies of bfloat16 operands; ``restore`` turns its result's values back."""
    if _BF16 is None:
        return fn

    def op(x, *args, **kwargs):
        if x.dtype != _BF16:
            return fn(x, *args, **kwargs)
        r = fn(x.astype(np.float32), *map(_as_f32, args), **kwargs)
        return r if restore is None else restore(r)
    op.__name__ = fn.__name__
    return op


def _values_back(r):
    return r.astype(_BF16) if r.__class__ is np.ndarray else r._replace(values=r.values.astype(_BF16))


sort = _bf16_by_f32(sort, _values_back)  # noqa: F821 - from ops_for
argsort = _bf16_by_f32(_cnp.argsort)
searchsorted = _bf16_by_f32(_cnp.searchsorted)
unique_values, unique_counts, unique_inverse, unique_all = (
    _bf16_by_f32(getattr(_cnp, n), _values_back)
    for n in ("unique_values", "unique_counts", "unique_inverse", "unique_all"))


# float16 and bfloat16 compute in float32 and round once (_numpylike.half_by_f32): NumPy rounds
# float16 axis sums and moments every step and returns float32 for bfloat16 matmul, LAPACK takes
# no half dtype, and NumPy's clip refuses bfloat16.
globals().update(half_by_f32(np, _dtypes.extension_dtypes, globals(), _cnp))
