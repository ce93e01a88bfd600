"""Array operators, installed on ``ruda.Array`` from the namespace functions."""
from ruda import _dtypes
from ruda import _elementwise as ew
from ruda import _indexing
from ruda import _linear_algebra as la
from ruda import _validation as v
from ruda._array import Array, _speedups

_OPERANDS = v._OPERAND_TYPES   # Python and NumPy scalars; anything else: NotImplemented or TypeError


def _host_ufunc(name):
    """The host backend's implementation of elementwise ``name`` when it is a plain NumPy ufunc
    (the backend's own wrapper only turns NumPy scalars into 0-d arrays, as the C code does)."""
    import numpy as np
    from ruda.backends import host
    impl = host._source(name)
    return impl if isinstance(impl, np.ufunc) and impl.nin == 2 else None


def _operand_ok(other):
    return other.__class__ is Array or isinstance(other, _OPERANDS)


def _forward(fn):
    """== and !=: NotImplemented for non-array objects (so `x == None` is False), but a
    TypeError for another library's array, never Python's bare identity answer."""
    def op(self, other):
        if other.__class__ is not Array and not isinstance(other, _OPERANDS):
            if v.foreign_array(other):
                raise v.operand_error(fn.__name__, "x2", other)
            return NotImplemented
        return fn(self, other)
    return op


def _reflected(fn):
    def op(self, other):
        if not isinstance(other, _OPERANDS):
            if v.foreign_array(other):
                raise v.operand_error(fn.__name__, "x1", other)
            return NotImplemented
        return fn(other, self)
    return op


def _inplace(fn, name):
    def op(self, other):
        if not _operand_ok(other):
            return NotImplemented
        r = fn(self, other)
        if r._data.shape != self._data.shape:
            raise ValueError(f"ruda: in-place {name} would change the shape {self.shape} to {r.shape}")
        rd, sd = r._data.dtype, self._data.dtype
        if rd != sd:
            if _dtypes.kind_rank(rd) > _dtypes.kind_rank(sd):
                raise TypeError(f"ruda: in-place {name} cannot store a {_dtypes.name(rd)} result "
                                f"in a {_dtypes.name(sd)} array")
        self._device.backend.setitem(self._data, Ellipsis, r._data if rd == sd else
                                     self._device.backend.astype(r._data, sd, True))
        return self
    return op


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}
for _op, _fname in _BINARY.items():
    _fn = getattr(ew, _fname)
    if _speedups is None:
        setattr(Array, f"__{_op}__", _fn)  # the function itself: TypeError for bad operands
        setattr(Array, f"__r{_op}__", _reflected(_fn))
        setattr(Array, f"__i{_op}__", _inplace(_fn, _fname))
    else:   # the C slots run the same three, after their host fast path
        _speedups.operators(_fname, _reflected(_fn), _inplace(_fn, _fname), _host_ufunc(_fname))
if _speedups is not None:   # `x * 2.5 + 1.0` reuses the temporary (see elide() in _speedups.c)
    _speedups.elision(tuple(d for d in _dtypes.all_dtypes if d.kind in "fc"))

for _op, _fname in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}.items():
    setattr(Array, f"__{_op}__", getattr(ew, _fname))
# == and != answer NotImplemented for foreign types, so `x == None` is False rather than an error
Array.__eq__ = _forward(ew.equal)
Array.__ne__ = _forward(ew.not_equal)

for _op, _fname in {"neg": "negative", "pos": "positive", "abs": "abs",
                    "invert": "bitwise_invert"}.items():
    setattr(Array, f"__{_op}__", getattr(ew, _fname))


def _matmul_forward(self, other):
    if other.__class__ is not Array:
        return NotImplemented
    return la.matmul(self, other)


def _matmul_reflected(self, other):
    return NotImplemented


Array.__matmul__ = _matmul_forward
Array.__rmatmul__ = _matmul_reflected
Array.__imatmul__ = _inplace(la.matmul, "matmul")
if _speedups is None:
    Array.__getitem__ = _indexing.getitem
    Array.__setitem__ = _indexing.setitem
else:   # the C slots' fast path takes int/slice/... keys of host arrays, the rest goes here
    _speedups.indexing(_indexing.getitem, _indexing.setitem,
                       tuple(d for d in _dtypes.all_dtypes if d.kind in "iufc"),
                       tuple(d for d in _dtypes.all_dtypes if d.kind in "fc"),
                       tuple(d for d in _dtypes.all_dtypes if d.kind in "iub"))
Array.__array_ufunc__ = None  # NumPy defers to ruda's operators: no silent conversion
Array.__hash__ = None
del _op, _fname
