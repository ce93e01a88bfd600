"""NumPy ufuncs called on ruda arrays (NEP 13's ``__array_ufunc__``).

``np.exp(x)`` is ``ruda.exp(x)``: a ufunc the standard has (by its name: ``np.absolute`` is
``ruda.abs``, ``np.power`` is ``ruda.pow``) runs as ruda's function, on x's device, so NumPy's
operators beside a ruda array give ruda's answer (``np.float32(2) * x``) or error
(``ndarray + x`` raises, naming the NumPy operand).  Any other ufunc (SciPy's special functions,
``np.deg2rad``, a keyword such as ``dtype=``, ``np.add.reduce``) runs in NumPy on host copies,
which a device array allows only under ``ruda.allow_host_conversion()``; its result comes back as
ruda arrays on the inputs' device.  ``out=`` and ``ufunc.at`` would write into NumPy's copies,
not the ruda array, so they raise.

Other NumPy functions (NEP 18's ``__array_function__``) run as NumPy's, on host copies; those
that turn any conversion error into an answer (``np.array_equal`` is False when its operands do
not convert) convert first, so a device array's refusal surfaces instead of a silent False.
"""
import numpy as np

from ruda import _elementwise as ew
from ruda import _linear_algebra as la
from ruda import _validation as v
from ruda._array import Array
from ruda._creation import asarray
from ruda._hints import RENAMED
from ruda.backends import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY

# NumPy's name -> the standard's: the same, or the spelling ruda's hints name (np.absolute: abs)
_STANDARD = {*ELEMENTWISE_UNARY, *ELEMENTWISE_BINARY}
_NAMES = {**{n: n for n in _STANDARD}, **{n: s for n, s in RENAMED["ruda"].items() if s in _STANDARD}}
_RUDA_FUNCTION = {uf: getattr(ew, s) for n, s in _NAMES.items()
                  if isinstance(uf := getattr(np, n, None), np.ufunc)}
_RUDA_FUNCTION[np.matmul] = la.matmul             # ndarray @ x: ruda's error too


def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    # a NumPy scalar operand (np.int64(2) == x) arrives as a 0-d ndarray: the scalar again
    inputs = [a[()] if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in inputs]
    fn = _RUDA_FUNCTION.get(ufunc) if method == "__call__" else None
    if fn is not None and any(isinstance(a, np.ndarray) for a in inputs):
        return fn(*inputs)          # ndarray + x, ndarray += x: ruda's error for the NumPy operand
    if method == "at" or kwargs.get("out") is not None:
        name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        raise TypeError(f"ruda: {name}{'' if method == 'at' else ' with out='} on a ruda array: "
                        f"NumPy would write into host copies; use ruda's functions and x[...] = value")
    if fn is not None and not kwargs:
        return fn(*inputs)
    dev = v.same_device(ufunc.__name__, *[a for a in inputs if a.__class__ is Array])
    result = getattr(ufunc, method)(*[np.asarray(a) if a.__class__ is Array else a for a in inputs],
                                    **kwargs)
    if isinstance(result, tuple):
        return tuple(asarray(r, device=dev) for r in result)
    return asarray(result, device=dev)


# NumPy functions that catch their operands' conversion errors and answer False
_SWALLOWING = frozenset({np.array_equal, np.array_equiv})


def array_function(self, func, types, args, kwargs):
    if not all(issubclass(t, Array | np.ndarray) for t in types):
        return NotImplemented       # another library's arrays: theirs to decide
    if func in _SWALLOWING:
        args = tuple(np.asarray(a) if a.__class__ is Array else a for a in args)
        kwargs = {k: np.asarray(a) if a.__class__ is Array else a for k, a in kwargs.items()}
    return func._implementation(*args, **kwargs)
