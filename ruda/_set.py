"""Set functions: unique_all, unique_counts, unique_inverse, unique_values, isin."""
from __future__ import annotations

from collections import namedtuple

from ruda import _dtypes
from ruda import _elementwise as ew
from ruda import _validation as v
from ruda._array import Array
from ruda._operands import _MIXED_SIGN
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
    if isinstance(x1, Array) and isinstance(x2, Array) and x1._device is x2._device and \
            {x1.dtype, x2.dtype} == _MIXED_SIGN:
        return _isin_mixed_sign(x1, x2, bool(invert))
    dev, a, b = ew.operands("isin", x1, x2, "all", broadcast=False)
    return Array._new(dev.backend.isin(a, b, invert=bool(invert)), dev)


def _isin_mixed_sign(x1, x2, invert):
    """isin of uint64 with int64, exact as ``equal`` is (float64 would round past 2**53): both
    as uint64 (the int64 side wraps), and x1's values outside the other dtype's range (uint64
    past 2**63 - 1, negative int64) match nothing, which also discards wrapped matches."""
    dev = x1._device
    bk = dev.backend
    a, b = x1._data, x2._data
    if a.dtype == _dtypes.uint64:
        fits = bk.less(a, bk.scalar(2**63, _dtypes.uint64))
    else:
        fits = bk.greater_equal(a, bk.scalar(0, _dtypes.int64))
    u64 = lambda z: ew.cast(dev, z, _dtypes.uint64)  # noqa: E731
    hit = bk.logical_and(bk.isin(u64(a), u64(b), invert=False), fits)
    return Array._new(bk.logical_not(hit) if invert else hit, dev)

# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("isin", "unique_all", "unique_counts", "unique_inverse",
                        "unique_values"))
