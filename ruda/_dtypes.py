"""Data types, dtype categories and type promotion.

Inside ruda a dtype is a NumPy dtype instance, so the host, CuPy and DLPack all
speak it natively; backends map them to their own types.  The public dtype
objects (``ruda.float32``, ``Array.dtype``, what ``result_type`` and the info
functions return) are :class:`DType`: one per NumPy dtype, equal to it and
accepted by NumPy and CuPy wherever they take a dtype, but never equal to None,
which NumPy's dtypes read as float64 (``np.dtype("float64") == None`` is True).
``as_numpy`` and ``public`` convert at the namespace's edges.  Categories are
tables, as in the standard.  Promotion follows the standard's table exactly;
combinations it leaves undefined (mixed kinds such as int with float, or
uint64 with int64) follow NumPy 2 (``numpy.promote_types``), which agrees with
the standard wherever the standard defines a result.

``float16`` (NumPy's) and ``bfloat16`` (via ml_dtypes) are extensions beyond the
standard, promoted by one written table (``_HALF_WITH``: NumPy 2's rule for
float16, ml_dtypes 0.7's for bfloat16, which agree; written out so that it does
not depend on the installed ml_dtypes: 0.6 refuses int16 and wider integers):
with bool, int8 and uint8 a half dtype stays itself; with int16/uint16 and the
other half dtype it gives float32, with wider integers float64, with
float32/float64/complex that type.  The inspection tables list neither (they
report the standard's dtypes); the categories and ``isdtype`` kinds hold both.
"""
import builtins

import numpy as np

bool = np.dtype("bool")
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

float16 = np.dtype("float16")      # extension dtype

try:  # extension dtype, only where ml_dtypes is installed
    import ml_dtypes as _ml_dtypes

    bfloat16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - optional dependency
    bfloat16 = None

signed_integer_dtypes = (int8, int16, int32, int64)
unsigned_integer_dtypes = (uint8, uint16, uint32, uint64)
integer_dtypes = signed_integer_dtypes + unsigned_integer_dtypes
real_floating_dtypes = (float32, float64)
complex_floating_dtypes = (complex64, complex128)
floating_dtypes = real_floating_dtypes + complex_floating_dtypes
real_numeric_dtypes = integer_dtypes + real_floating_dtypes
numeric_dtypes = real_numeric_dtypes + complex_floating_dtypes
all_dtypes = (bool,) + numeric_dtypes
extension_dtypes = (float16,) + ((bfloat16,) if bfloat16 is not None else ())


class DType:
    """A ruda data type: stands for the NumPy dtype in its ``dtype`` attribute (through which
    NumPy and CuPy take it as that dtype), equals it and that dtype's other spellings, never
    None.  Made only by :func:`public`, one per dtype, so ``x.dtype is ruda.float32`` holds."""

    __slots__ = ("dtype", "name", "kind", "itemsize", "_hash")

    def __new__(cls, *args, **kwargs):
        raise TypeError("ruda.DType cannot be constructed directly; use ruda.float32 and the "
                        "other dtype objects of the namespace")

    def __eq__(self, other):
        if other is self:
            return True
        if other is None or other.__class__ is DType:
            return False
        return self.dtype == other

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"ruda.{self.name}"

    def __str__(self):
        return self.name

    def __reduce__(self):
        return (_public_named, (self.name,))

    def __getattr__(self, attr):      # the NumPy dtype's other attributes (char, type, str, ...)
        return getattr(object.__getattribute__(self, "dtype"), attr)


_PUBLIC = {}


def public(dt):
    """The public :class:`DType` of NumPy dtype ``dt``."""
    try:
        return _PUBLIC[dt]
    except KeyError:
        dt = np.dtype(dt)
        pub = _PUBLIC.get(dt)
        if pub is None:
            pub = object.__new__(DType)
            pub.dtype, pub.name, pub.kind, pub.itemsize = dt, name(dt), dt.kind, dt.itemsize
            pub._hash = hash(dt)
            _PUBLIC[dt] = pub
        return pub


def as_numpy(dt):
    """The NumPy dtype a :class:`DType` stands for (anything else unchanged)."""
    return dt.dtype if dt.__class__ is DType else dt


def with_public(dts):
    """``dts`` followed by their public DTypes, in the same order (the C accelerator's pairs)."""
    return tuple(dts) + tuple(map(public, dts))


def _public_named(nm):
    return public(bfloat16 if nm == "bfloat16" else np.dtype(nm))


_names = {dt: dt.name for dt in all_dtypes + (float16,)}
if bfloat16 is not None:
    _names[bfloat16] = "bfloat16"

# Category name (as used in error messages) -> dtypes it admits.
CATEGORIES = {
    "all": all_dtypes + extension_dtypes,
    "numeric": numeric_dtypes + extension_dtypes,
    "real numeric": real_numeric_dtypes + extension_dtypes,
    "integer": integer_dtypes,
    "integer or boolean": integer_dtypes + (bool,),
    "boolean": (bool,),
    "floating-point": floating_dtypes + extension_dtypes,
    "real floating-point": real_floating_dtypes + extension_dtypes,
    "complex floating-point": complex_floating_dtypes,
}
_CATEGORY_SETS = {k: frozenset(v) for k, v in CATEGORIES.items()}

# isdtype() kinds -> dtypes.
KINDS = {
    "bool": (bool,),
    "signed integer": signed_integer_dtypes,
    "unsigned integer": unsigned_integer_dtypes,
    "integral": integer_dtypes,
    "real floating": real_floating_dtypes + extension_dtypes,
    "complex floating": complex_floating_dtypes,
    "numeric": numeric_dtypes + extension_dtypes,
}

# Ordering of kinds for Python-scalar promotion: bool < int < float < complex.
_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}
_SCALAR_RANK = {builtins.bool: 0, int: 1, float: 2, complex: 3}


def name(dtype):
    return _names.get(dtype, str(dtype))


def in_category(dtype, category):
    return dtype in _CATEGORY_SETS[category]


def is_dtype(obj):
    """True for a dtype ruda knows (standard or extension)."""
    if obj.__class__ is DType:      # its NumPy dtype: a DType key compares through np.dtype()
        obj = obj.dtype
    try:
        return obj in _names
    except TypeError:
        return False


def named(obj):
    """The NumPy dtype of a ruda dtype, or of a NumPy scalar type or dtype name standing for one
    (``np.float32``, ``"float32"``); None for anything else."""
    obj = as_numpy(obj)
    if is_dtype(obj):
        return np.dtype(obj)
    if isinstance(obj, str) or isinstance(obj, type) and issubclass(obj, np.generic):
        try:
            cand = np.dtype(obj)
        except TypeError:
            return None
        return cand if is_dtype(cand) else None
    return None


def kind_rank(dtype):
    return _KIND_RANK[dtype.kind]


def promote(dt1, dt2):
    """Result dtype of an operation between arrays of dt1 and dt2."""
    if dt1 is dt2 or dt1 == dt2:
        return dt1
    half = _HALF_WITH.get(dt1)
    if half is not None:
        return half[dt2]
    half = _HALF_WITH.get(dt2)
    if half is not None:
        return half[dt1]
    return np.promote_types(dt1, dt2)


def _half_table(h, other):
    """What half dtype ``h`` gives with each other dtype (``other``: the other half dtype)."""
    t = {"bool": h, "int8": h, "uint8": h, "int16": float32, "uint16": float32, "int32": float64,
         "uint32": float64, "int64": float64, "uint64": float64, "float32": float32,
         "float64": float64, "complex64": complex64, "complex128": complex128}
    t = {np.dtype(k): v for k, v in t.items()}
    if other is not None:
        t[other] = float32
    return t


# The written promotion table of the half dtypes (the module docstring's rule).
_HALF_WITH = {float16: _half_table(float16, bfloat16)}
if bfloat16 is not None:
    _HALF_WITH[bfloat16] = _half_table(bfloat16, float16)


def complex_of(dtype):
    """The complex dtype of the same precision as a real floating dtype."""
    return complex128 if dtype == float64 else complex64


def real_of(dtype):
    """The real dtype of the same precision as a complex dtype."""
    return {complex64: float32, complex128: float64}.get(dtype, dtype)


class finfo_object:
    """The standard's finfo result: plain Python floats, the dtype."""

    __slots__ = ("bits", "eps", "max", "min", "smallest_normal", "dtype")

    def __init__(self, dtype):
        # ml_dtypes' finfo for bfloat16: np.finfo knows it only where ml_dtypes matches NumPy's ABI
        info = _ml_dtypes.finfo(dtype) if dtype == bfloat16 else np.finfo(dtype)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = float(info.smallest_normal)
        self.dtype = public(real_of(dtype) if dtype.kind == "c" else dtype)

    def __repr__(self):
        return (f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, min={self.min}, "
                f"smallest_normal={self.smallest_normal}, dtype={name(self.dtype)})")


class iinfo_object:
    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, dtype):
        info = np.iinfo(dtype)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = public(dtype)

    def __repr__(self):
        return f"iinfo(bits={self.bits}, max={self.max}, min={self.min}, dtype={name(self.dtype)})"
