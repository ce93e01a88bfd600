"""Set functions: unique_all, unique_counts, unique_inverse, unique_values, isin."""
from __future__ import annotations

from collections import namedtuple

from ruda import _elementwise as ew
from ruda import _validation as v
from ruda._array import Array
from ruda._typing import Scalar

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_all(x: Array, /) -> UniqueAllResult:
    dev = v.array("unique_all", "x", x)._device
    return UniqueAllResult(*[Array._new(o, dev) for o in dev.backend.unique_all(x._data)])


def unique_counts(x: Array, /) -> UniqueCountsResult:
    dev = v.array("unique_counts", "x", x)._device
    return UniqueCountsResult(*[Array._new(o, dev) for o in dev.backend.unique_counts(x._data)])


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    dev = v.array("unique_inverse", "x", x)._device
    return UniqueInverseResult(*[Array._new(o, dev) for o in dev.backend.unique_inverse(x._data)])


def unique_values(x: Array, /) -> Array:
    dev = v.array("unique_values", "x", x)._device
    return Array._new(dev.backend.unique_values(x._data), dev)


def isin(x1: Array | Scalar, x2: Array | Scalar, /, *, invert: bool = False) -> Array:
    dev, a, b = ew.operands("isin", x1, x2, "all", broadcast=False)
    return Array._new(dev.backend.isin(a, b, invert=bool(invert)), dev)

# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("isin", "unique_all", "unique_counts", "unique_inverse",
                        "unique_values"))
