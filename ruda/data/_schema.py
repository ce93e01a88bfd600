"""Schemas: named fields of (dtype, shape), and validation of what is written.

A shape may hold ``None`` for a variable dimension.  Values are stored as raw
little-endian bytes of the field's dtype, so the schema is all a reader needs.
"""
import json

import numpy as np

import ruda as xp

_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128", "float16", "bfloat16")
DTYPES = {n: getattr(xp, n) for n in _NAMES if getattr(xp, n, None) is not None}
_BY_DTYPE = {dt: n for n, dt in DTYPES.items()}
# Python data (lists, scalars: no dtype of its own) may fill a field of these dtype kinds:
# those NumPy's same_kind casting allows (bool into any, int into int, float or complex, float
# into float or complex), never one that drops a fraction or an imaginary part; ints fill
# signed or unsigned fields alike, if they fit.  Arrays must have the field's dtype.
_PY_KINDS = {"b": "biufVc", "i": "iufVc", "u": "iufVc", "f": "fVc", "c": "c"}


class DatasetError(ValueError):
    """A file that is not a ruda dataset, or is corrupted, truncated or locked."""


class Field:
    __slots__ = ("name", "dtype", "shape", "fixed", "item_bytes", "storage")

    def __init__(self, name, dtype, shape):
        dtype = np.dtype(dtype)        # the NumPy dtype of a ruda dtype object
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.fixed = None not in shape
        self.item_bytes = int(np.prod([d for d in shape if d is not None], dtype=np.int64)) * \
            dtype.itemsize if self.fixed else None
        self.storage = dtype.newbyteorder("<") if dtype.byteorder not in "|<" else dtype

    @property
    def type_name(self):
        return _BY_DTYPE[self.dtype]

    def describe(self):
        dims = ", ".join("None" if d is None else str(d) for d in self.shape)
        return f"{self.type_name}[{dims}]"


def _dtype(fn, name, dt):
    if isinstance(dt, str) and dt in DTYPES:
        return DTYPES[dt]
    if isinstance(dt, np.dtype) and dt.byteorder == ">":     # a big-endian .npy file's >f4
        dt = dt.newbyteorder("=")                           # is float32 (stored little-endian)
    try:
        if dt in _BY_DTYPE:
            return dt
    except TypeError:
        pass
    raise ValueError(f"{fn}: field {name!r}: expected a dtype among {', '.join(DTYPES)}; "
                     f"got {dt!r}")


def _shape(fn, name, shape):
    def ok(d):
        return d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
    if not isinstance(shape, tuple | list) or not all(map(ok, shape)):
        raise ValueError(f"{fn}: field {name!r}: expected a shape as a tuple of non-negative ints "
                         f"or None; got {shape!r}")
    return tuple(shape)


def parse(schema, fn="ruda.data.Dataset.create"):
    """A tuple of Fields from ``{name: (dtype, shape)}``; ValueError on anything else."""
    if not isinstance(schema, dict) or not schema:
        raise ValueError(f"{fn}: expected schema as a non-empty dict {{name: (dtype, shape)}}; "
                         f"got {schema!r}")
    fields = []
    for name, spec in schema.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"{fn}: expected field names as non-empty strings; got {name!r}")
        if not isinstance(spec, tuple | list) or len(spec) != 2:
            raise ValueError(f"{fn}: field {name!r}: expected (dtype, shape); got {spec!r}")
        fields.append(Field(name, _dtype(fn, name, spec[0]), _shape(fn, name, spec[1])))
    return tuple(fields)


def as_dict(fields):
    return {f.name: (DTYPES[_BY_DTYPE[f.dtype]], f.shape) for f in fields}


def to_json(fields):
    return json.dumps([{"name": f.name, "dtype": f.type_name, "shape": list(f.shape)}
                       for f in fields])


def from_json(text, where):
    """Fields from stored JSON; DatasetError (naming ``where``) if it is not a valid schema."""
    try:
        items = json.loads(text)
        return parse({d["name"]: (d["dtype"], tuple(d["shape"])) for d in items}, "schema")
    except (ValueError, TypeError, KeyError) as e:
        raise DatasetError(f"ruda.data: {where}: the stored schema is invalid ({e})") from None


# validation of written values --------------------------------------------------------------

def _host(value):
    """A NumPy array for a NumPy array, a ruda array on any device, or Python data."""
    if isinstance(value, np.ndarray):
        return value, False
    if isinstance(value, xp.Array):
        return np.asarray(value.to_device("cpu")), False
    return np.asarray(value), True


def _value(fn, f, value, batched):
    try:
        host, python_data = _host(value)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{fn}: field {f.name!r}: expected an array of {f.type_name}; got "
                         f"{type(value).__name__} ({e})") from None
    if python_data and host.dtype.kind in _PY_KINDS and f.dtype.kind in _PY_KINDS[host.dtype.kind]:
        try:
            with np.errstate(over="ignore"):
                cast = np.asarray(value, dtype=f.dtype)
        except (OverflowError, ValueError) as e:
            raise ValueError(f"{fn}: field {f.name!r}: value does not fit {f.type_name} ({e})") \
                from None
        if host.dtype.kind in "fc":      # finite values that became inf (inf/nan given stay)
            grew = np.isinf(cast) & np.isfinite(host)
            if grew.any():
                big = host[grew].flat[0].item()
                raise ValueError(f"{fn}: field {f.name!r}: value {big!r} does not fit "
                                 f"{f.type_name} (it overflows to inf)")
        host = cast
    if host.dtype.byteorder == ">" and host.dtype.newbyteorder("<") == f.storage:
        host = host.astype(f.storage)    # the field's type in the other byte order: swap bytes
    if host.dtype != f.dtype:
        raise ValueError(f"{fn}: field {f.name!r}: expected dtype {f.type_name}; got {host.dtype}")
    shape = host.shape[1:] if batched else host.shape
    if batched and host.ndim == 0:
        raise ValueError(f"{fn}: field {f.name!r}: expected a leading batch axis; got a 0-d value")
    if len(shape) != len(f.shape) or any(e is not None and e != g for e, g in zip(f.shape, shape)):
        what = "per-record shape" if batched else "shape"
        raise ValueError(f"{fn}: field {f.name!r}: expected {what} {_fmt(f.shape)}; got "
                         f"{_fmt(shape)}")
    return host


def _fmt(shape):
    dims = ", ".join("None" if d is None else str(d) for d in shape)
    return f"({dims},)" if len(shape) == 1 else f"({dims})"


def _names(fn, fields, given, what):
    if not isinstance(given, dict):
        raise ValueError(f"{fn}: expected {what} as a dict {{field: array}}; got "
                         f"{type(given).__name__}")
    expected = [f.name for f in fields]
    for name in given:
        if name not in expected:
            raise ValueError(f"{fn}: field {name!r} is not in the schema; expected fields "
                             f"{', '.join(expected)}; got {', '.join(map(str, given))}")
    for name in expected:
        if name not in given:
            raise ValueError(f"{fn}: field {name!r} is missing; expected fields "
                             f"{', '.join(expected)}; got {', '.join(map(str, given))}")


def check_batch(fn, fields, batch):
    """(n, [host array per field, leading batch axis]) after validating every field."""
    _names(fn, fields, batch, "a batch")
    arrays = [_batch_value(fn, f, batch[f.name]) for f in fields]
    sizes = {len(a) for a in arrays}
    if len(sizes) > 1:
        got = ", ".join(f"{f.name}: {len(a)}" for f, a in zip(fields, arrays))
        raise ValueError(f"{fn}: expected the same batch length for every field; got {got}")
    return len(arrays[0]), arrays


def _batch_value(fn, f, value):
    """A fixed field's array with a batch axis; a variable field's list of record arrays."""
    if f.fixed:
        return _value(fn, f, value, True)
    if isinstance(value, list | tuple):
        return [_value(fn, f, v, False) for v in value]
    return list(_value(fn, f, value, True))


def check_record(fn, fields, record):
    """Like check_batch's arrays, for one record."""
    _names(fn, fields, record, "a record")
    return [_value(fn, f, record[f.name], False)[None] if f.fixed
            else [_value(fn, f, record[f.name], False)] for f in fields]
