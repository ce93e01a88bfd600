"""Argument validation and the cross-rank agreement check.

Before each collective every rank contributes a small int64 record (which
collective, op, root, axis, dtype, device kind, shape) to one ``Allgather``;
every rank then compares all records, so a disagreement raises the same error
on every rank instead of hanging inside MPI or NCCL.  Disable with
``RUDA_DIST_CHECK=0`` (then mismatches hang until the watchdog aborts).
"""
import operator
import zlib

import numpy as np

import ruda
from ruda import _dtypes
from ruda.runtime import env

Array = ruda.Array

OPS = ("sum", "prod", "min", "max", "mean")
FUNCTIONS = ("all_reduce", "reduce", "broadcast", "all_gather", "gather", "scatter",
             "reduce_scatter", "all_to_all", "barrier", "send", "finalize")
DTYPES = _dtypes.all_dtypes + _dtypes.extension_dtypes
KINDS = ("cpu", "cuda", "wgpu")
_NDIMS = 64            # NumPy's and CuPy's most dimensions: a record holds every array's shape
F_FN, F_OP, F_ROOT, F_AXIS, F_DTYPE, F_KIND, F_HAS, F_NDIM, F_DIMS = range(9)
F_TAIL = F_DIMS + _NDIMS
WIDTH = F_TAIL + 1
ENABLED = env.flag("RUDA_DIST_CHECK", True, at_import=True)   # read at import: a wrong value warns


def _where(fn):
    return f"ruda.distributed.{fn}"


def array(fn, x, name="x"):
    if x.__class__ is not Array:
        raise TypeError(f"{_where(fn)}: {name} must be a ruda.Array; got {type(x).__name__}")
    return x


def op(fn, op, dtype):
    """Check that ``op`` is known and defined for ``dtype``."""
    if op not in OPS:
        raise ValueError(f"{_where(fn)}: op must be one of {', '.join(map(repr, OPS))}; got {op!r}")
    if op in ("sum", "prod"):
        cat = "numeric"
    elif op == "mean":
        cat = "floating-point"
    else:
        cat = "real numeric"
        if dtype == _dtypes.bool:
            return
    if not _dtypes.in_category(dtype, cat):
        extra = " (bool supports op='max' for 'or', op='min' for 'and')" if dtype == _dtypes.bool else ""
        raise TypeError(f"{_where(fn)}: op={op!r} needs a {cat} dtype; got "
                        f"{_dtypes.name(dtype)}{extra}")


def rank_arg(fn, name, value, size):
    try:
        r = operator.index(value)
    except TypeError:
        raise TypeError(f"{_where(fn)}: {name} must be an int rank; got {type(value).__name__}") from None
    if not 0 <= r < size:
        raise ValueError(f"{_where(fn)}: {name} must be a rank in [0, {size}); got {r}")
    return r


def axis(fn, value, ndim):
    """``value`` as a non-negative axis of an ``ndim``-D array: TypeError for a non-integer,
    IndexError out of range, worded as the namespace's functions word them."""
    try:
        a = operator.index(value)
    except TypeError:
        raise TypeError(f"{_where(fn)}: axis must be an integer; got {type(value).__name__}") from None
    if not -ndim <= a < ndim:
        raise IndexError(f"{_where(fn)}: axis={a} is out of bounds for an array of {ndim} dimensions")
    return a % ndim


def divisible(fn, shape, ax, size, what="x"):
    if shape[ax] % size:
        raise ValueError(f"{_where(fn)}: {what}.shape[{ax}] = {shape[ax]} must be divisible by "
                         f"the world size {size}")


_records = {}


def record(fn, op=None, root=-1, ax=-1, x=None, kind=None):
    """This rank's int64 agreement record (``kind``: device kind when x is None); cached."""
    key = (fn, op, root, ax, kind) if x is None else (fn, op, root, ax, kind, x.shape, x.dtype,
                                                        x.device.kind)
    r = _records.get(key)
    if r is None:
        if len(_records) > 4096:
            _records.clear()
        r = _records[key] = _record(fn, op, root, ax, x, kind)
    return r


def _record(fn, op, root, ax, x, kind):
    r = np.full(WIDTH, -1, np.int64)
    r[F_FN] = FUNCTIONS.index(fn)
    r[F_OP] = -1 if op is None else OPS.index(op)
    r[F_ROOT], r[F_AXIS], r[F_HAS] = root, ax, x is not None
    if kind is not None:
        r[F_KIND] = KINDS.index(kind)
    if x is not None:
        shape = x.shape
        r[F_DTYPE] = DTYPES.index(x.dtype)
        r[F_KIND] = KINDS.index(x.device.kind)
        r[F_NDIM] = len(shape)
        r[F_DIMS:F_DIMS + min(len(shape), _NDIMS)] = shape[:_NDIMS]
        r[F_TAIL] = zlib.crc32(repr(shape[_NDIMS:]).encode())
    r.flags.writeable = False
    return r


def shape_of(rec):
    nd = int(rec[F_NDIM])
    if nd > _NDIMS:      # (read on every rank from the one record, so all raise alike)
        raise ValueError(f"ruda.distributed: arrays of at most {_NDIMS} dimensions; got {nd}")
    return tuple(int(d) for d in rec[F_DIMS:F_DIMS + nd])


def dtype_of(rec):
    return DTYPES[int(rec[F_DTYPE])]


def kind_of(rec):
    return KINDS[int(rec[F_KIND])]


def agree(fn, table, root=None):
    """Raise the same error on every rank when the records in ``table`` disagree.

    Ranks without an array (``F_HAS`` = 0, allowed only off the root of
    broadcast and scatter) are left out of the array comparisons.
    """
    raw = table.tobytes()
    row = len(raw) // len(table)
    if table[0, F_HAS] == 1 and raw == raw[:row] * len(table):
        return
    _same(fn, table, F_FN, "which collective they call",
          lambda r: _where(FUNCTIONS[int(r[F_FN])]), RuntimeError)
    _same(fn, table, F_OP, "op", lambda r: repr(OPS[int(r[F_OP])]) if r[F_OP] >= 0 else "None")
    _same(fn, table, F_ROOT, "root", lambda r: int(r[F_ROOT]))
    has = table[:, F_HAS] == 1
    if root is not None and not has[root]:
        raise ValueError(f"{_where(fn)}: the root rank {root} passed no array")
    known = table[:, F_KIND] >= 0
    _same(fn, table[known], F_KIND, "device kind", lambda r: repr(kind_of(r)),
          ranks=np.flatnonzero(known), key=lambda r: "host" if kind_of(r) != "cuda" else "cuda")
    sub = table[has]
    ranks = np.flatnonzero(has)
    _same(fn, sub, F_AXIS, "axis", lambda r: int(r[F_AXIS]), ranks=ranks)
    _same(fn, sub, F_DTYPE, "dtype", lambda r: _dtypes.name(dtype_of(r)), TypeError, ranks)
    _same(fn, sub, slice(F_NDIM, WIDTH), "shape", lambda r: shape_of(r), ranks=ranks)


def _same(fn, table, field, what, show, exc=ValueError, ranks=None, key=None):
    if len(table) == 0:
        return
    ranks = range(len(table)) if ranks is None else ranks
    keyf = key or (lambda r: r[field].tobytes() if isinstance(field, slice) else int(r[field]))
    first = keyf(table[0])
    if all(keyf(r) == first for r in table[1:]):
        return
    seen = ", ".join(f"rank {k} has {show(r)}" for k, r in zip(ranks, table))
    raise exc(f"{_where(fn)}: the ranks disagree on {what}: {seen}; every rank must "
              f"make the same call with arrays of one shape, dtype and device kind")
