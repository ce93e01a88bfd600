"""Array operators: each is the namespace function of its name (``x + y`` is ``ruda.add(x, y)``).

Pure Python: the functions below are Array's operator methods.  With the C accelerator, Array's
base type (``ruda._speedups.Base``) has the number slots: they run the host fast path in C
(``x * 2.5 + 1.0`` also reuses the temporary), then the same namespace function, or the reflected
and in-place methods made here (ruda/_accelerate.py registers them).  The signatures are declared for type checkers in
ruda/_array.py.
"""
import numpy as np

from ruda import _dtypes
from ruda import _elementwise as ew
from ruda import _indexing
from ruda import _linear_algebra as la
from ruda import _numpy_ufuncs
from ruda import _statistical
from ruda import _validation as v
from ruda._array import Array, _speedups

_OPERANDS = v._OPERAND_TYPES   # Python and NumPy scalars; anything else: NotImplemented or TypeError


def _scalar_ndarray(other):
    """A 0-d NumPy array: a NumPy scalar, as on the left (NumPy hands its scalars over as those)."""
    return other.__class__ is np.ndarray and other.ndim == 0


def _operand_ok(other):
    return other.__class__ is Array or isinstance(other, _OPERANDS) or _scalar_ndarray(other)


def forward(fn):
    """== and !=: NotImplemented for non-array objects (so `x == None` is False), but a
    TypeError for another library's array, a sequence or a number of another type (Decimal,
    Fraction), never Python's bare identity answer."""
    def op(self, other):
        if not _operand_ok(other):
            if v.foreign_array(other) or v.foreign_number(other):
                raise v.operand_error(fn.__name__, "x2", other)
            return NotImplemented
        return fn(self, other)
    return op


def reflected(fn):
    def op(self, other):
        if not isinstance(other, _OPERANDS):
            if v.foreign_array(other) or v.foreign_number(other):
                raise v.operand_error(fn.__name__, "x1", other)
            return NotImplemented
        return fn(other, self)
    return op


def inplace(fn, name):
    def op(self, other):
        if not _operand_ok(other):
            return NotImplemented
        v.writable(f"{name} (in place)", self)
        r = fn(self, other)
        if r._data.shape != self._data.shape:
            raise ValueError(f"ruda: in-place {name} would change the shape {self.shape} to {r.shape}")
        rd, sd = r._data.dtype, self._data.dtype
        if rd != sd:
            # a higher kind, or signed into unsigned (NumPy's same-kind casting refuses both)
            if _dtypes.kind_rank(rd) > _dtypes.kind_rank(sd) or (rd.kind, sd.kind) == ("i", "u"):
                raise TypeError(f"ruda: in-place {name} cannot store a {_dtypes.name(rd)} result "
                                f"in a {_dtypes.name(sd)} array")
        self._device.backend.setitem(self._data, Ellipsis, r._data if rd == sd else
                                     self._device.backend.astype(r._data, sd, True))
        return self
    return op


# + - * / // % ** & | ^ << >>: forward, reflected, in-place (with the C accelerator: its number
# slots, which call the same functions; ruda/_accelerate.py registers them)
if _speedups is None:
    Array.__add__, Array.__radd__, Array.__iadd__ = ew.add, reflected(ew.add), inplace(ew.add, "add")
    Array.__sub__, Array.__rsub__, Array.__isub__ = (
        ew.subtract, reflected(ew.subtract), inplace(ew.subtract, "subtract"))
    Array.__mul__, Array.__rmul__, Array.__imul__ = (
        ew.multiply, reflected(ew.multiply), inplace(ew.multiply, "multiply"))
    Array.__truediv__, Array.__rtruediv__, Array.__itruediv__ = (
        ew.divide, reflected(ew.divide), inplace(ew.divide, "divide"))
    Array.__floordiv__, Array.__rfloordiv__, Array.__ifloordiv__ = (
        ew.floor_divide, reflected(ew.floor_divide), inplace(ew.floor_divide, "floor_divide"))
    Array.__mod__, Array.__rmod__, Array.__imod__ = (
        ew.remainder, reflected(ew.remainder), inplace(ew.remainder, "remainder"))
    Array.__pow__, Array.__rpow__, Array.__ipow__ = ew.pow, reflected(ew.pow), inplace(ew.pow, "pow")
    Array.__and__, Array.__rand__, Array.__iand__ = (
        ew.bitwise_and, reflected(ew.bitwise_and), inplace(ew.bitwise_and, "bitwise_and"))
    Array.__or__, Array.__ror__, Array.__ior__ = (
        ew.bitwise_or, reflected(ew.bitwise_or), inplace(ew.bitwise_or, "bitwise_or"))
    Array.__xor__, Array.__rxor__, Array.__ixor__ = (
        ew.bitwise_xor, reflected(ew.bitwise_xor), inplace(ew.bitwise_xor, "bitwise_xor"))
    Array.__lshift__, Array.__rlshift__, Array.__ilshift__ = (
        ew.bitwise_left_shift, reflected(ew.bitwise_left_shift),
        inplace(ew.bitwise_left_shift, "bitwise_left_shift"))
    Array.__rshift__, Array.__rrshift__, Array.__irshift__ = (
        ew.bitwise_right_shift, reflected(ew.bitwise_right_shift),
        inplace(ew.bitwise_right_shift, "bitwise_right_shift"))

# comparisons: == and != answer NotImplemented for foreign types, so `x == None` is False
Array.__lt__ = ew.less
Array.__le__ = ew.less_equal
Array.__gt__ = ew.greater
Array.__ge__ = ew.greater_equal
Array.__eq__ = forward(ew.equal)
Array.__ne__ = forward(ew.not_equal)

# unary operators
Array.__neg__ = ew.negative
Array.__pos__ = ew.positive
Array.__abs__ = ew.abs
Array.__invert__ = ew.bitwise_invert


def _matmul_operand_error(arg, other):
    """A clear TypeError for @ with a scalar, a sequence or another library's array (NumPy's
    and Python's own errors name neither ruda nor the fix); None for other objects."""
    if v.foreign_array(other) or isinstance(other, (*_OPERANDS, list, tuple)):
        hint = "" if isinstance(other, _OPERANDS) else " (convert it with ruda.asarray)"
        return TypeError(f"ruda.matmul: {arg} must be a ruda array; got {type(other).__name__}{hint}")
    return None


def _matmul_forward(self, other):
    if other.__class__ is not Array:
        e = _matmul_operand_error("x2", other)
        if e is not None:
            raise e
        return NotImplemented
    return la.matmul(self, other)


def _matmul_reflected(self, other):
    e = _matmul_operand_error("x1", other)
    if e is not None:
        raise e
    return NotImplemented


def _contains(self, value):
    """``value in x``: NumPy's and torch's (x == value).any(), one reduction on the device."""
    return bool(_statistical.any(ew.equal(self, value)))


Array.__matmul__ = _matmul_forward
Array.__rmatmul__ = _matmul_reflected
Array.__imatmul__ = inplace(la.matmul, "matmul")
Array.__contains__ = _contains
if _speedups is None:   # with the C accelerator: its mapping slots (ruda/_accelerate.py)
    Array.__getitem__ = _indexing.getitem
    Array.__setitem__ = _indexing.setitem
Array.__array_ufunc__ = _numpy_ufuncs.array_ufunc   # np.exp(x) is ruda.exp(x)
Array.__array_function__ = _numpy_ufuncs.array_function
Array.__hash__ = None
