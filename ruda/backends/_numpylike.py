"""Ops written once for array modules with NumPy's API: NumPy (host) and CuPy (cuda).

``ops_for(mod)`` returns them bound to ``mod``; a backend's ``_ops`` module takes them with
``globals().update(ops_for(mod))`` and defines only what differs on its device.
"""


def ops_for(mod):
    def getitem(x, key):
        return x[key]

    def setitem(x, key, value):
        x[key] = value

    def astype(x, dtype, copy=True):
        return x.astype(dtype, copy=copy)

    def arange(start, stop, step, dtype):
        return mod.arange(start, stop, step, dtype=dtype)

    def empty(shape, dtype):
        return mod.empty(shape, dtype=dtype)

    def eye(n_rows, n_cols, k, dtype):
        return mod.eye(n_rows, n_cols, k=k, dtype=dtype)

    def linspace(start, stop, num, dtype, endpoint):
        return mod.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)

    def tril(x, k):
        return mod.tril(x, k)

    def triu(x, k):
        return mod.triu(x, k)

    def isin(x1, x2, invert=False):
        return mod.isin(x1, x2, invert=invert)

    # reductions and views straight to the module: the frontend passes normalized axes and
    # concrete dtypes, so array-api-compat's argument handling is not needed on these hot paths
    def sum(x, axis, dtype, keepdims=False):
        return mod.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(x, axis, dtype, keepdims=False):
        return mod.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(x, axis, keepdims=False):
        return mod.max(x, axis=axis, keepdims=keepdims)

    def min(x, axis, keepdims=False):
        return mod.min(x, axis=axis, keepdims=keepdims)

    def permute_dims(x, axes):
        return x.transpose(axes)

    def matmul(x1, x2):
        return mod.matmul(x1, x2)

    return {f.__name__: f for f in (getitem, setitem, astype, arange, empty, eye, linspace, tril,
                                     triu, isin, sum, prod, max, min, permute_dims, matmul)}
