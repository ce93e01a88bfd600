"""The C accelerator's one registration point: what ``ruda._speedups`` (ruda/_speedups.c) does
for host arrays, listed.

:func:`install` runs once, from ruda/__init__.py, before the namespace takes its functions by
name.  Each function listed becomes a ``ruda._speedups.Function`` that runs a C fast path for host
arrays and calls the Python function (its ``__wrapped__``) for every other case; Array's number
and mapping slots get the Python code they hand over to.  Array's C base type itself, ``new`` and
the default device are registered where Array is made (ruda/_array.py).  Without the accelerator
(not built, or ``RUDA_PURE_PYTHON=1``) nothing here runs and the Python functions are the
namespace's.
"""
import numpy as np

from ruda import _creation, _data_type, _devices, _dtypes, _elementwise as ew, _hints
from ruda import _linear_algebra, _manipulation, _searching, _sorting
from ruda import _validation as v
from ruda._array import _speedups
from ruda._operands import c_dtypes


def _python(fn):
    """The Python function behind ``fn`` (a keyword-hint Function keeps it as __wrapped__)."""
    return fn if fn.__class__ is not _speedups.Function else fn.__wrapped__


def _function(kind, fn, extra):
    """``fn`` with the C fast path ``kind`` (see m_function in ruda/_speedups_c/register.h)."""
    f = _speedups.function(kind, _python(fn), extra)
    _hints.pickled_by_name(f)
    return f


def _binary(name, fn, fast, scalar):
    """Binary elementwise ``fn`` with the C fast path (dtypes from ruda._operands.fast_dtypes)."""
    f = _speedups.binary(name, _python(fn), *c_dtypes(fast, scalar))
    _hints.pickled_by_name(f)
    return f


def install():
    """Replace the listed namespace functions by their C versions; register the operators."""
    host = tuple(_dtypes.all_dtypes)
    pairs = _dtypes.with_public(host)
    host_float = v.default_dtype(_devices.CPU, "real floating")
    numeric = tuple(d for d in host if d in v._CATEGORY_SETS["numeric"])
    real_numeric = tuple(d for d in host if d in v._CATEGORY_SETS["real numeric"])

    _creation.asarray = _function("asarray", _creation.asarray, host)
    _creation.zeros = _function("filled", _creation.zeros, (np.zeros, pairs, host_float))
    _creation.ones = _function("filled", _creation.ones, (np.ones, pairs, host_float))
    _creation.empty = _function("filled", _creation.empty, (np.empty, pairs, host_float))
    _data_type.astype = _function("astype", _data_type.astype,
                                  (pairs, (_dtypes.complex64, _dtypes.complex128)))
    _linear_algebra.matmul = _function("matmul", _linear_algebra.matmul, (numeric, np.matmul))
    _manipulation.permute_dims = _function("permute_dims", _manipulation.permute_dims, None)
    _manipulation.reshape = _function("reshape", _manipulation.reshape, None)
    _searching.where = _function("where", _searching.where, (host, _dtypes.bool, np.where))
    _sorting.sort = _function("sort", _sorting.sort,
                              (real_numeric, ("order",), ("axis", "kind"), "K", "stable"))

    # every binary elementwise function (C checks its op list against the table at import)
    ew.add = _binary("add", ew.add, ew._ADD_FAST, ew._ADD_SCALAR)
    ew.atan2 = _binary("atan2", ew.atan2, ew._ATAN2_FAST, ew._ATAN2_SCALAR)
    ew.bitwise_and = _binary("bitwise_and", ew.bitwise_and, ew._BITWISE_AND_FAST,
                             ew._BITWISE_AND_SCALAR)
    ew.bitwise_left_shift = _binary("bitwise_left_shift", ew.bitwise_left_shift,
                                    ew._BITWISE_LEFT_SHIFT_FAST, ew._BITWISE_LEFT_SHIFT_SCALAR)
    ew.bitwise_or = _binary("bitwise_or", ew.bitwise_or, ew._BITWISE_OR_FAST, ew._BITWISE_OR_SCALAR)
    ew.bitwise_right_shift = _binary("bitwise_right_shift", ew.bitwise_right_shift,
                                     ew._BITWISE_RIGHT_SHIFT_FAST, ew._BITWISE_RIGHT_SHIFT_SCALAR)
    ew.bitwise_xor = _binary("bitwise_xor", ew.bitwise_xor, ew._BITWISE_XOR_FAST,
                             ew._BITWISE_XOR_SCALAR)
    ew.copysign = _binary("copysign", ew.copysign, ew._COPYSIGN_FAST, ew._COPYSIGN_SCALAR)
    ew.divide = _binary("divide", ew.divide, ew._DIVIDE_FAST, ew._DIVIDE_SCALAR)
    ew.equal = _binary("equal", ew.equal, ew._EQUAL_FAST, ew._EQUAL_SCALAR)
    ew.floor_divide = _binary("floor_divide", ew.floor_divide, ew._FLOOR_DIVIDE_FAST,
                              ew._FLOOR_DIVIDE_SCALAR)
    ew.greater = _binary("greater", ew.greater, ew._GREATER_FAST, ew._GREATER_SCALAR)
    ew.greater_equal = _binary("greater_equal", ew.greater_equal, ew._GREATER_EQUAL_FAST,
                               ew._GREATER_EQUAL_SCALAR)
    ew.hypot = _binary("hypot", ew.hypot, ew._HYPOT_FAST, ew._HYPOT_SCALAR)
    ew.less = _binary("less", ew.less, ew._LESS_FAST, ew._LESS_SCALAR)
    ew.less_equal = _binary("less_equal", ew.less_equal, ew._LESS_EQUAL_FAST, ew._LESS_EQUAL_SCALAR)
    ew.logaddexp = _binary("logaddexp", ew.logaddexp, ew._LOGADDEXP_FAST, ew._LOGADDEXP_SCALAR)
    ew.logical_and = _binary("logical_and", ew.logical_and, ew._LOGICAL_AND_FAST,
                             ew._LOGICAL_AND_SCALAR)
    ew.logical_or = _binary("logical_or", ew.logical_or, ew._LOGICAL_OR_FAST, ew._LOGICAL_OR_SCALAR)
    ew.logical_xor = _binary("logical_xor", ew.logical_xor, ew._LOGICAL_XOR_FAST,
                             ew._LOGICAL_XOR_SCALAR)
    ew.maximum = _binary("maximum", ew.maximum, ew._MAXIMUM_FAST, ew._MAXIMUM_SCALAR)
    ew.minimum = _binary("minimum", ew.minimum, ew._MINIMUM_FAST, ew._MINIMUM_SCALAR)
    ew.multiply = _binary("multiply", ew.multiply, ew._MULTIPLY_FAST, ew._MULTIPLY_SCALAR)
    ew.nextafter = _binary("nextafter", ew.nextafter, ew._NEXTAFTER_FAST, ew._NEXTAFTER_SCALAR)
    ew.not_equal = _binary("not_equal", ew.not_equal, ew._NOT_EQUAL_FAST, ew._NOT_EQUAL_SCALAR)
    ew.pow = _binary("pow", ew.pow, ew._POW_FAST, ew._POW_SCALAR)
    ew.remainder = _binary("remainder", ew.remainder, ew._REMAINDER_FAST, ew._REMAINDER_SCALAR)
    ew.subtract = _binary("subtract", ew.subtract, ew._SUBTRACT_FAST, ew._SUBTRACT_SCALAR)

    # Array's number slots: the forward operator calls the function registered just above; these
    # are the reflected and in-place ones, and the host backend's NumPy ufunc (when the op is
    # exactly one) is their fast path and the temporaries' `out=`
    from ruda import _indexing, _operators
    for fn in (ew.add, ew.subtract, ew.multiply, ew.divide, ew.floor_divide, ew.remainder, ew.pow,
               ew.bitwise_and, ew.bitwise_or, ew.bitwise_xor, ew.bitwise_left_shift,
               ew.bitwise_right_shift):
        name = fn.__name__
        _speedups.operators(name, _operators.reflected(fn), _operators.inplace(fn, name),
                            _devices.CPU.backend.binary_ufunc(name))
    # `x * 2.5 + 1.0` reuses the temporary (see elide() in ruda/_speedups_c/elision.h)
    _speedups.elision(tuple(d for d in host if d.kind in "fc"))
    # the mapping slots' fast path takes int/slice/... keys of host arrays, the rest goes here
    _speedups.indexing(_indexing.getitem, _indexing.setitem,
                       tuple(d for d in host if d.kind in "iufc"),
                       tuple(d for d in host if d.kind in "fc"),
                       tuple(d for d in host if d.kind in "iub"))
