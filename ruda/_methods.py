"""Array methods beyond the standard, as NumPy, CuPy and PyTorch users type them.

Each delegates to the namespace function of the same name (same keywords, same checks and
errors), with the axis also taken positionally (``x.sum(0)``) and ``reshape`` also taking sizes
as separate arguments (``x.reshape(2, 3)``).  ``item``, ``tolist`` and ``__format__`` live on
the Array itself (ruda/_array.py).
"""
import inspect

from ruda import _data_type, _hints, _manipulation, _searching, _statistical
from ruda._array import Array


def astype(self, *args, **kwargs):
    """``ruda.astype(x, dtype, copy=True, device=None)``; NumPy's ``x.astype(dtype=...)`` too."""
    if not args and "dtype" in kwargs:
        args = (kwargs.pop("dtype"),)
    if not args:
        raise TypeError("ruda.astype: missing dtype; it takes x.astype(dtype, copy=True, device=None)")
    return _data_type.astype(self, *args, **kwargs)


def reshape(self, *shape, **kwargs):
    """``ruda.reshape(x, shape, copy=None)``; ``x.reshape(2, 3)``, ``x.reshape((2, 3))`` and
    NumPy's ``x.reshape(shape=(2, 3))``."""
    if not shape and "shape" in kwargs:
        shape = (kwargs.pop("shape"),)
    order = kwargs.pop("order", "C")       # np.reshape(x, s) passes NumPy's default order="C"
    if order != "C":
        raise ValueError(f"ruda.reshape: only order='C' (row-major) is supported; got order={order!r}")
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = shape[0]
    return _manipulation.reshape(self, tuple(shape), **kwargs)


def _reduction(name, fn):
    # NumPy's np.sum(x), np.mean(x), np.var(x) ... call these methods with NumPy's defaults
    # (out=None, dtype=None, ddof=0): they change nothing, so they are dropped where the
    # function lacks them; any other value reaches the function, whose error names the array
    # API's spelling
    params = inspect.signature(fn).parameters
    unset = {k: d for k, d in (("out", None), ("dtype", None), ("ddof", 0)) if k not in params
             and (k != "ddof" or "correction" in params)}

    def method(self, axis=None, **kwargs):
        for k, d in unset.items():
            if k in kwargs and (kwargs[k] is None if d is None else
                                type(kwargs[k]) is int and kwargs[k] == d):
                del kwargs[k]
        return fn(self, axis=axis, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``ruda.{name}(x, axis=axis, ...)``: the same keywords."
    return method


# explicit names, so that grep finds where each method comes from
sum = _reduction("sum", _statistical.sum)
prod = _reduction("prod", _statistical.prod)
mean = _reduction("mean", _statistical.mean)
std = _reduction("std", _statistical.std)
var = _reduction("var", _statistical.var)
min = _reduction("min", _statistical.min)
max = _reduction("max", _statistical.max)
all = _reduction("all", _statistical.all)
any = _reduction("any", _statistical.any)
argmax = _reduction("argmax", _searching.argmax)
argmin = _reduction("argmin", _searching.argmin)

# Array's methods (declared for type checkers in ruda/_array.py)
Array.astype = astype
Array.reshape = reshape
Array.sum = sum
Array.prod = prod
Array.mean = mean
Array.std = std
Array.var = var
Array.min = min
Array.max = max
Array.all = all
Array.any = any
Array.argmax = argmax
Array.argmin = argmin

# NumPy's and PyTorch's other array attributes: an AttributeError that says what to write
_hints.install_missing(Array, {
    "numpy": "np.asarray(x) for a host array; np.asarray(x.to_device('cpu')) for any",
    "cpu": "x.to_device('cpu')",
    "cuda": "x.to_device('cuda')",
    "copy": "ruda.asarray(x, copy=True) (or copy.copy(x))",
    "clone": "ruda.asarray(x, copy=True) (or copy.copy(x))",
    "detach": "ruda arrays carry no gradient: use x",
    "flatten": "x.reshape(-1)",
    "ravel": "x.reshape(-1)",
    "view": "x.reshape(...) for a shape",
    "transpose": "ruda.permute_dims(x, axes); x.T reverses a 2-D array and x.mT swaps the last "
                 "two axes",
    "permute": "ruda.permute_dims(x, axes)",
    "squeeze": "ruda.squeeze(x, axis=...)",
    "unsqueeze": "ruda.expand_dims(x, axis=...)",
    "dot": "x @ y (ruda.matmul) or ruda.vecdot(x, y)",
    "cumsum": "ruda.cumulative_sum(x, axis=...)",
    "sort": "ruda.sort(x, axis=...) (a sorted copy)",
    "argsort": "ruda.argsort(x, axis=...)",
    "clip": "ruda.clip(x, min, max)",
    "round": "ruda.round(x)",
    "nonzero": "ruda.nonzero(x)",
    "fill": "x[...] = value",
    "nbytes": "x.size * x.dtype.itemsize",
    "itemsize": "x.dtype.itemsize",
    "numel": "x.size",
    "dim": "x.ndim",
})
