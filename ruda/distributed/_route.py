"""Which engine serves an array, and the native buffers it gets.

Layering: ruda.distributed uses the public ruda API only.  MPI and NCCL read and write an
array's memory in place: a host array's storage is ``np.asarray(x)`` (its ``__array__``, a
view of any dtype, bfloat16 included), a cuda array's is ``cupy.from_dlpack(x)`` (DLPack, on
CuPy's current stream; CuPy is what NCCL and CUDA-aware MPI take).  Results come back zero-copy
through ``ruda.asarray`` (host) and ``ruda.from_dlpack`` (cuda).  wgpu arrays have no native
buffer MPI or NCCL can read: they are staged through the host (``x.to_device("cpu")`` and
back), by design.  Nothing else moves between devices.
"""
import socket

import numpy as np

import ruda
from ruda.runtime import env

Array = ruda.Array
CPU = ruda.device("cpu")
_INFO = ruda.__array_namespace_info__()


def engine_for(ctx, fn, dev):
    if dev.kind != "cuda":
        return ctx.mpi
    if ctx.nccl is not None:
        if dev.index != ctx.nccl.device_index:
            raise ValueError(f"ruda.distributed.{fn}: this rank's NCCL communicator is on "
                             f"'cuda:{ctx.nccl.device_index}'; got an array on '{dev}'")
        return ctx.nccl
    if ctx.backend != "mpi" and _nccl_everywhere(ctx):
        return nccl_engine(ctx, fn, dev.index)
    if cuda_aware(ctx):
        return ctx.mpi
    raise ValueError(f"ruda.distributed.{fn}: an array on '{dev}' needs NCCL (CuPy's "
                     f"cupy.cuda.nccl) or a CUDA-aware MPI, and this job has neither "
                     f"(backend={ctx.backend!r}); move it with x.to_device('cpu') first")


def _nccl_available():
    try:
        from cupy.cuda import nccl
        return bool(nccl.available)
    except Exception:  # noqa: BLE001 - any import failure means no NCCL
        return False


def _nccl_everywhere(ctx):
    ctx.wd.arm("NCCL availability check")
    try:
        return bool(ctx.comm.allreduce(_nccl_available(), op=ctx.MPI.LAND))
    finally:
        ctx.wd.disarm()


def default_cuda_index(ctx):
    import cupy
    return ctx.local_rank % cupy.cuda.runtime.getDeviceCount()


def cuda_aware(ctx):
    query = getattr(ctx.MPI, "Query_cuda_support", None)
    # a switch (a value that is not one raises ValueError), else what MPI says
    return env.flag("RUDA_DIST_CUDA_AWARE_MPI", False) or bool(query and query())


def nccl_engine(ctx, fn, device_index):
    """Create this job's NCCL communicator (collective: every rank calls it)."""
    from ruda.distributed import _nccl
    if not _nccl_everywhere(ctx):
        raise ImportError(f"ruda.distributed.{fn}: backend 'nccl' needs CuPy with NCCL "
                          f"(cupy.cuda.nccl) on every rank")
    ctx.wd.arm("NCCL unique id broadcast")
    try:
        uid = ctx.comm.bcast(_nccl.unique_id() if ctx.rank == 0 else None, root=0)
    finally:
        ctx.wd.disarm()
    if device_index is None:
        device_index = default_cuda_index(ctx)
    ctx.wd.arm("NCCL device check")
    try:
        places = ctx.comm.allgather(_gpu_place(device_index))
    finally:
        ctx.wd.disarm()
    one_gpu_each(fn, places)
    ctx.nccl = _nccl.NcclEngine(uid, ctx.size, ctx.rank, device_index, ctx.wd)
    return ctx.nccl


def _gpu_place(device_index):
    import cupy
    return socket.gethostname(), cupy.cuda.Device(device_index).pci_bus_id, device_index


def one_gpu_each(fn, places):
    """Raise on every rank where two ranks' (host, PCI bus id, index) name one GPU: NCCL
    refuses that with a bare ``NCCL_ERROR_INVALID_USAGE``."""
    seen = {}
    for rank, (host, bus, index) in enumerate(places):
        if (host, bus) in seen:
            raise ValueError(
                f"ruda.distributed.{fn}: NCCL needs a GPU of its own for each rank; ranks "
                f"{seen[host, bus]} and {rank} both use 'cuda:{index}' on {host} (PCI {bus}): "
                f"start at most as many ranks on a machine as it has GPUs, or move the arrays "
                f"to 'cpu' first")
        seen[host, bus] = rank


def native(x):
    """x's native storage, C-contiguous (wgpu: a host copy)."""
    kind = x.device.kind
    if kind == "cuda":
        import cupy
        try:
            a = cupy.from_dlpack(x)
        except (BufferError, TypeError, ValueError) as e:
            raise TypeError(f"ruda.distributed: a {x.dtype} array on '{x.device}' reaches NCCL "
                            f"through DLPack, which this CuPy refuses: {e}") from None
    else:
        a = np.asarray(x if kind == "cpu" else x.to_device(CPU))
    return a if a.flags.c_contiguous else a.copy(order="C")


def host_array(a):
    """A ruda host array around NumPy array ``a``, without a copy (whatever the default device)."""
    if _INFO.default_device() is CPU:
        return ruda.asarray(a)
    return ruda.asarray(a, device=CPU, copy=False)


def namespace(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def wrap(a, dev):
    """A ruda Array on ``dev`` around native result ``a`` (None stays None)."""
    if a is None:
        return None
    if dev.kind == "cuda":
        return ruda.from_dlpack(a)
    x = host_array(a)
    return x if dev.kind == "cpu" else x.to_device(dev)


def local_device(ctx, kind):
    """This rank's device of ``kind`` for results that have no input array."""
    if kind == "cuda":
        idx = ctx.nccl.device_index if ctx.nccl is not None else default_cuda_index(ctx)
        return ruda.device(f"cuda:{idx}")
    return ruda.device(kind)


def like(dev):
    """A zero-size native array marking which memory an engine should allocate in."""
    if dev.kind == "cuda":
        import cupy
        with cupy.cuda.Device(dev.index):
            return cupy.empty(0, np.uint8)
    return None
