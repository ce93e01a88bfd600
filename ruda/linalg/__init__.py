"""The linalg extension of the array API standard."""
import builtins as _builtins
import operator as _operator
from collections import namedtuple as _namedtuple

from ruda import _dtypes, _hints
from ruda import _validation as _v
from ruda._array import Array as _Array
from ruda._linear_algebra import matmul, matrix_transpose, promoted as _promoted, tensordot, vecdot
from ruda._statistical import accumulation_dtype as _accumulation_dtype

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


def _call(fn, x, *args, result=None, square=False, cat="floating-point", **kwargs):
    dev = _matrix(fn, x, square, cat)
    out = getattr(dev.backend, f"linalg_{fn}")(x._data, *args, **kwargs)
    if result is None:
        return _Array._new(out, dev)
    return result(*[_Array._new(o, dev) for o in out])


def cholesky(x, /, *, upper=False):
    return _call("cholesky", x, square=True, upper=_builtins.bool(upper))


def det(x, /):
    return _call("det", x, square=True)


def eig(x, /):
    return _call("eig", x, square=True, result=EigResult)


def eigh(x, /):
    return _call("eigh", x, square=True, result=EighResult)


def eigvals(x, /):
    return _call("eigvals", x, square=True)


def eigvalsh(x, /):
    return _call("eigvalsh", x, square=True)


def inv(x, /):
    return _call("inv", x, square=True)


def slogdet(x, /):
    return _call("slogdet", x, square=True, result=SlogdetResult)


def svd(x, /, *, full_matrices=True):
    return _call("svd", x, result=SVDResult, full_matrices=_builtins.bool(full_matrices))


def svdvals(x, /):
    return _call("svdvals", x)


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"ruda.linalg.qr: mode must be 'reduced' or 'complete'; got {mode!r}")
    return _call("qr", x, result=QRResult, mode=mode)


def _rtol(fn, rtol, x):
    rtol = _v.python_scalar(rtol)
    if rtol is None or _v.is_scalar(rtol):
        return rtol
    _v.array(f"linalg.{fn}", "rtol", rtol)
    _v.same_device(f"linalg.{fn}", x, rtol)
    return rtol._data


def matrix_rank(x, /, *, rtol=None):
    return _call("matrix_rank", x, rtol=_rtol("matrix_rank", rtol, x))


def pinv(x, /, *, rtol=None):
    return _call("pinv", x, rtol=_rtol("pinv", rtol, x))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    ord = _v.python_scalar(ord)
    if ord not in ("fro", "nuc") and not (_v.is_scalar(ord) and ord in (1, 2, -1, -2, float("inf"), -float("inf"))):
        raise ValueError(f"ruda.linalg.matrix_norm: unsupported ord {ord!r}")
    return _call("matrix_norm", x, keepdims=_builtins.bool(keepdims), ord=ord)


def matrix_power(x, n, /):
    return _call("matrix_power", x, _operator.index(n), square=True, cat="numeric")


def diagonal(x, /, *, offset=0):
    return _call("diagonal", x, cat="all", offset=_operator.index(offset))


def trace(x, /, *, offset=0, dtype=None):
    _matrix("trace", x, cat="numeric")
    dt = _accumulation_dtype("linalg.trace", x, dtype)
    return _Array._new(x._device.backend.linalg_trace(x._data, offset=_operator.index(offset), dtype=dt),
                      x._device)


def solve(x1, x2, /):
    dev, a, b = _promoted("linalg.solve", x1, x2, "floating-point")
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"ruda.linalg.solve: x1 must be a (stack of) square matrices; got shape {a.shape}")
    if b.ndim == 0 or (b.ndim == 1 and b.shape[0] != a.shape[-1]) or \
            (b.ndim > 1 and b.shape[-2] != a.shape[-1]):
        raise ValueError(f"ruda.linalg.solve: shapes {a.shape} and {b.shape} do not match")
    return _Array._new(dev.backend.linalg_solve(a, b), dev)


def cross(x1, x2, /, *, axis=-1):
    dev, a, b = _promoted("linalg.cross", x1, x2, "numeric")
    if not -_builtins.min(a.ndim, b.ndim) <= axis < _builtins.min(a.ndim, b.ndim):
        raise ValueError(f"ruda.linalg.cross: axis={axis} is out of range for shapes {a.shape} and {b.shape}")
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError(f"ruda.linalg.cross: axis {axis} must have size 3; got shapes {a.shape} and {b.shape}")
    _v.broadcast_shapes("linalg.cross", a.shape, b.shape)
    return _Array._new(dev.backend.linalg_cross(a, b, axis=axis), dev)


def outer(x1, x2, /):
    dev, a, b = _promoted("linalg.outer", x1, x2, "numeric")
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"ruda.linalg.outer: x1 and x2 must be 1-D; got shapes {a.shape} and {b.shape}")
    return _Array._new(dev.backend.linalg_outer(a, b), dev)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    _v.array("linalg.vector_norm", "x", x)
    _v.category("linalg.vector_norm", "x", x._dtype, "floating-point")
    ord = _v.python_scalar(ord)
    if not _v.is_scalar(ord) or isinstance(ord, complex | _builtins.bool):
        raise ValueError(f"ruda.linalg.vector_norm: ord must be a real number; got {ord!r}")
    ax = None if axis is None else _v.axes("linalg.vector_norm", axis, x.ndim)
    out = x._device.backend.linalg_vector_norm(x._data, axis=ax, keepdims=_builtins.bool(keepdims), ord=ord)
    return _Array._new(out, x._device)


_hints.install(globals(), ("cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh",
                           "inv", "matrix_norm", "matrix_power", "matrix_rank", "outer", "pinv", "qr",
                           "slogdet", "solve", "svd", "svdvals", "trace", "vector_norm"))
__getattr__ = _hints.module_getattr(__name__)   # NumPy names: a hint in the AttributeError
