"""A stand-in for CuPy and cupy.cuda.nccl on the host, for testing ruda's NCCL engine
without a GPU: arrays are NumPy arrays with ``.data.ptr``; the communicator performs
each NCCL call with MPI on the memory behind the pointers, honouring groupStart/End for
send/recv.  It checks the engine's pointers, counts, types and ops, not NCCL itself.
"""
import ctypes
import sys
import types

import numpy as np
from mpi4py import MPI

_NP = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
       6: np.float16, 7: np.float32, 8: np.float64}
_MPI_OPS = {0: MPI.SUM, 1: MPI.PROD, 2: MPI.MAX, 3: MPI.MIN, 4: MPI.SUM}


class ndarray(np.ndarray):
    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


def _wrap(a):
    return np.asarray(a).view(ndarray)


def empty(shape, dtype):
    return np.empty(shape, dtype).view(ndarray)


def prod(a, axis=None):
    return _wrap(np.prod(np.asarray(a), axis=axis))


def _at(ptr, count, dtype):
    dt = np.dtype(dtype)
    buf = (ctypes.c_byte * (count * dt.itemsize)).from_address(ptr)
    return np.frombuffer(buf, dtype=dt)


def _moved(ptr, count, dtype):
    """The memory as MPI moves it: float16 as uint16 (Open MPI has no float16 type)."""
    a = _at(ptr, count, dtype)
    return a.view(np.uint16) if a.dtype == np.float16 else a


def _reduced(mpi_call, src, out, *args, receives=True):
    """``mpi_call(src, out, *args)``, float16 through float32 copies (Open MPI has no float16
    type; NCCL also adds float16 in float32 registers); ``receives``: whether this rank's
    ``out`` gets the result (a reduce's non-root ranks leave it untouched, as MPI and NCCL do)."""
    if out.dtype != np.float16:
        return mpi_call(src, out, *args)
    wide = np.empty(out.shape, np.float32)
    mpi_call(out.astype(np.float32) if src is MPI.IN_PLACE else src.astype(np.float32),
             wide, *args)
    if receives:
        out[...] = wide


class _Event:
    done = True

    def synchronize(self):
        pass


class _Stream:
    ptr = 0

    def record(self):
        return _Event()

    def synchronize(self):
        pass


class _Device:
    def __init__(self, index=0):
        self.index = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass


def _memcpy(dst, src, n, kind, stream):
    ctypes.memmove(dst, src, n)


_group = []          # queued p2p calls between groupStart and groupEnd
_depth = [0]


def groupStart():
    _depth[0] += 1


def groupEnd():
    _depth[0] -= 1
    if _depth[0] == 0 and _group:
        reqs = [start() for start in _group]
        _group.clear()
        MPI.Request.Waitall(reqs)


class NcclCommunicator:
    def __init__(self, ndev, uid, rank):
        if not isinstance(uid, bytes) or len(uid) != 128:     # as CuPy 14
            raise TypeError(f"Argument 'commId' has incorrect type (expected bytes, "
                            f"got {type(uid).__name__})")
        self.c = MPI.COMM_WORLD.Dup()
        assert (self.c.Get_size(), self.c.Get_rank()) == (ndev, rank)

    def allReduce(self, s, r, count, dt, op, stream):
        out = _at(r, count, _NP[dt])
        src = MPI.IN_PLACE if s == r else _at(s, count, _NP[dt])
        _reduced(self.c.Allreduce, src, out, _MPI_OPS[op])
        if op == 4:
            out /= self.c.Get_size()

    def reduce(self, s, r, count, dt, op, root, stream):
        out = _at(r, count, _NP[dt])
        _reduced(self.c.Reduce, _at(s, count, _NP[dt]), out, _MPI_OPS[op], root,
                 receives=self.c.Get_rank() == root)
        if op == 4 and self.c.Get_rank() == root:
            out /= self.c.Get_size()

    def reduceScatter(self, s, r, recvcount, dt, op, stream):
        out = _at(r, recvcount, _NP[dt])
        _reduced(self.c.Reduce_scatter_block, _at(s, recvcount * self.c.Get_size(), _NP[dt]),
                 out, _MPI_OPS[op])
        if op == 4:
            out /= self.c.Get_size()

    def allGather(self, s, r, count, dt, stream):
        self.c.Allgather(_moved(s, count, _NP[dt]), _moved(r, count * self.c.Get_size(), _NP[dt]))

    def broadcast(self, s, r, count, dt, root, stream):
        if s != r and self.c.Get_rank() == root:
            ctypes.memmove(r, s, count * np.dtype(_NP[dt]).itemsize)
        self.c.Bcast(_moved(r, count, _NP[dt]), root)

    def send(self, s, count, dt, peer, stream):
        assert _depth[0] > 0, "send outside a group"
        _group.append(lambda: self.c.Isend(_moved(s, count, _NP[dt]), peer, 7))

    def recv(self, r, count, dt, peer, stream):
        assert _depth[0] > 0, "recv outside a group"
        _group.append(lambda: self.c.Irecv(_moved(r, count, _NP[dt]), peer, 7))

    def abort(self):
        pass

    def destroy(self):
        self.c.Free()


def install():
    """Put the fakes in sys.modules as cupy, cupy.cuda, cupy.cuda.nccl."""
    cupy = types.ModuleType("cupy")
    cuda = types.ModuleType("cupy.cuda")
    nccl = types.ModuleType("cupy.cuda.nccl")
    cupy.ndarray, cupy.empty, cupy.prod, cupy.__version__ = ndarray, empty, prod, "fake"
    cupy.cuda = cuda
    cuda.Device, cuda.get_current_stream, cuda.nccl = _Device, lambda: _Stream(), nccl
    cuda.runtime = types.SimpleNamespace(memcpyAsync=_memcpy, memcpyDeviceToDevice=3)
    nccl.available = True
    nccl.NcclCommunicator, nccl.groupStart, nccl.groupEnd = NcclCommunicator, groupStart, groupEnd
    nccl.get_unique_id = lambda: tuple(range(-64, 64))     # older CuPy's form
    nccl.get_version = lambda: 22000
    sys.modules.update({"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.nccl": nccl})
    return cupy
