"""The linalg extension of the array API standard.

Each function checks its arguments and calls the backend method ``linalg_<name>``.
"""
import builtins as _builtins
from collections import namedtuple as _namedtuple

import numpy as _np

from ruda import _dtypes, _hints
from ruda import _validation as _v
from ruda._array import Array as _Array
from ruda._data_type import finfo as _finfo
from ruda._elementwise import conj as _conj
from ruda._linear_algebra import (matmul, matrix_transpose, promoted as _promoted, tensordot, vecdot,
                                  vector_axis as _vector_axis)
from ruda._statistical import accumulation_dtype as _accumulation_dtype
from ruda._typing import Axis as _Axis, DType as _DType

__all__ = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
           "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer",
           "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "EigResult", "EighResult", "QRResult", "SlogdetResult", "SVDResult"]

EigResult = _namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
EighResult = _namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
QRResult = _namedtuple("QRResult", ["Q", "R"])
SlogdetResult = _namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = _namedtuple("SVDResult", ["U", "S", "Vh"])


def _matrix(fn, x, square=False, cat="floating-point"):
    _v.array(f"linalg.{fn}", "x", x)
    _v.category(f"linalg.{fn}", "x", x._dtype, cat)
    if x.ndim < 2:
        raise ValueError(f"ruda.linalg.{fn}: x must have at least 2 dimensions; got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"ruda.linalg.{fn}: x must be square in its last two dimensions; got shape {x.shape}")
    return x._device


def _lapack(fn, method, *args, **kwargs):
    """A backend's LAPACK-backed ``method``, whose failures (NumPy's and CuPy's ``LinAlgError``:
    a singular matrix, one not positive definite, an SVD that does not converge) name ``fn``."""
    try:
        return method(*args, **kwargs)
    except _np.linalg.LinAlgError as e:
        raise type(e)(f"ruda.linalg.{fn}: {e}") from None


def _wrap(dev, out, result):
    """A backend's tuple of native arrays as the named tuple ``result`` of Arrays on ``dev``."""
    return result(*[_Array._new(o, dev) for o in out])


def _adjoint(x):
    t = matrix_transpose(x)
    return _conj(t) if x._dtype.kind == "c" else t


def cholesky(x: _Array, /, *, upper: bool = False) -> _Array:
    dev = _matrix("cholesky", x, square=True)
    if upper:       # the factor of x's upper triangle (NumPy's, torch's): U = L^H, L of x^H's lower
        return _adjoint(cholesky(_adjoint(x)))
    return _Array._new(_lapack("cholesky", dev.backend.linalg_cholesky, x._data, upper=False), dev)


def det(x: _Array, /) -> _Array:
    dev = _matrix("det", x, square=True)
    return _Array._new(dev.backend.linalg_det(x._data), dev)


def eig(x: _Array, /) -> EigResult:
    dev = _matrix("eig", x, square=True)
    return _wrap(dev, _lapack("eig", dev.backend.linalg_eig, x._data), EigResult)


def eigh(x: _Array, /) -> EighResult:
    dev = _matrix("eigh", x, square=True)
    return _wrap(dev, _lapack("eigh", dev.backend.linalg_eigh, x._data), EighResult)


def eigvals(x: _Array, /) -> _Array:
    dev = _matrix("eigvals", x, square=True)
    return _Array._new(_lapack("eigvals", dev.backend.linalg_eigvals, x._data), dev)


def eigvalsh(x: _Array, /) -> _Array:
    dev = _matrix("eigvalsh", x, square=True)
    return _Array._new(_lapack("eigvalsh", dev.backend.linalg_eigvalsh, x._data), dev)


def inv(x: _Array, /) -> _Array:
    dev = _matrix("inv", x, square=True)
    return _Array._new(_lapack("inv", dev.backend.linalg_inv, x._data), dev)


def slogdet(x: _Array, /) -> SlogdetResult:
    dev = _matrix("slogdet", x, square=True)
    return _wrap(dev, dev.backend.linalg_slogdet(x._data), SlogdetResult)


def svd(x: _Array, /, *, full_matrices: bool = True) -> SVDResult:
    dev = _matrix("svd", x)
    out = _lapack("svd", dev.backend.linalg_svd, x._data,
                  full_matrices=_builtins.bool(full_matrices))
    return _wrap(dev, out, SVDResult)


def svdvals(x: _Array, /) -> _Array:
    dev = _matrix("svdvals", x)
    return _Array._new(_lapack("svdvals", dev.backend.linalg_svdvals, x._data), dev)


def qr(x: _Array, /, *, mode: str = "reduced") -> QRResult:
    if mode not in ("reduced", "complete"):
        raise ValueError(f"ruda.linalg.qr: mode must be 'reduced' or 'complete'; got {mode!r}")
    dev = _matrix("qr", x)
    return _wrap(dev, _lapack("qr", dev.backend.linalg_qr, x._data, mode=mode), QRResult)


def _rtol(fn, rtol, x):
    """``rtol`` as a real Python number or None, or a native array of a real dtype on x's device
    that broadcasts against x's stack shape."""
    rtol = _v.python_scalar(rtol)
    if isinstance(rtol, complex | _builtins.bool):
        raise ValueError(f"ruda.linalg.{fn}: rtol must be a real number; got {rtol!r}")
    if rtol is None and x._dtype in _dtypes.extension_dtypes:   # computed in float32: the
        return max(x.shape[-2:]) * float(_finfo(x._dtype).eps)  # default is still x's eps
    if rtol is None or _v.is_scalar(rtol):
        return rtol
    _v.array(f"linalg.{fn}", "rtol", rtol)
    _v.same_device(f"linalg.{fn}", x, rtol)
    _v.category(f"linalg.{fn}", "rtol", rtol._dtype, "real numeric")
    _v.broadcast_shapes(f"linalg.{fn}", x.shape[:-2], rtol.shape)
    return rtol._data


def matrix_rank(x: _Array, /, *, rtol: float | _Array | None = None) -> _Array:
    dev = _matrix("matrix_rank", x)
    rtol = _rtol("matrix_rank", rtol, x)
    if 0 in x.shape[-2:]:
        # no singular values, so rank 0 (NumPy's); the backends' cut-off takes their maximum
        shape = _v.broadcast_shapes("linalg.matrix_rank", x.shape[:-2], getattr(rtol, "shape", ()))
        return _Array._new(dev.backend.full(shape, 0, _v.default_dtype(dev, "integral")), dev)
    return _Array._new(_lapack("matrix_rank", dev.backend.linalg_matrix_rank, x._data, rtol=rtol),
                       dev)


def pinv(x: _Array, /, *, rtol: float | _Array | None = None) -> _Array:
    dev = _matrix("pinv", x)
    rtol = _rtol("pinv", rtol, x)
    data = x._data
    stack = _v.broadcast_shapes("linalg.pinv", x.shape[:-2], getattr(rtol, "shape", ()))
    if stack != x.shape[:-2]:    # an rtol of more matrices: x's stack broadcast to it (matrix_rank's)
        data = dev.backend.broadcast_to(data, stack + x.shape[-2:])
    return _Array._new(_lapack("pinv", dev.backend.linalg_pinv, data, rtol=rtol), dev)


def matrix_norm(x: _Array, /, *, keepdims: bool = False, ord: int | float | str = "fro") -> _Array:
    ord = _v.python_scalar(ord)
    if ord not in ("fro", "nuc") and not (_v.is_scalar(ord) and ord in (1, 2, -1, -2, float("inf"), -float("inf"))):
        raise ValueError(f"ruda.linalg.matrix_norm: unsupported ord {ord!r}")
    dev = _matrix("matrix_norm", x)
    m, n = x.shape[-2:]
    if not m or not n:
        # the negative ords take a least value; NumPy raises where there is none to take
        least = {-1: ("column sum of |x|", "columns", n), -2: ("singular value", "rows and columns", 0),
                 -float("inf"): ("row sum of |x|", "rows", m)}.get(ord)
        if least is not None and not least[2]:
            raise ValueError(f"ruda.linalg.matrix_norm: ord={ord} (the least {least[0]}) needs x with "
                             f"{least[1]}; got shape {x.shape}")
        # every other norm of no values is 0 (NumPy's); the backends' max/min have no identity
        shape = x.shape[:-2] + ((1, 1) if keepdims else ())
        return _Array._new(dev.backend.full(shape, 0, _dtypes.real_of(x._dtype)), dev)
    out = dev.backend.linalg_matrix_norm(x._data, keepdims=_builtins.bool(keepdims), ord=ord)
    return _Array._new(out, dev)


def matrix_power(x: _Array, n: int, /) -> _Array:
    dev = _matrix("matrix_power", x, square=True, cat="numeric")
    n = _v.integer("linalg.matrix_power", "n", n)
    if n == 1:      # a copy, as every other power is a new array (NumPy hands back x itself)
        return x.__copy__()
    return _Array._new(_lapack("matrix_power", dev.backend.linalg_matrix_power, x._data, n), dev)


def diagonal(x: _Array, /, *, offset: int = 0) -> _Array:
    dev = _matrix("diagonal", x, cat="all")
    return _Array._new(dev.backend.linalg_diagonal(x._data, offset=_v.integer("linalg.diagonal", "offset", offset)), dev)


def trace(x: _Array, /, *, offset: int = 0, dtype: _DType | None = None) -> _Array:
    _matrix("trace", x, cat="numeric")
    dt = _accumulation_dtype("linalg.trace", x, dtype)
    return _Array._new(x._device.backend.linalg_trace(x._data, offset=_v.integer("linalg.trace", "offset", offset), dtype=dt),
                      x._device)


def solve(x1: _Array, x2: _Array, /) -> _Array:
    dev, a, b = _promoted("linalg.solve", x1, x2, "floating-point")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"ruda.linalg.solve: x1 must be a (stack of) square matrices; got shape {a.shape}")
    if b.ndim == 0 or (b.ndim == 1 and b.shape[0] != a.shape[-1]) or \
            (b.ndim > 1 and b.shape[-2] != a.shape[-1]):
        raise ValueError(f"ruda.linalg.solve: shapes {a.shape} and {b.shape} do not match")
    _v.broadcast_shapes("linalg.solve", a.shape[:-2], b.shape[:-2])     # the stacks (x2 1-D: none)
    return _Array._new(_lapack("solve", dev.backend.linalg_solve, a, b), dev)


def cross(x1: _Array, x2: _Array, /, *, axis: int = -1) -> _Array:
    dev, a, b = _promoted("linalg.cross", x1, x2, "numeric")
    a, b, ax, home = _vector_axis("linalg.cross", dev, a, b, axis, size=3)
    out = dev.backend.linalg_cross(a, b, axis=ax)
    if home is not None:     # the result's vectors at the operands' axis (NumPy's)
        out = dev.backend.moveaxis(out, (out.ndim - 1,), (home,))
    return _Array._new(out, dev)


def outer(x1: _Array, x2: _Array, /) -> _Array:
    dev, a, b = _promoted("linalg.outer", x1, x2, "numeric")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"ruda.linalg.outer: x1 and x2 must be 1-D; got shapes {a.shape} and {b.shape}")
    return _Array._new(dev.backend.linalg_outer(a, b), dev)


def vector_norm(x: _Array, /, *, axis: _Axis = None, keepdims: bool = False,
                ord: int | float = 2) -> _Array:
    _v.array("linalg.vector_norm", "x", x)
    _v.category("linalg.vector_norm", "x", x._dtype, "floating-point")
    ord = _v.python_scalar(ord)
    if not _v.is_scalar(ord) or isinstance(ord, complex | _builtins.bool):
        raise ValueError(f"ruda.linalg.vector_norm: ord must be a real number; got {ord!r}")
    ax = None if axis is None else _v.axes("linalg.vector_norm", axis, x.ndim)
    if ord in (float("inf"), float("-inf")) and \
            any(x.shape[a] == 0 for a in (range(x.ndim) if ax is None else ax)):
        if ord < 0:
            raise ValueError("ruda.linalg.vector_norm: ord=-inf needs values to take the least "
                             f"|x| of; got shape {x.shape} reduced over a zero-size axis")
        ord = 1     # the largest |x| of no values is 0 (NumPy's), as the 1-norm's empty sum
    out = x._device.backend.linalg_vector_norm(x._data, axis=ax, keepdims=_builtins.bool(keepdims), ord=ord)
    return _Array._new(out, x._device)


_hints.install(globals(), ("cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
                           "inv", "matrix_norm", "matrix_power", "matrix_rank", "outer", "pinv", "qr",
                           "slogdet", "solve", "svd", "svdvals", "trace", "vector_norm"))
__getattr__ = _hints.module_getattr(__name__)   # NumPy names: a hint in the AttributeError
