"""Searching functions: argmax, argmin, count_nonzero, nonzero, searchsorted, where."""
from __future__ import annotations

import numpy as np

from ruda import _dtypes
from ruda import _elementwise as ew
from ruda import _validation as v
from ruda._array import Array
from ruda._creation import asarray
from ruda._typing import Axis, Scalar
from ruda._statistical import reduction_axes


def _arg(fn, x, axis):
    """argmax's and argmin's checks: the normalized axis (or None), along a non-empty extent."""
    v.array(fn, "x", x)
    v.category(fn, "x", x._dtype, "real numeric")
    if axis is None:
        if x.size == 0:
            raise ValueError(f"ruda.{fn}: x is empty (shape {x.shape})")
    else:
        axis = v.axis(fn, axis, x.ndim)
        if x.shape[axis] == 0:
            raise ValueError(f"ruda.{fn}: axis {axis} of shape {x.shape} is empty")
    return axis


def argmax(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    axis = _arg("argmax", x, axis)
    return Array._new(x._device.backend.argmax(x._data, axis=axis, keepdims=bool(keepdims)),
                      x._device)


def argmin(x: Array, /, *, axis: int | None = None, keepdims: bool = False) -> Array:
    axis = _arg("argmin", x, axis)
    return Array._new(x._device.backend.argmin(x._data, axis=axis, keepdims=bool(keepdims)),
                      x._device)


def count_nonzero(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    v.array("count_nonzero", "x", x)
    ax = reduction_axes("count_nonzero", x, axis)
    return Array._new(x._device.backend.count_nonzero(x._data, axis=ax, keepdims=bool(keepdims)),
                      x._device)


def nonzero(x: Array, /) -> tuple[Array, ...]:
    v.array("nonzero", "x", x)
    if x.ndim == 0:
        raise ValueError("ruda.nonzero: x must have at least one dimension (got a 0-d array)")
    return tuple(Array._new(o, x._device) for o in x._device.backend.nonzero(x._data))


def searchsorted(x1: Array, x2: Array | Scalar, /, *, side: str = "left",
                 sorter: Array | None = None) -> Array:
    v.array("searchsorted", "x1", x1)
    if side not in ("left", "right"):
        raise ValueError(f"ruda.searchsorted: side must be 'left' or 'right'; got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"ruda.searchsorted: x1 must be 1-D; got shape {x1.shape}")
    dev, a, b = ew.operands("searchsorted", x1, x2, "real numeric", broadcast=False)
    s = None
    if sorter is not None:
        v.array("searchsorted", "sorter", sorter)
        v.same_device("searchsorted", x1, sorter)
        v.category("searchsorted", "sorter", sorter._dtype, "integer")
        if sorter.shape != x1.shape:
            raise ValueError(f"ruda.searchsorted: sorter shape {sorter.shape} differs from x1 shape {x1.shape}")
        s = sorter._data
    try:
        return Array._new(dev.backend.searchsorted(a, b, side=side, sorter=s), dev)
    except ValueError as e:     # cpu: a sorter index out of range (a GPU reads 0 there)
        raise ValueError(f"ruda.searchsorted: {e}") from None


def where(condition: Array, x1: Array | Scalar, x2: Array | Scalar, /) -> Array:
    v.array("where", "condition", condition)
    if condition._dtype != _dtypes.bool:
        raise TypeError(f"ruda.where: condition must have a bool dtype; got {_dtypes.name(condition._dtype)}")
    if x1.__class__ is not Array and x2.__class__ is not Array:
        x1, x2 = _one_as_array(condition._device, x1, x2)
    dev, a, b = ew.operands("where", x1, x2, "all")
    if condition._device is not dev:
        v.same_device("where", condition, x1 if x1.__class__ is Array else x2)
    if not condition._data.shape == a.shape == b.shape:
        v.broadcast_shapes("where", condition.shape, a.shape, b.shape)
    return Array._new(dev.backend.where(condition._data, a, b), dev)


def _one_as_array(dev, x1, x2):
    """where(c, 1.0, 0.0), as NumPy and PyTorch take it (the standard needs an array among x1,
    x2): a NumPy scalar, else the Python scalar of the wider kind, becomes a 0-d array on c's
    device (as asarray makes it: its own dtype, or the device's default of its kind), which the
    other then joins."""
    both = [x1, x2]
    numpy = [i for i, s in enumerate(both) if isinstance(s, np.generic)]
    python = [i for i, s in enumerate(both) if type(s) in v._SCALAR_RANK]
    if not numpy and not python:
        raise TypeError(f"ruda.where: x1 and x2 must be ruda arrays or scalars; got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    i = numpy[0] if numpy else max(python, key=lambda i: v._SCALAR_RANK[type(both[i])])
    both[i] = asarray(both[i], device=dev)
    return both


# with the C accelerator, ruda/_accelerate.py lists the functions here it gives a host fast path
# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("argmax", "argmin", "count_nonzero", "nonzero", "searchsorted",
                        "where"))
