"""The MPI engine (mpi4py): collectives on host NumPy arrays without copies.

Also serves CuPy arrays when the MPI library is CUDA-aware (mpi4py reads
``__cuda_array_interface__``); the stream is synchronized first since MPI does
not know it.  Arrays arrive C-contiguous with the split/concat axis first.
bfloat16 and float16 travel as uint16 (MPI has no bfloat16, and Open MPI no float16) and are
reduced in float32 (their sums and means would overflow and round at every step).  Floating min
and max propagate NaN, as ``ruda.maximum`` does (MPI's MIN and MAX keep or drop a NaN by rank
order).
"""
import numpy as np

from ruda import _dtypes
from ruda.distributed import _check, _pool
from ruda.distributed._pending import Pending, done

_OPS = {"sum": "SUM", "mean": "SUM", "prod": "PROD", "min": "MIN", "max": "MAX"}
_BOOL_OPS = {"min": "LAND", "max": "LOR"}
WIDENED = frozenset(d for d in (_dtypes.bfloat16, _dtypes.float16) if d is not None)


def _nan_propagating(ufunc):
    """An MPI user function ``inout = ufunc(in, inout)`` on the buffers as NumPy arrays."""
    def fn(inmem, inoutmem, datatype):
        from mpi4py.util.dtlib import to_numpy_dtype
        dt = to_numpy_dtype(datatype)
        b = np.frombuffer(inoutmem, dt)
        ufunc(np.frombuffer(inmem, dt), b, out=b)
    return fn


class MpiEngine:
    name = "mpi"

    def __init__(self, comm, watchdog):
        from mpi4py import MPI
        self.MPI, self.comm, self.wd = MPI, comm, watchdog
        self.size = comm.Get_size()
        self.host_plans = {}        # (op, dtype, shape) -> plan of all_reduce_host
        self._table = np.empty((self.size, _check.WIDTH), np.int64)
        self._nan_ops = {}          # "min" / "max" -> the NaN-propagating MPI op (made once)

    # helpers -----------------------------------------------------------
    def empty(self, shape, dtype, like=None):
        if like is None or isinstance(like, np.ndarray):
            return _pool.empty(shape, dtype)
        import cupy
        return cupy.empty(shape, dtype)

    @staticmethod
    def _buf(a):
        if a is None:
            return None
        if not isinstance(a, np.ndarray):
            import cupy
            cupy.cuda.get_current_stream().synchronize()
        return a.view(np.uint16) if a.dtype in WIDENED else a

    def _op(self, op, dtype):
        if op in _BOOL_OPS and dtype.kind == "f":
            mop = self._nan_ops.get(op)
            if mop is None:
                fn = _nan_propagating(np.maximum if op == "max" else np.minimum)
                mop = self._nan_ops[op] = self.MPI.Op.Create(fn, commute=True)
            return mop
        name = _BOOL_OPS[op] if dtype == _dtypes.bool else _OPS[op]
        return getattr(self.MPI, name)

    def _call(self, what, nb, blocking, nonblocking, args, finish):
        """Run the blocking call under the watchdog, or start the non-blocking one."""
        if nb:      # the finish closure keeps the buffers alive until completion
            req = nonblocking(*args)
            return Pending(self.wd, what, wait=req.Wait, test=req.Test,
                           finish=lambda: (args, finish())[1])
        self.wd.arm(what)
        try:
            blocking(*args)
        finally:
            self.wd.disarm()
        return done(finish())

    def _reduction(self, a, op):
        """(send buffer, MPI op, compute dtype, finish(out) -> result)."""
        dt = a.dtype
        if dt in WIDENED:
            a = a.astype(np.float32)
        w = self.size

        def finish(out):
            if out is None:
                return None
            if op == "mean":
                out /= w
            return out.astype(dt) if out.dtype != dt else out
        return self._buf(a), self._op(op, a.dtype), a.dtype, finish

    # collectives -------------------------------------------------------
    def host_plan(self, op, x, dtype):
        """The cached plan of ``all_reduce_host`` for ``op`` on arrays like ``x`` (validated
        ``op``; ``dtype``, x's NumPy dtype, one MPI types natively): (MPI op, agreement record,
        the check's expected table bytes, mean?, an output view reserved in the pool or None)."""
        rec = _check.record("all_reduce", op, -1, -1, x)
        plan = (self._op(op, dtype), rec, rec.tobytes() * self.size, op == "mean",
                _pool.reserve(x.shape, dtype))
        if len(self.host_plans) > 4096:
            self.host_plans.clear()
        self.host_plans[(op, dtype, x.shape)] = plan
        return plan

    def all_reduce_host(self, a, plan, check):
        """Blocking all_reduce of a C-contiguous host array: the lean hot path.

        Everything local (the plan, the pooled output) is ready before the agreement
        check, so between its Allgather and the data's Allreduce there is only a bytes
        comparison; on a mismatch no rank enters the Allreduce and every rank raises.
        """
        if plan[4] is not None and _pool.idle(plan, 4):
            out = plan[4]           # the reserved output: the last result is gone
        else:
            out = _pool.empty(a.shape, a.dtype)
        mop, rec, expect, mean = plan[0], plan[1], plan[2], plan[3]
        wd = self.wd
        try:
            if check:
                wd.arm("all_reduce (agreement check)")
                self.comm.Allgather(rec, self._table)
                if self._table.tobytes() != expect:
                    # agree raises unless the records differ only where that is fine (a cpu
                    # rank beside a wgpu one: both hold host memory)
                    _check.agree("all_reduce", self._table.copy())
            wd.arm("all_reduce")
            self.comm.Allreduce(a, out, mop)
        finally:
            wd.disarm()
        if mean:
            out /= self.size
        return out

    def all_reduce(self, a, op, nb):
        send, mop, cdt, finish = self._reduction(a, op)
        out = self.empty(a.shape, cdt, a)
        c = self.comm
        return self._call("all_reduce", nb, c.Allreduce, c.Iallreduce,
                          (send, self._buf(out), mop), lambda: finish(out))

    def reduce(self, a, op, root, nb):
        send, mop, cdt, finish = self._reduction(a, op)
        out = self.empty(a.shape, cdt, a) if self.comm.Get_rank() == root else None
        c = self.comm
        return self._call("reduce", nb, c.Reduce, c.Ireduce,
                          (send, self._buf(out), mop, root), lambda: finish(out))

    def reduce_scatter(self, a, op, nb):
        send, mop, cdt, finish = self._reduction(a, op)
        out = self.empty((a.shape[0] // self.size,) + a.shape[1:], cdt, a)
        c = self.comm
        return self._call("reduce_scatter", nb, c.Reduce_scatter_block, c.Ireduce_scatter_block,
                          (send, self._buf(out), mop), lambda: finish(out))

    def broadcast(self, buf, root, nb):
        c = self.comm
        return self._call("broadcast", nb, c.Bcast, c.Ibcast, (self._buf(buf), root), lambda: buf)

    def all_gather(self, a, nb):
        out = self.empty((self.size * a.shape[0],) + a.shape[1:], a.dtype, a)
        c = self.comm
        return self._call("all_gather", nb, c.Allgather, c.Iallgather,
                          (self._buf(a), self._buf(out)), lambda: out)

    def gather(self, a, root, nb):
        is_root = self.comm.Get_rank() == root
        out = self.empty((self.size * a.shape[0],) + a.shape[1:], a.dtype, a) if is_root else None
        c = self.comm
        return self._call("gather", nb, c.Gather, c.Igather,
                          (self._buf(a), self._buf(out), root), lambda: out)

    def scatter(self, a, shape, dtype, root, nb, like=None):
        out = self.empty(shape, dtype, like if a is None else a)
        c = self.comm
        return self._call("scatter", nb, c.Scatter, c.Iscatter,
                          (self._buf(a), self._buf(out), root), lambda: out)

    def all_to_all(self, a, nb):
        out = self.empty(a.shape, a.dtype, a)
        c = self.comm
        return self._call("all_to_all", nb, c.Alltoall, c.Ialltoall,
                          (self._buf(a), self._buf(out)), lambda: out)

    def send(self, a, dst, tag, nb):
        c = self.comm
        return self._call("send", nb, c.Send, c.Isend, (self._buf(a), dst, tag), lambda: None)

    def recv(self, out, src, tag, nb):
        c = self.comm
        return self._call("recv", nb, c.Recv, c.Irecv, (self._buf(out), src, tag), lambda: out)

    def barrier(self, nb):
        c = self.comm
        return self._call("barrier", nb, c.Barrier, c.Ibarrier, (), lambda: None)
