"""Set functions: unique_all, unique_counts, unique_inverse, unique_values, isin."""
from collections import namedtuple

from ruda import _elementwise as ew
from ruda import _validation as v
from ruda._array import Array

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(fn, x, result):
    v.array(fn, "x", x)
    out = getattr(x._device.backend, fn)(x._data)
    if result is None:
        return Array._new(out, x._device)
    return result(*[Array._new(o, x._device) for o in out])


def unique_all(x, /):
    return _unique("unique_all", x, UniqueAllResult)


def unique_counts(x, /):
    return _unique("unique_counts", x, UniqueCountsResult)


def unique_inverse(x, /):
    return _unique("unique_inverse", x, UniqueInverseResult)


def unique_values(x, /):
    return _unique("unique_values", x, None)


def isin(x1, x2, /, *, invert=False):
    dev, a, b = ew.operands("isin", x1, x2, "all", broadcast=False)
    return Array._new(dev.backend.isin(a, b, invert=bool(invert)), dev)

# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("isin", "unique_all", "unique_counts", "unique_inverse",
                        "unique_values"))
