"""Process-wide state: the MPI communicator, the engines and the watchdog."""
import os

from ruda.distributed import _watchdog

BACKENDS = (None, "mpi", "nccl")
_ctx = None


class Context:
    def __init__(self, backend, timeout):
        from mpi4py import MPI
        from ruda.distributed._mpi import MpiEngine
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()       # our own tag space
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        node.Free()
        self.backend = backend
        self.nccl = None
        self.wd = _watchdog.Watchdog(timeout, self.rank, self._abort)
        self.mpi = MpiEngine(self.comm, self.wd)

    def _abort(self, message):
        if self.nccl is not None:
            self.nccl.abort()
        self.MPI.COMM_WORLD.Abort(1)

    def close(self):
        self.wd.stop()
        if self.nccl is not None:
            self.nccl.destroy()
            self.nccl = None
        self.comm.Free()


def init(backend=None, *, timeout=None):
    """Start ruda.distributed on this rank (idempotent for the same backend).

    ``backend``: None (NCCL for cuda arrays when CuPy's NCCL is there, else
    CUDA-aware MPI), ``"mpi"`` (MPI for every array) or ``"nccl"`` (NCCL for cuda
    arrays, required now).  Host and wgpu arrays always use MPI.  ``timeout``:
    seconds a blocking call may wait for the other ranks (default
    ``RUDA_DIST_TIMEOUT`` or 600; 0 disables the watchdog).
    """
    global _ctx
    if backend not in BACKENDS:
        raise ValueError(f"ruda.distributed.init: backend must be None, 'mpi' or 'nccl'; "
                         f"got {backend!r}")
    if _ctx is not None:
        if backend not in (None, _ctx.backend):
            raise ValueError(f"ruda.distributed.init: already initialized with backend "
                             f"{_ctx.backend!r}; got backend={backend!r}")
        return
    try:
        import mpi4py.MPI  # noqa: F401
    except ImportError as e:
        raise ImportError(f"ruda.distributed.init: needs mpi4py and an MPI library "
                          f"(pip install 'ruda[mpi]'): {e}") from None
    t = _watchdog.timeout_from_env() if timeout is None else float(timeout)
    ctx = Context(backend, t)
    if backend == "nccl":
        from ruda.distributed import _route
        try:
            _route.nccl_engine(ctx, "init", None)
        except BaseException:
            ctx.close()
            raise
    _ctx = ctx
    _mark_started(ctx.rank)


def _mark_started(rank):
    """Under the launcher, leave '<rank>.started' now and '<rank>.done' at a normal exit, so
    it can tell a rank that vanished (mpiexec may then end the job with status 0)."""
    folder = os.environ.get("RUDA_DIST_STATUS_DIR")
    if not folder or not os.path.isdir(folder):
        return
    import atexit
    open(os.path.join(folder, f"{rank}.started"), "w").close()
    atexit.register(lambda: open(os.path.join(folder, f"{rank}.done"), "w").close())


def default_cuda_index(ctx):
    import cupy
    return ctx.local_rank % cupy.cuda.runtime.getDeviceCount()


def finalize():
    """Release the communicators and finalize MPI (no ruda.distributed call after this)."""
    global _ctx
    if _ctx is None:
        return
    ctx, _ctx = _ctx, None
    ctx.close()
    if not ctx.MPI.Is_finalized():
        ctx.MPI.Finalize()


def get(fn):
    if _ctx is None:
        raise RuntimeError(f"ruda.distributed.{fn}: call ruda.distributed.init() first")
    return _ctx


def is_initialized():
    return _ctx is not None


def rank():
    """This process's rank in [0, world_size())."""
    return get("rank").rank


def world_size():
    return get("world_size").size


def local_rank():
    """This process's rank among the ranks on its machine."""
    return get("local_rank").local_rank


def timeout():
    return get("timeout").wd.timeout


def env_flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
