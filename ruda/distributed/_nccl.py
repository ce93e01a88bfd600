"""The NCCL engine (CuPy's ``cupy.cuda.nccl``): collectives on CuPy arrays, enqueued
on the current CuPy stream of the array's device.

One communicator per process, bound to this rank's GPU, which becomes CuPy's
current device (as torch.cuda.set_device does); the unique id travels over MPI.  Data movement runs on raw bytes (NCCL_UINT8), so every dtype moves;
reductions use NCCL's types: bool as uint8 (max = or, min = and), int16/uint16
widened to 32 bits, complex sum/mean on the (re, im) pairs, complex prod by an
all-gather and a local product; mean is NCCL_AVG (NCCL >= 2.10).
A send to oneself is kept as a device copy for the matching recv.
Blocking calls wait for the stream under the watchdog, so a dead peer aborts
instead of hanging; non-blocking calls record an event that ``wait()`` waits on.
"""
import collections

import numpy as np

from ruda import _dtypes
from ruda.distributed._pending import Pending, done

# ncclDataType_t and ncclRedOp_t values (nccl.h); bfloat16 is NCCL_BFLOAT16 = 9.
_TYPES = {np.dtype(np.int8): 0, np.dtype(np.uint8): 1, np.dtype(np.int32): 2,
          np.dtype(np.uint32): 3, np.dtype(np.int64): 4, np.dtype(np.uint64): 5,
          np.dtype(np.float16): 6, np.dtype(np.float32): 7, np.dtype(np.float64): 8}
if _dtypes.bfloat16 is not None:
    _TYPES[_dtypes.bfloat16] = 9
_UINT8 = 1
_OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "mean": 4}
_WIDEN = {np.dtype(np.int16): np.dtype(np.int32), np.dtype(np.uint16): np.dtype(np.uint32)}


def unique_id():
    """This job's NCCL unique id as bytes (older CuPy returns a tuple of signed chars)."""
    from cupy.cuda import nccl
    return _id_bytes(nccl.get_unique_id())


def _id_bytes(uid):
    if isinstance(uid, (bytes, bytearray, memoryview)):
        return bytes(uid)
    return bytes(int(b) & 0xFF for b in uid)


def _communicator(nccl, size, uid, rank):
    """``NcclCommunicator`` with the id as bytes (CuPy >= 14), else as the tuple of signed
    chars that older CuPy's signature requires."""
    uid = _id_bytes(uid)
    try:
        return nccl.NcclCommunicator(size, uid, rank)
    except TypeError:
        return nccl.NcclCommunicator(size, tuple(b - 256 if b > 127 else b for b in uid), rank)


class NcclEngine:
    name = "nccl"

    def __init__(self, uid, size, rank, device_index, watchdog):
        import cupy
        from cupy.cuda import nccl
        self.cupy, self.nccl, self.wd = cupy, nccl, watchdog
        self.size, self.rank, self.device_index = size, rank, device_index
        self.has_avg = nccl.get_version() >= 21000
        self._self_queue = collections.deque()
        cupy.cuda.Device(device_index).use()   # this rank's GPU is current from now on
        watchdog.arm("NCCL communicator creation")
        try:
            with cupy.cuda.Device(device_index):
                self.comm = _communicator(nccl, size, uid, rank)
        finally:
            watchdog.disarm()

    def abort(self):
        try:
            self.comm.abort()
        except Exception:  # noqa: BLE001 - best effort while the job is being killed
            pass

    def destroy(self):
        self.comm.destroy()

    # helpers -----------------------------------------------------------
    def empty(self, shape, dtype, like=None):
        with self.cupy.cuda.Device(self.device_index):
            return self.cupy.empty(shape, dtype)

    def _stream(self):
        with self.cupy.cuda.Device(self.device_index):
            return self.cupy.cuda.get_current_stream()

    def _run(self, what, nb, enqueue, finish):
        """Enqueue NCCL calls (a callable taking the stream pointer), then wait or hand back."""
        stream = self._stream()
        with self.cupy.cuda.Device(self.device_index):
            enqueue(stream.ptr)
            event = stream.record()
        if nb:
            return Pending(self.wd, what, wait=event.synchronize, test=lambda: event.done,
                           finish=finish)
        self.wd.arm(what)
        try:
            event.synchronize()
        finally:
            self.wd.disarm()
        return done(finish())

    def _op(self, name, *args):
        """An enqueue callable: ``comm.<name>(*args, stream)``."""
        return lambda s: getattr(self.comm, name)(*args, s)

    def _group(self, calls):
        def enqueue(s):
            self.nccl.groupStart()
            try:
                for c in calls:
                    c(s)
            finally:
                self.nccl.groupEnd()
        return enqueue

    def _copy(self, dst, src, nbytes):
        rt = self.cupy.cuda.runtime
        return lambda s: rt.memcpyAsync(dst, src, nbytes, rt.memcpyDeviceToDevice, s)

    def _red_type(self, a, op):
        """(array to reduce, nccl type, count, nccl op, finish(out) -> result) or None."""
        dt = a.dtype
        if dt.kind == "c":
            if op == "prod":
                return None
            real = np.dtype(np.float32 if dt == np.complex64 else np.float64)
            return a, _TYPES[real], a.size * 2, self._nccl_op(op), lambda o: self._mean(o, op)
        if dt == _dtypes.bool:
            return a, _UINT8, a.size, _OPS[op], lambda o: o
        if dt in _WIDEN:
            wide = a.astype(_WIDEN[dt])
            return wide, _TYPES[wide.dtype], a.size, _OPS[op], lambda o: o.astype(dt)
        return a, _TYPES[dt], a.size, self._nccl_op(op), lambda o: self._mean(o, op)

    def _nccl_op(self, op):
        return _OPS["sum"] if op == "mean" and not self.has_avg else _OPS[op]

    def _mean(self, out, op):
        if out is not None and op == "mean" and not self.has_avg:
            out /= self.size
        return out

    # collectives -------------------------------------------------------
    def all_reduce(self, a, op, nb):
        t = self._red_type(a, op)
        if t is None:
            return self._gathered_prod(a, nb, lambda p: p)
        src, ntype, count, nop, finish = t
        out = self.empty(a.shape, src.dtype)
        enq = self._op("allReduce", src.data.ptr, out.data.ptr, count, ntype, nop)
        return self._run("all_reduce", nb, enq, lambda: finish(out))

    def reduce(self, a, op, root, nb):
        t = self._red_type(a, op)
        if t is None:
            return self._gathered_prod(a, nb, lambda p: p if self.rank == root else None)
        src, ntype, count, nop, finish = t
        out = self.empty(a.shape, src.dtype)
        enq = self._op("reduce", src.data.ptr, out.data.ptr, count, ntype, nop, root)
        return self._run("reduce", nb, enq, lambda: finish(out) if self.rank == root else None)

    def reduce_scatter(self, a, op, nb):
        n = a.shape[0] // self.size
        t = self._red_type(a, op)
        if t is None:
            return self._gathered_prod(a, nb, lambda p: p[self.rank * n:(self.rank + 1) * n].copy())
        src, ntype, count, nop, finish = t
        out = self.empty((n,) + a.shape[1:], src.dtype)
        enq = self._op("reduceScatter", src.data.ptr, out.data.ptr, count // self.size, ntype, nop)
        return self._run("reduce_scatter", nb, enq, lambda: finish(out))

    def _gathered_prod(self, a, nb, pick):
        """Complex product: gather every rank's array, multiply locally."""
        g = self.empty((self.size,) + a.shape, a.dtype)
        enq = self._op("allGather", a.data.ptr, g.data.ptr, a.nbytes, _UINT8)

        def finish():
            with self.cupy.cuda.Device(self.device_index):
                return pick(self.cupy.prod(g, axis=0))
        return self._run("all_reduce(prod)", nb, enq, finish)

    def broadcast(self, buf, root, nb):
        enq = self._op("broadcast", buf.data.ptr, buf.data.ptr, buf.nbytes, _UINT8, root)
        return self._run("broadcast", nb, enq, lambda: buf)

    def all_gather(self, a, nb):
        out = self.empty((self.size * a.shape[0],) + a.shape[1:], a.dtype)
        enq = self._op("allGather", a.data.ptr, out.data.ptr, a.nbytes, _UINT8)
        return self._run("all_gather", nb, enq, lambda: out)

    def gather(self, a, root, nb):
        if self.rank != root:
            return self._run("gather", nb, self._group([self._send(a.data.ptr, a.nbytes, root)]),
                             lambda: None)
        out = self.empty((self.size * a.shape[0],) + a.shape[1:], a.dtype)
        nb_ = a.nbytes
        calls = [self._copy(out.data.ptr + root * nb_, a.data.ptr, nb_) if r == root else
                 self._recv(out.data.ptr + r * nb_, nb_, r) for r in range(self.size)]
        return self._run("gather", nb, self._group(calls), lambda: out)

    def scatter(self, a, shape, dtype, root, nb, like=None):
        out = self.empty(shape, dtype)
        n = out.nbytes
        if self.rank != root:
            return self._run("scatter", nb, self._group([self._recv(out.data.ptr, n, root)]),
                             lambda: out)
        calls = [self._copy(out.data.ptr, a.data.ptr + root * n, n) if r == root else
                 self._send(a.data.ptr + r * n, n, r) for r in range(self.size)]
        return self._run("scatter", nb, self._group(calls), lambda: out)

    def all_to_all(self, a, nb):
        out = self.empty(a.shape, a.dtype)
        n = a.nbytes // self.size
        calls = []
        for r in range(self.size):
            if r == self.rank:
                calls.append(self._copy(out.data.ptr + r * n, a.data.ptr + r * n, n))
            else:
                calls += [self._send(a.data.ptr + r * n, n, r),
                          self._recv(out.data.ptr + r * n, n, r)]
        return self._run("all_to_all", nb, self._group(calls), lambda: out)

    def _send(self, ptr, nbytes, peer):
        return self._op("send", ptr, nbytes, _UINT8, peer)

    def _recv(self, ptr, nbytes, peer):
        return self._op("recv", ptr, nbytes, _UINT8, peer)

    def send(self, a, dst, tag, nb):
        if dst == self.rank:            # NCCL has no unmatched send to self: keep a copy
            with self.cupy.cuda.Device(self.device_index):
                self._self_queue.append(a.copy())
            return done(None)
        return self._run("send", nb, self._group([self._send(a.data.ptr, a.nbytes, dst)]),
                         lambda: None)

    def recv(self, out, src, tag, nb):
        if src == self.rank:
            return done(self._self_queue.popleft())
        return self._run("recv", nb, self._group([self._recv(out.data.ptr, out.nbytes, src)]),
                         lambda: out)
