"""Sorting functions: sort and argsort (stable by default)."""
from __future__ import annotations

from ruda import _validation as v
from ruda._array import Array


def _sort(fn, x, axis):
    """sort's and argsort's checks: the normalized axis."""
    v.array(fn, "x", x)
    v.category(fn, "x", x._dtype, "real numeric")
    if x.ndim == 0:
        raise ValueError(f"ruda.{fn}: x must have at least one dimension")
    return v.axis(fn, axis, x.ndim)


def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    axis = _sort("sort", x, axis)
    return Array._new(x._device.backend.sort(x._data, axis=axis, descending=bool(descending),
                                             stable=bool(stable)), x._device)


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False,
            stable: bool = True) -> Array:
    axis = _sort("argsort", x, axis)
    return Array._new(x._device.backend.argsort(x._data, axis=axis, descending=bool(descending),
                                                stable=bool(stable)), x._device)


# with the C accelerator, ruda/_accelerate.py lists the functions here it gives a host fast path
# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("argsort", "sort"))
