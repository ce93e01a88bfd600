"""CuPy implementations of ops that array-api-compat's CuPy namespace does not provide as ruda needs them.

Imported only once CuPy imports.  Every function receives validated native
(``cupy.ndarray``) arrays and plain Python parameters (see ruda/backends/__init__.py).
"""
import cupy as cp
import numpy as np


def getitem(x, key):
    return x[key]


def setitem(x, key, value):
    x[key] = value


def astype(x, dtype, copy=True):
    return x.astype(dtype, copy=copy)


def arange(start, stop, step, dtype):
    return cp.arange(start, stop, step, dtype=dtype)


def empty(shape, dtype):
    return cp.empty(shape, dtype=dtype)


def full(shape, fill_value, dtype):
    if dtype.kind in "iu" and not isinstance(fill_value, bool) and not -2**63 <= fill_value < 2**63:
        # CuPy passes Python ints to its fill kernel as int64: go through a typed NumPy scalar
        out = cp.empty(shape, dtype=dtype)
        out.fill(np.asarray(fill_value, dtype=dtype)[()])
        return out
    return cp.full(shape, fill_value, dtype=dtype)


def eye(n_rows, n_cols, k, dtype):
    return cp.eye(n_rows, n_cols, k=k, dtype=dtype)


def linspace(start, stop, num, dtype, endpoint):
    return cp.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)


def tril(x, k):
    return cp.tril(x, k)


def triu(x, k):
    return cp.triu(x, k)


def isin(x1, x2, invert=False):
    return cp.isin(x1, x2, invert=invert)


def reshape(x, shape, copy=None):
    if copy:
        return cp.reshape(x, shape).copy()
    if copy is False:
        y = x.view()
        try:
            y.shape = shape
        except AttributeError as e:
            raise ValueError(f"cannot reshape without a copy (copy=False): {e}") from None
        return y
    return cp.reshape(x, shape)


def repeat(x, repeats, axis=None):
    """numpy.repeat, also for repeats given as a device array (CuPy accepts only ints and lists)."""
    if not isinstance(repeats, cp.ndarray):
        return cp.repeat(x, repeats, axis=axis)
    if axis is None:
        x = x.ravel()
        axis = 0
    n = x.shape[axis]
    reps = repeats.astype(cp.int64, copy=False)
    if reps.ndim == 0:
        reps = cp.broadcast_to(reps, (n,))
    if reps.shape[0] != n:
        raise ValueError(f"repeats has {reps.shape[0]} entries for an axis of length {n}")
    if bool((reps < 0).any()):
        raise ValueError("repeats must be non-negative")
    ends = cp.cumsum(reps)
    total = int(ends[-1]) if n else 0        # the output size: one scalar read back, as for nonzero
    idx = cp.searchsorted(ends, cp.arange(total, dtype=cp.int64), side="right")
    return cp.take(x, idx, axis=axis)


def unstack(x, axis=0):
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(x.shape[axis]))
