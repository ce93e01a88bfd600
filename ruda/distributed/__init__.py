"""ruda.distributed: collectives on ruda arrays over MPI (mpi4py) and NCCL.

    import ruda.distributed as dist
    dist.init()                                  # once per rank
    y = dist.all_reduce(x, op="sum")             # a new array on x's device

Run with ``python -m ruda.distributed.run -n 4 script.py [args]``.

Engines: host (cpu) arrays go through MPI without copies; cuda arrays through
NCCL on the current CuPy stream (or a CUDA-aware MPI); wgpu arrays are staged
through the host by design.  Every standard dtype and bfloat16 is supported.

Semantics: ops are sum, prod (numeric), min, max (real numeric; on bool they
are 'and' and 'or') and mean (floating-point).  ``reduce`` and ``gather``
return None off the root.  Integer sums wrap like NumPy's same-dtype arithmetic.
Every collective first checks, with one small Allgather, that all ranks agree on
the call, shape, dtype and device kind (raising the same error everywhere);
``RUDA_DIST_CHECK=0`` skips it.  A blocking call that waits longer than
``RUDA_DIST_TIMEOUT`` seconds (default 600) aborts the job with a message.  A rank
that fails ends every rank at once (``_failfast``): under the launcher each rank runs
through ``_bootstrap``, which also ends the job when a rank's script ends without
``init()`` while other ranks are in it; under a bare mpiexec, ``init()`` installs an
excepthook that does the same for unhandled exceptions.
``async_op=True`` returns a :class:`Work` handle: ``.wait()`` gives the result.
"""
from ruda.distributed._collectives import (  # noqa: F401
    all_gather, all_reduce, all_to_all, barrier, broadcast, gather, reduce, reduce_scatter,
    scatter,
)
from ruda.distributed._p2p import recv, send  # noqa: F401
from ruda.distributed._pending import Work  # noqa: F401
from ruda.distributed._state import (  # noqa: F401
    finalize, init, is_initialized, local_rank, rank, timeout, world_size,
)
from ruda.distributed._check import OPS  # noqa: F401


def device():
    """This rank's device: ``cuda:<local_rank>`` where this machine has a GPU for each of its
    ranks (NCCL admits one rank per GPU), else cpu."""
    import ruda
    from ruda.distributed import _route, _state
    ctx = _state.get("device")
    gpus = sum(d.kind == "cuda" for d in ruda.devices())
    if gpus and ctx.local_size <= gpus:
        return ruda.device(f"cuda:{_route.default_cuda_index(ctx)}")
    return ruda.device("cpu")


__all__ = ["init", "finalize", "is_initialized", "rank", "world_size", "local_rank", "timeout",
           "device", "all_reduce", "reduce", "broadcast", "all_gather", "gather", "scatter",
           "reduce_scatter", "all_to_all", "send", "recv", "barrier", "Work", "OPS"]
