"""Sorting functions: sort and argsort (stable by default)."""
from ruda import _validation as v
from ruda._array import Array, _speedups


def _sort(fn, x, axis, descending, stable):
    v.array(fn, "x", x)
    v.category(fn, "x", x._dtype, "real numeric")
    if x.ndim == 0:
        raise ValueError(f"ruda.{fn}: x must have at least one dimension")
    axis = v.axis(fn, axis, x.ndim)
    return Array._new(getattr(x._device.backend, fn)(x._data, axis=axis, descending=bool(descending),
                                                     stable=bool(stable)), x._device)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    return _sort("sort", x, axis, descending, stable)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    return _sort("argsort", x, axis, descending, stable)


# C fast path for host arrays (ruda/_speedups.c); every other call runs the code above
if _speedups is not None:
    from ruda import _dtypes
    sort = _speedups.function("sort", sort, (
        tuple(d for d in _dtypes.all_dtypes if d in v._CATEGORY_SETS["real numeric"]),
        ("order",), ("axis", "kind"), "K", "stable"))

# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("argsort", "sort"))
