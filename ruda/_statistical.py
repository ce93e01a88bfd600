"""Statistical functions and the utility reductions all/any/diff."""
from __future__ import annotations

import builtins
import math

import numpy as np

from ruda import _dtypes
from ruda import _validation as v
from ruda._array import Array
from ruda._data_type import promote_all
from ruda._typing import Axis, DType


def reduction_axes(fn, x, axis):
    return v.axes(fn, axis, x.ndim)


def _nonempty(fn, x, ax):
    if builtins.any(x.shape[a] == 0 for a in ax):    # axis=() reduces nothing: an empty x is fine
        raise ValueError(f"ruda.{fn}: cannot reduce over a zero-size axis of shape {x.shape} "
                         f"(the reduction has no identity)")


_ACC = {}   # (device, dtype) -> accumulation dtype for dtype=None


def accumulation_dtype(fn, x, dtype):
    """The standard's result dtype of sum/prod/cumulative_*: integers widen to the default."""
    dev = x._device
    if dtype is not None:
        dt = v.dtype(fn, dtype, dev)
        if x._data.dtype.kind == "c" and dt.kind != "c":     # as astype: never drop imaginaries
            raise TypeError(f"ruda.{fn}: dtype={_dtypes.name(dt)} would drop the imaginary part "
                            f"of x's {_dtypes.name(x._data.dtype)} values; take ruda.real first")
        return dt
    key = (dev, x._data.dtype)
    acc = _ACC.get(key)
    if acc is None:
        acc = _ACC[key] = _default_accumulation(x)
    return acc


def _default_accumulation(x):
    dev, dt = x._device, x._data.dtype
    default_int = v.default_dtype(dev, "integral")
    if dt.kind == "b":
        return default_int
    if dt.kind == "i" and dt.itemsize < default_int.itemsize:
        return default_int
    if dt.kind == "u" and dt.itemsize < default_int.itemsize:
        return np.dtype(f"uint{default_int.itemsize * 8}")
    return dt


def _sum_like(fn, x, axis, dtype):
    """sum's and prod's checks: (native x, normalized axes, accumulation dtype)."""
    data = v.array(fn, "x", x)._data
    if data.dtype.kind != "b":
        v.category(fn, "x", data.dtype, "numeric")
    return data, reduction_axes(fn, x, axis), accumulation_dtype(fn, x, dtype)


def sum(x: Array, /, *, axis: Axis = None, dtype: DType | None = None,
        keepdims: bool = False) -> Array:
    data, ax, dt = _sum_like("sum", x, axis, dtype)
    dev = x._device
    return Array._new(dev.backend.sum(data, ax, dt, bool(keepdims)), dev)


def prod(x: Array, /, *, axis: Axis = None, dtype: DType | None = None,
         keepdims: bool = False) -> Array:
    data, ax, dt = _sum_like("prod", x, axis, dtype)
    dev = x._device
    return Array._new(dev.backend.prod(data, ax, dt, bool(keepdims)), dev)


def _extreme(fn, x, axis):
    """max's and min's checks: the normalized axes (none of them empty)."""
    v.array(fn, "x", x)
    v.category(fn, "x", x._dtype, "real numeric")
    ax = reduction_axes(fn, x, axis)
    _nonempty(fn, x, ax)
    return ax


def max(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    ax = _extreme("max", x, axis)
    return Array._new(x._device.backend.max(x._data, axis=ax, keepdims=bool(keepdims)), x._device)


def min(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    ax = _extreme("min", x, axis)
    return Array._new(x._device.backend.min(x._data, axis=ax, keepdims=bool(keepdims)), x._device)


def mean(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    v.array("mean", "x", x)
    v.category("mean", "x", x._dtype, "floating-point")
    ax = reduction_axes("mean", x, axis)
    return Array._new(x._device.backend.mean(x._data, axis=ax, keepdims=bool(keepdims)), x._device)


def _moment(fn, x, axis, correction):
    """std's and var's checks: (normalized axes, correction as a Python number)."""
    v.array(fn, "x", x)
    v.category(fn, "x", x._dtype, "real floating-point")
    correction = v.python_scalar(correction)
    if not v.is_scalar(correction) or isinstance(correction, complex | bool):
        raise TypeError(f"ruda.{fn}: correction must be a real number; got {correction!r}")
    return reduction_axes(fn, x, axis), correction


def _moment_result(x, ax, correction, out):
    """NaN where the correction leaves no degrees of freedom (the standard; NumPy gives inf)."""
    if math.prod(x.shape[a] for a in ax) - correction <= 0:
        out = x._device.backend.full(out.shape, math.nan, out.dtype)
    return Array._new(out, x._device)


def std(x: Array, /, *, axis: Axis = None, correction: int | float = 0.0,
        keepdims: bool = False) -> Array:
    ax, correction = _moment("std", x, axis, correction)
    out = x._device.backend.std(x._data, axis=ax, correction=correction, keepdims=bool(keepdims))
    return _moment_result(x, ax, correction, out)


def var(x: Array, /, *, axis: Axis = None, correction: int | float = 0.0,
        keepdims: bool = False) -> Array:
    ax, correction = _moment("var", x, axis, correction)
    out = x._device.backend.var(x._data, axis=ax, correction=correction, keepdims=bool(keepdims))
    return _moment_result(x, ax, correction, out)


def _cumulative(fn, x, axis, dtype):
    """cumulative_sum's and cumulative_prod's checks: (normalized axis, accumulation dtype)."""
    v.array(fn, "x", x)
    if x._dtype.kind != "b":
        v.category(fn, "x", x._dtype, "numeric")
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"ruda.{fn}: axis is required for a {x.ndim}-D array")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"ruda.{fn}: x must have at least one dimension")
    return v.axis(fn, axis, x.ndim), accumulation_dtype(fn, x, dtype)


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: DType | None = None,
                   include_initial: bool = False) -> Array:
    axis, dt = _cumulative("cumulative_sum", x, axis, dtype)
    return Array._new(x._device.backend.cumulative_sum(
        x._data, axis=axis, dtype=dt, include_initial=bool(include_initial)), x._device)


def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: DType | None = None,
                    include_initial: bool = False) -> Array:
    axis, dt = _cumulative("cumulative_prod", x, axis, dtype)
    return Array._new(x._device.backend.cumulative_prod(
        x._data, axis=axis, dtype=dt, include_initial=bool(include_initial)), x._device)


def all(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    ax = reduction_axes("all", v.array("all", "x", x), axis)
    return Array._new(x._device.backend.all(x._data, axis=ax, keepdims=bool(keepdims)), x._device)


def any(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    ax = reduction_axes("any", v.array("any", "x", x), axis)
    return Array._new(x._device.backend.any(x._data, axis=ax, keepdims=bool(keepdims)), x._device)


def diff(x: Array, /, n: int = 1, *, axis: int = -1, prepend: Array | None = None,
         append: Array | None = None) -> Array:
    """n-th forward difference along axis; n may also be given positionally, as NumPy users write it."""
    v.array("diff", "x", x)
    if x.ndim == 0:
        raise ValueError("ruda.diff: x must have at least one dimension")
    axis = v.axis("diff", axis, x.ndim)
    n = v.integer("diff", "n", n)
    if n < 0:
        raise ValueError(f"ruda.diff: n must be non-negative; got {n}")
    extra = {}
    for name, a in (("prepend", prepend), ("append", append)):
        if a is not None:
            v.array("diff", name, a)
            v.same_device("diff", x, a)
            if a.ndim != x.ndim or builtins.any(s != t for i, (s, t) in enumerate(zip(a.shape, x.shape)) if i != axis):
                raise ValueError(f"ruda.diff: {name} of shape {a.shape} does not match x of shape "
                                 f"{x.shape} outside axis {axis}")
            extra[name] = a._data
    if x._dtype.kind == "b" and n:
        raise TypeError("ruda.diff: x must have a numeric dtype for n > 0; got bool")
    dt = promote_all("diff", [x._dtype] + [e.dtype for e in extra.values()], x._device)
    cast = lambda a: a if a.dtype == dt else x._device.backend.astype(a, dt, False)  # noqa: E731
    extra = {k: cast(e) for k, e in extra.items()}
    return Array._new(x._device.backend.diff(cast(x._data), axis=axis, n=n, **extra), x._device)

# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("all", "any", "cumulative_prod", "cumulative_sum", "diff", "max",
                        "mean", "min", "prod", "std", "sum", "var"))
