"""Host implementations of ops that array-api-compat does not provide as ruda needs them."""
import numpy as np


def getitem(x, key):
    return x[key]


def setitem(x, key, value):
    x[key] = value


def astype(x, dtype, copy=True):
    return x.astype(dtype, copy=copy)


def arange(start, stop, step, dtype):
    return np.arange(start, stop, step, dtype=dtype)


def empty(shape, dtype):
    return np.empty(shape, dtype=dtype)


def full(shape, fill_value, dtype):
    return np.full(shape, fill_value, dtype=dtype)


def eye(n_rows, n_cols, k, dtype):
    return np.eye(n_rows, n_cols, k=k, dtype=dtype)


def linspace(start, stop, num, dtype, endpoint):
    return np.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)


def tril(x, k):
    return np.tril(x, k)


def triu(x, k):
    return np.triu(x, k)


def isin(x1, x2, invert=False):
    return np.isin(x1, x2, invert=invert)


def reshape(x, shape, copy=None):
    if copy:
        return np.reshape(x, shape).copy()
    return np.reshape(x, shape, copy=copy)
