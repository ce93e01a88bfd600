"""Linear algebra functions of the main namespace (matmul, matrix_transpose, tensordot, vecdot)."""
from __future__ import annotations

from collections.abc import Sequence

from ruda import _validation as v
from ruda._array import Array


def promoted(fn, x1, x2, cat="numeric"):
    """Device and native operands of a two-array op, cast to their promoted dtype."""
    v.array(fn, "x1", x1)
    v.array(fn, "x2", x2)
    dev = v.same_device(fn, x1, x2)
    v.category(fn, "x1", x1._dtype, cat)
    v.category(fn, "x2", x2._dtype, cat)
    a, b = x1._data, x2._data
    if a.dtype != b.dtype:
        dt = v.promote_on(fn, dev, a.dtype, b.dtype)
        a = a if a.dtype == dt else dev.backend.astype(a, dt, False)
        b = b if b.dtype == dt else dev.backend.astype(b, dt, False)
    return dev, a, b


def matmul(x1: Array, x2: Array, /) -> Array:
    dev, a, b = promoted("matmul", x1, x2)
    sa, sb = a.shape, b.shape
    if not sa or not sb:
        raise ValueError(f"ruda.matmul: operands must be at least 1-D; got shapes {sa} and {sb}")
    ka = sa[-1]
    kb = sb[0] if len(sb) == 1 else sb[-2]
    if ka != kb:
        raise ValueError(f"ruda.matmul: contracted dimensions differ: shapes {sa} and {sb} "
                         f"({ka} != {kb})")
    if len(sa) > 2 or len(sb) > 2:
        v.broadcast_shapes("matmul", sa[:-2], sb[:-2] if len(sb) > 1 else ())
    return Array._new(dev.backend.matmul(a, b), dev)


def matrix_transpose(x: Array, /) -> Array:
    v.array("matrix_transpose", "x", x)
    if x.ndim < 2:
        raise ValueError(f"ruda.matrix_transpose: x must have at least 2 dimensions; got shape {x.shape}")
    return x.mT


def _contracted(s, ndim, arg):
    """One operand's axes in tensordot's ``axes`` pair, normalized and checked for repeats: a
    sequence of ints, or one int (NumPy's spelling of a sequence of one)."""
    if not isinstance(s, tuple | list):
        try:
            s = tuple(s)
        except TypeError:       # not iterable: one axis, which v.axes checks is an integer
            s = (s,)
    return v.axes("tensordot", s, ndim, arg)


def tensordot(x1: Array, x2: Array, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    dev, a, b = promoted("tensordot", x1, x2)
    if isinstance(axes, tuple | list):
        if len(axes) != 2:
            raise ValueError(f"ruda.tensordot: axes must be an int or a pair of sequences; got {axes!r}")
        ax1 = _contracted(axes[0], a.ndim, "axes[0]")
        ax2 = _contracted(axes[1], b.ndim, "axes[1]")
        if len(ax1) != len(ax2):
            raise ValueError(f"ruda.tensordot: axes {axes!r} name different numbers of dimensions")
    else:
        n = v.integer("tensordot", "axes", axes)
        if n < 0 or n > min(a.ndim, b.ndim):
            raise ValueError(f"ruda.tensordot: axes={n} is invalid for shapes {a.shape} and {b.shape}")
        ax1 = tuple(range(a.ndim - n, a.ndim))
        ax2 = tuple(range(n))
    for i, j in zip(ax1, ax2):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"ruda.tensordot: contracted dimensions differ: axis {i} of shape "
                             f"{a.shape} and axis {j} of shape {b.shape}")
    return Array._new(dev.backend.tensordot(a, b, axes=(ax1, ax2)), dev)


def vector_axis(fn, dev, a, b, axis, size=None):
    """vecdot's and cross's operands and vector axis, checked: ``(a, b, axis, home)``, where
    ``axis`` is negative and names the vectors in both.

    A negative axis counts from the end of each operand (the standard's); a non-negative one names
    each operand's own axis (NumPy's), so where the ranks differ each operand's axis is moved last
    and ``home`` is the axis the result's vectors go back to (else None).  The vectors must have
    equal lengths (``size`` where given); the other dimensions must broadcast."""
    axis = v.integer(fn, "axis", axis)
    if not -min(a.ndim, b.ndim) <= axis < min(a.ndim, b.ndim):
        raise ValueError(f"ruda.{fn}: axis={axis} is out of range for shapes {a.shape} and {b.shape}")
    if size is None and a.shape[axis] != b.shape[axis]:
        raise ValueError(f"ruda.{fn}: contracted dimensions differ: shapes {a.shape} and {b.shape}")
    if size is not None and not a.shape[axis] == b.shape[axis] == size:
        raise ValueError(f"ruda.{fn}: axis {axis} must have size {size}; got shapes {a.shape} "
                         f"and {b.shape}")
    v.broadcast_shapes(fn, *(s[:axis % len(s)] + s[axis % len(s) + 1:] for s in (a.shape, b.shape)))
    if axis < 0 or a.ndim == b.ndim:
        return a, b, axis - a.ndim if axis >= 0 else axis, None
    move = dev.backend.moveaxis
    return move(a, (axis,), (a.ndim - 1,)), move(b, (axis,), (b.ndim - 1,)), -1, axis


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    dev, a, b = promoted("vecdot", x1, x2)
    if not a.ndim or not b.ndim:
        raise ValueError(f"ruda.vecdot: operands must be at least 1-D; got shapes {a.shape} and {b.shape}")
    a, b, axis, _ = vector_axis("vecdot", dev, a, b, axis)
    return Array._new(dev.backend.vecdot(a, b, axis=axis), dev)


# with the C accelerator, ruda/_accelerate.py lists the functions here it gives a host fast path
# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("matmul", "matrix_transpose", "tensordot", "vecdot"))
