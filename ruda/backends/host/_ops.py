"""Host implementations of ops that array-api-compat does not provide as ruda needs them."""
import math

import numpy as np

from ruda import _dtypes
from ruda.backends._numpylike import ops_for

globals().update(ops_for(np))


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
