"""Process-wide state: the MPI communicator, the engines and the watchdog."""
import numpy as np

from ruda.distributed import _check, _failfast, _route, _watchdog

BACKENDS = (None, "mpi", "nccl")
_ctx = None
_finalized = False      # MPI cannot start again in this process


class Context:
    def __init__(self, backend, wd):
        from mpi4py import MPI
        from ruda.distributed._mpi import MpiEngine
        self.MPI = MPI
        ended = _failfast.join(MPI, calling_init=True)
        _failfast.set_rank(MPI.COMM_WORLD.Get_rank())
        if ended:
            raise RuntimeError(f"ruda.distributed.init: rank(s) {ended} ended their script "
                               f"without calling ruda.distributed.init(); every rank must call it")
        self.comm = MPI.COMM_WORLD.Dup()       # our own tag space
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        node.Free()
        self.backend = backend
        self.nccl = None
        self.wd = wd
        wd.rank, wd.abort = self.rank, self._abort
        self.mpi = MpiEngine(self.comm, self.wd)
        self.recv_queues = {}     # src -> receives whose payload is not posted yet (ruda.distributed._p2p)
        self.in_flight = []       # Pending of non-blocking calls, kept until they complete

    def _abort(self, message):
        _failfast.mark("timeout", message)
        self.abort(1)

    def abort(self, status):
        """End every rank of the job (the NCCL communicator first: its kernels may block)."""
        if self.nccl is not None:
            self.nccl.abort()
        self.MPI.COMM_WORLD.Abort(status)

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
    ``RUDA_DIST_TIMEOUT`` or 600; 0 disables the watchdog); ``init`` itself waits for
    every rank to start up to that or 600 s, whichever is longer.  Every rank must call
    it: under the launcher, a rank whose script ends without calling it while others
    are in it ends the job.
    """
    global _ctx
    if backend not in BACKENDS:
        raise ValueError(f"ruda.distributed.init: backend must be None, 'mpi' or 'nccl'; "
                         f"got {backend!r}")
    if _ctx is None and _finalized:
        raise RuntimeError("ruda.distributed.init: finalize() ended MPI in this process, and MPI "
                           "cannot start twice; init once, finalize at the end")
    if _ctx is not None:
        if backend not in (None, _ctx.backend):
            raise ValueError(f"ruda.distributed.init: already initialized with backend "
                             f"{_ctx.backend!r}; got backend={backend!r}")
        return
    t = _watchdog.timeout_from_env() if timeout is None else _watchdog.checked_timeout(timeout)
    _failfast.mark("init")
    # Armed before MPI_Init, which waits for every rank: a rank that never comes ends the
    # job (by SIGKILL: MPI cannot be used from here during MPI_Init).  Starting up (imports
    # on a shared file system) may be slow, so this wait gets at least the default timeout.
    wd = _watchdog.Watchdog(t, _failfast.env_rank(), _failfast.timed_out)
    wd.arm("init (waiting for every rank to call it)", max(t, _watchdog.DEFAULT_TIMEOUT))
    try:
        try:
            import mpi4py.MPI  # noqa: F401
        except ImportError as e:
            raise ImportError(f"ruda.distributed.init: needs mpi4py and an MPI library "
                              f"(pip install 'ruda[mpi]'): {e}") from None
        ctx = Context(backend, wd)
    except BaseException:
        wd.stop()
        raise
    finally:
        wd.disarm()
    if backend == "nccl":
        try:
            _route.nccl_engine(ctx, "init", None)
        except BaseException:
            ctx.close()
            raise
    _ctx = ctx
    _failfast.set_context_abort(ctx.abort)
    if ctx.size > 1:
        _failfast.install_excepthook()


def finalize():
    """Release the communicators and finalize MPI (no ruda.distributed call after this).

    Every rank must call it (the launcher's bootstrap does at the end of the script): with
    the agreement check on, a rank that finalizes while another waits in a collective makes
    both raise at once.  The exchange is not under the watchdog: a rank may compute long
    after its last collective.
    """
    global _ctx, _finalized
    if _ctx is None:
        return
    ctx = _ctx
    if _check.ENABLED and ctx.size > 1:
        table = np.empty((ctx.size, _check.WIDTH), np.int64)
        ctx.comm.Allgather(_check.record("finalize"), table)
        _check.agree("finalize", table)
    _ctx = None
    _failfast.set_context_abort(None)
    ctx.close()
    if not ctx.MPI.Is_finalized():
        ctx.MPI.Finalize()
    _finalized = True


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
