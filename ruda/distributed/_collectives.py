"""The collectives: validate, agree across ranks, run on the array's engine, wrap.

Every function takes ruda Arrays and returns new ones; with ``async_op=True`` it
returns a :class:`Work` whose ``wait()`` gives that result.  Functions with an
``axis`` split or join along it (the engines see it moved first).
"""
import numpy as np

from ruda.distributed import _check, _route, _state
from ruda.distributed._mpi import WIDENED
from ruda.distributed._route import CPU, Array
from ruda.distributed._pending import Work


_NO_OP = _NO_AXIS = object()    # the collective takes no op / axis (None is a bad one given)


def _setup(fn, x, op=_NO_OP, root=None, axis=_NO_AXIS, optional=False, hint=False):
    """Validate and agree: -> (ctx, root, axis, table).  ``optional``: x may be None off
    the root; ``hint``: off the root x only names the device (scatter)."""
    ctx = _state.get(fn)
    if x is not None or not optional:
        _check.array(fn, x)
    if op is _NO_OP:
        op = None
    else:
        _check.op(fn, op, x.dtype)
    r = -1 if root is None else _check.rank_arg(fn, "root", root, ctx.size)
    kind = None
    if hint and ctx.rank != r and x is not None:
        x, kind = None, x.device.kind
    ax = -1
    if axis is not _NO_AXIS and x is not None:
        if x.ndim == 0:
            raise ValueError(f"ruda.distributed.{fn}: x must have at least one dimension; "
                             f"got a 0-d array")
        ax = _check.axis(fn, axis, x.ndim)
    table = None
    if _check.ENABLED or optional:
        table = _exchange(ctx, fn, _check.record(fn, op, r, ax, x, kind))
        _check.agree(fn, table, r if optional else None)
    return ctx, r, ax, table


def _exchange(ctx, fn, rec):
    table = np.empty((ctx.size, rec.size), np.int64)
    ctx.wd.arm(f"{fn} (agreement check)")
    try:
        ctx.comm.Allgather(rec, table)
    finally:
        ctx.wd.disarm()
    return table


def _front(a, ax):
    """``a`` with axis ``ax`` first, C-contiguous (no copy for ax <= 0)."""
    if ax <= 0:
        return a
    nx = _route.namespace(a)
    return nx.ascontiguousarray(nx.moveaxis(a, ax, 0))


def _back(a, ax):
    if ax <= 0 or a is None:
        return a
    nx = _route.namespace(a)
    return nx.ascontiguousarray(nx.moveaxis(a, 0, ax))


def _finish(pending, post, async_op):
    if not async_op:
        return post(pending.wait())
    # in flight until MPI is done with its buffers, whether or not the caller keeps the handle
    # (a dropped handle freed them under MPI: a crash); finished ones are let go here
    live = _state._ctx.in_flight
    live[:] = [q for q in live if not q.test()]
    live.append(pending)
    return Work(pending, post)


def _run(fn, x, method, *args, ax=-1, async_op=False, dev=None):
    """Common tail: x's engine runs ``method(native, *args, nb)``; result back on x's device."""
    ctx = _state.get(fn)
    dev = x.device if dev is None else dev
    eng = _route.engine_for(ctx, fn, dev)
    p = getattr(eng, method)(_front(_route.native(x), ax), *args, async_op)
    return _finish(p, lambda a: _route.wrap(_back(a, ax), dev), async_op)


def all_reduce(x, op="sum", *, async_op=False):
    """Reduce ``x`` over all ranks with ``op`` (sum, prod, min, max, mean); every rank gets it."""
    ctx = _state._ctx
    if ctx is not None and not async_op and x.__class__ is Array and x.device is CPU:
        a = np.asarray(x)   # the hot path: C-contiguous host arrays of a dtype MPI types
        if a.flags.c_contiguous:
            plan = ctx.mpi.host_plans.get((op, a.dtype, a.shape)) if op.__class__ is str else None
            if plan is None and a.dtype not in WIDENED:
                _check.op("all_reduce", op, a.dtype)
                plan = ctx.mpi.host_plan(op, x, a.dtype)
            if plan is not None:
                return _route.host_array(ctx.mpi.all_reduce_host(a, plan, _check.ENABLED))
    _setup("all_reduce", x, op=op)
    return _run("all_reduce", x, "all_reduce", op, async_op=async_op)


def reduce(x, root=0, op="sum", *, async_op=False):
    """Like all_reduce, but only ``root`` gets the result; other ranks get None."""
    _, r, _, _ = _setup("reduce", x, op=op, root=root)
    return _run("reduce", x, "reduce", op, r, async_op=async_op)


def reduce_scatter(x, op="sum", axis=0, *, async_op=False):
    """Reduce over ranks, then rank i keeps the i-th of world_size() equal parts along ``axis``."""
    ctx, _, ax, _ = _setup("reduce_scatter", x, op=op, axis=axis)
    _check.divisible("reduce_scatter", x.shape, ax, ctx.size)
    return _run("reduce_scatter", x, "reduce_scatter", op, ax=ax, async_op=async_op)


def all_gather(x, axis=0, *, async_op=False):
    """Concatenate every rank's ``x`` (same shape on all) along ``axis``, in rank order."""
    _, _, ax, _ = _setup("all_gather", x, axis=axis)
    return _run("all_gather", x, "all_gather", ax=ax, async_op=async_op)


def gather(x, root=0, axis=0, *, async_op=False):
    """Like all_gather, but only ``root`` gets the result; other ranks get None."""
    _, r, ax, _ = _setup("gather", x, root=root, axis=axis)
    return _run("gather", x, "gather", r, ax=ax, async_op=async_op)


def all_to_all(x, axis=0, *, async_op=False):
    """Split ``x`` into world_size() parts along ``axis``; part j goes to rank j; the parts
    received are concatenated in rank order (same shape as ``x``)."""
    ctx, _, ax, _ = _setup("all_to_all", x, axis=axis)
    _check.divisible("all_to_all", x.shape, ax, ctx.size)
    return _run("all_to_all", x, "all_to_all", ax=ax, async_op=async_op)


def broadcast(x, root=0, *, async_op=False):
    """Every rank gets a copy of root's ``x``.  Off the root, ``x`` is a template of the
    same shape and dtype (its values are not used) or None (then the result lands on this
    rank's device of root's device kind)."""
    ctx, r, _, table = _setup("broadcast", x, root=root, optional=True)
    rec = table[r]
    dev = x.device if x is not None else _route.local_device(ctx, _check.kind_of(rec))
    eng = _route.engine_for(ctx, "broadcast", dev)
    if ctx.rank == r:
        buf = _route.native(x).copy()
    else:
        buf = eng.empty(_check.shape_of(rec), _check.dtype_of(rec), _route.like(dev))
    return _finish(eng.broadcast(buf, r, async_op), lambda a: _route.wrap(a, dev), async_op)


def scatter(x, root=0, axis=0, *, async_op=False):
    """Root's ``x`` is split into world_size() equal parts along ``axis``; rank i gets part i.
    Off the root ``x`` may be None (result on this rank's device of root's device kind) or
    an array whose device receives the part."""
    fn = "scatter"
    ctx, r, _, table = _setup(fn, x, root=root, axis=axis, optional=True, hint=True)
    rec = table[r]
    ax, shape = int(rec[_check.F_AXIS]), _check.shape_of(rec)
    _check.divisible(fn, shape, ax, ctx.size, what=f"x (on root {r})")
    dev = x.device if x is not None else _route.local_device(ctx, _check.kind_of(rec))
    eng = _route.engine_for(ctx, fn, dev)
    part = (shape[ax] // ctx.size,) + shape[:ax] + shape[ax + 1:]
    src = _front(_route.native(x), ax) if ctx.rank == r else None
    p = eng.scatter(src, part, _check.dtype_of(rec), r, async_op, like=_route.like(dev))
    return _finish(p, lambda a: _route.wrap(_back(a, ax), dev), async_op)


def barrier(*, async_op=False):
    """Wait until every rank has called barrier()."""
    ctx = _state.get("barrier")
    if _check.ENABLED:
        _check.agree("barrier", _exchange(ctx, "barrier", _check.record("barrier")))
    return _finish(ctx.mpi.barrier(async_op), lambda a: None, async_op)
