"""Manipulation functions."""
from __future__ import annotations

import math

from ruda import _dtypes
from ruda import _validation as v
from ruda._array import Array
from ruda._data_type import promote_all
from ruda._typing import Axis


def _arrays(fn, arrays):
    if not isinstance(arrays, tuple | list) or not arrays:
        raise TypeError(f"ruda.{fn}: arrays must be a non-empty tuple or list of ruda arrays")
    for i, a in enumerate(arrays):
        v.array(fn, f"arrays[{i}]", a)
    dev = v.same_device(fn, *arrays)
    # the promotion of all the dtypes at once: a pairwise fold would depend on their order
    dt = promote_all(fn, [a._dtype for a in arrays], dev)
    natives = [a._data if a._dtype == dt else dev.backend.astype(a._data, dt, False) for a in arrays]
    return dev, natives


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    return v.broadcast_shapes("broadcast_shapes", *[v.shape("broadcast_shapes", s, "shapes") for s in shapes])


def broadcast_arrays(*arrays: Array) -> tuple[Array, ...]:
    for i, a in enumerate(arrays):
        v.array("broadcast_arrays", f"arrays[{i}]", a)
    if not arrays:
        return ()
    dev = v.same_device("broadcast_arrays", *arrays)
    shape = v.broadcast_shapes("broadcast_arrays", *[a.shape for a in arrays])
    return tuple(a if a.shape == shape else Array._new(dev.backend.broadcast_to(a._data, shape), dev)
                 for a in arrays)


def broadcast_to(x: Array, /, shape: tuple[int, ...]) -> Array:
    v.array("broadcast_to", "x", x)
    shape = v.shape("broadcast_to", shape)
    if v.broadcast_shapes("broadcast_to", x.shape, shape) != shape or len(shape) < x.ndim:
        raise ValueError(f"ruda.broadcast_to: cannot broadcast shape {x.shape} to {shape}")
    return Array._new(x._device.backend.broadcast_to(x._data, shape), x._device)


def concat(arrays: tuple[Array, ...] | list[Array], /, *, axis: int | None = 0) -> Array:
    dev, natives = _arrays("concat", arrays)
    if axis is None:
        natives = [dev.backend.reshape(a, (-1,)) for a in natives]
        axis = 0
    else:
        nd = natives[0].ndim
        if any(a.ndim != nd for a in natives):
            raise ValueError(f"ruda.concat: arrays must have the same number of dimensions; got shapes "
                             f"{[a.shape for a in natives]}")
        if nd == 0:
            raise ValueError("ruda.concat: cannot concatenate 0-d arrays (use axis=None or stack)")
        axis = v.axis("concat", axis, nd)
        ref = natives[0].shape
        for a in natives[1:]:
            if any(s != r for i, (s, r) in enumerate(zip(a.shape, ref)) if i != axis):
                raise ValueError(f"ruda.concat: shapes {[t.shape for t in natives]} differ outside "
                                 f"axis {axis}")
    return Array._new(dev.backend.concat(natives, axis=axis), dev)


def expand_dims(x: Array, /, axis: int | tuple[int, ...] = 0) -> Array:
    v.array("expand_dims", "x", x)
    if isinstance(axis, tuple):
        n = x.ndim + len(axis)
        ax = v.axes("expand_dims", axis, n)
    else:
        ax = (v.axis("expand_dims", axis, x.ndim + 1),)
    return Array._new(x._device.backend.expand_dims(x._data, axis=ax), x._device)


def flip(x: Array, /, *, axis: Axis = None) -> Array:
    v.array("flip", "x", x)
    ax = v.axes("flip", axis, x.ndim)
    return Array._new(x._device.backend.flip(x._data, axis=ax), x._device)


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...],
             /) -> Array:
    v.array("moveaxis", "x", x)
    src = v.axes("moveaxis", source, x.ndim, "source")
    dst = v.axes("moveaxis", destination, x.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError(f"ruda.moveaxis: source {source} and destination {destination} differ in length")
    return Array._new(x._device.backend.moveaxis(x._data, src, dst), x._device)


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    v.array("permute_dims", "x", x)
    ax = tuple(v.axis("permute_dims", a, x.ndim, "axes") for a in axes)
    if sorted(ax) != list(range(x.ndim)):
        raise ValueError(f"ruda.permute_dims: axes {axes} is not a permutation of {x.ndim} dimensions")
    return Array._new(x._device.backend.permute_dims(x._data, ax), x._device)


def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    v.array("repeat", "x", x)
    dev = x._device
    if repeats.__class__ is Array:
        v.same_device("repeat", x, repeats)
        v.category("repeat", "repeats", repeats._dtype, "integer")
        if repeats.ndim > 1:
            raise ValueError(f"ruda.repeat: repeats must be 0-D or 1-D; got shape {repeats.shape}")
        reps = repeats._data
        if repeats._dtype == _dtypes.uint64:     # NumPy will not cast uint64 to its intp safely
            reps = dev.backend.astype(reps, _dtypes.int64, False)
    else:
        reps = v.integer("repeat", "repeats", repeats)
        if reps < 0:
            raise ValueError(f"ruda.repeat: repeats must be non-negative; got {reps}")
    if axis is not None:
        axis = v.axis("repeat", axis, x.ndim)
    if repeats.__class__ is Array and repeats.ndim == 1:
        n = x.size if axis is None else x.shape[axis]
        if repeats.shape[0] not in (1, n):
            where = "x's size" if axis is None else f"x.shape[{axis}]"
            raise ValueError(f"ruda.repeat: repeats must have 1 or {where} = {n} entries; got "
                             f"{repeats.shape[0]}")
    try:
        out = dev.backend.repeat(x._data, reps, axis=axis)
    except ValueError as e:      # negative repeats, found by the backend on the data
        raise ValueError(e.args[0] if str(e).startswith("ruda.") else f"ruda.repeat: {e}") from None
    return Array._new(out, dev)


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    v.array("reshape", "x", x)
    shape = tuple(v.integer("reshape", "each shape entry", s)
                  for s in (shape if isinstance(shape, tuple | list) else (shape,)))
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"ruda.reshape: invalid shape {shape}")
    known = math.prod(s for s in shape if s != -1)
    if (known != x.size if not unknown else (known == 0 or x.size % known)):
        raise ValueError(f"ruda.reshape: cannot reshape an array of shape {x.shape} into {shape}")
    try:
        out = x._device.backend.reshape(x._data, shape, copy=copy)
    except ValueError as e:
        raise ValueError(f"ruda.reshape: {e}") from None
    return Array._new(out, x._device)


def roll(x: Array, /, shift: int | tuple[int, ...], *, axis: Axis = None) -> Array:
    v.array("roll", "x", x)
    if axis is None:
        if not isinstance(shift, int):
            raise TypeError(f"ruda.roll: shift must be an int when axis is None; got {shift!r}")
        ax = None
    else:
        ax = tuple(v.axis("roll", a, x.ndim) for a in (axis if isinstance(axis, tuple) else (axis,)))
        if isinstance(shift, tuple):
            if len(shift) != len(ax):
                raise ValueError(f"ruda.roll: shift {shift} and axis {axis} differ in length")
        elif isinstance(axis, tuple):
            shift = (v.integer("roll", "shift", shift),) * len(ax)
        else:
            ax = ax[0]
    return Array._new(x._device.backend.roll(x._data, shift, axis=ax), x._device)


def squeeze(x: Array, /, axis: int | tuple[int, ...] | None = None) -> Array:
    v.array("squeeze", "x", x)
    if axis is None:        # NumPy's and PyTorch's: every axis of size 1
        ax = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        ax = v.axes("squeeze", axis, x.ndim)
    for a in ax:
        if x.shape[a] != 1:
            raise ValueError(f"ruda.squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return Array._new(x._device.backend.squeeze(x._data, axis=ax), x._device)


def stack(arrays: tuple[Array, ...] | list[Array], /, *, axis: int = 0) -> Array:
    dev, natives = _arrays("stack", arrays)
    if len({a.shape for a in natives}) > 1:
        raise ValueError(f"ruda.stack: arrays must share one shape; got {[a.shape for a in natives]}")
    axis = v.axis("stack", axis, natives[0].ndim + 1)
    return Array._new(dev.backend.stack(natives, axis=axis), dev)


def tile(x: Array, repetitions: tuple[int, ...], /) -> Array:
    v.array("tile", "x", x)
    if not isinstance(repetitions, tuple | list):   # NumPy's: one count for the last axis
        repetitions = (v.integer("tile", "repetitions", repetitions),)
    reps = tuple(v.integer("tile", "each repetition", r) for r in repetitions)
    if any(r < 0 for r in reps):
        raise ValueError(f"ruda.tile: repetitions must be non-negative; got {reps}")
    return Array._new(x._device.backend.tile(x._data, reps), x._device)


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    v.array("unstack", "x", x)
    if x.ndim == 0:
        raise ValueError("ruda.unstack: x must have at least one dimension")
    axis = v.axis("unstack", axis, x.ndim)
    return tuple(Array._new(o, x._device) for o in x._device.backend.unstack(x._data, axis=axis))


# with the C accelerator, ruda/_accelerate.py lists the functions here it gives a host fast path
# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat",
                        "expand_dims", "flip", "moveaxis", "permute_dims", "repeat", "reshape",
                        "roll", "squeeze", "stack", "tile", "unstack"))
