"""Fail fast: a rank that fails ends the whole job at once and says why.

A failing rank prints its traceback with every line prefixed ``[rank R]`` and ends
every rank of the job: through ``MPI_Abort`` once MPI runs in it, else by dying
from SIGKILL, which mpiexec (MPICH's and Open MPI's) answers by tearing the job
down.  The second way works before ``MPI_Init``, which under mpiexec waits for
every rank, so a rank that fails before ``init()`` cannot use MPI to say so.

Under the launcher (one machine) each rank also leaves files in
``RUDA_DIST_STATUS_DIR`` for it to report from:

    <rank>.pid      the process id, when the rank's bootstrap starts
    <rank>.init     the rank entered ruda.distributed.init()
    <rank>.failed   JSON {"status": exit status, "text": traceback or message}
    <rank>.timeout  the watchdog's message: a blocking call waited too long
    <rank>.end      the script ended normally (written last)
"""
import fcntl
import json
import os
import signal
import stat
import sys
import termios
import time
import traceback

import numpy as np

RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")   # MPICH, Open MPI, PMIx
_rank = None            # the rank MPI gave, once known
_context_abort = None   # the live context's abort(status) (set by _state.init, cleared by finalize)


def env_rank():
    """This process's rank as its launcher (mpiexec) set it in the environment, or None."""
    for var in RANK_VARS:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return None


def rank():
    return _rank if _rank is not None else env_rank()


def set_rank(r):
    global _rank
    _rank = r


def set_context_abort(fn):
    """``fn(status)`` ends the job through the live context (its NCCL communicator first);
    None once it is finalized.  Set by ``_state``, which imports this module (not the reverse)."""
    global _context_abort
    _context_abort = fn


def mark(what, data=""):
    """Leave ``<rank>.<what>`` (atomically) for the launcher, when it asked for them."""
    folder, r = os.environ.get("RUDA_DIST_STATUS_DIR"), rank()
    if not folder or r is None or not os.path.isdir(folder):
        return
    path = os.path.join(folder, f"{r}.{what}")
    try:
        with open(path + ".tmp", "w") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    except OSError:         # the launcher's folder is gone: nobody to tell
        pass


def prefixed(text, r=None):
    tag = f"[rank {'?' if r is None else r}] "
    return "".join(tag + line for line in text.splitlines(True))


def describe(exc, skip=()):
    """The traceback of ``exc`` as Python prints it, without the leading frames of files in
    ``skip`` (the bootstrap's and runpy's)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in skip:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def fail(text, status=1):
    """Print ``text`` for this rank, record it for the launcher and end the whole job."""
    r = rank()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream must not stop the abort
            pass
    try:
        sys.stderr.write(prefixed(text if text.endswith("\n") else text + "\n", r)
                         + f"ruda.distributed: rank {'?' if r is None else r} failed; "
                         f"ending every rank of the job\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    mark("failed", json.dumps({"status": status, "text": text}))
    drain_pipes()
    abort_job(status)


def drain_pipes(limit=1.0):
    """Wait (at most ``limit`` s) until mpiexec has read what this rank wrote to its stdout and
    stderr pipes: the abort tears the job down, and bytes still in a pipe are lost."""
    end = time.monotonic() + limit
    unread = bytearray(4)
    for fd in (1, 2):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            while time.monotonic() < end:
                fcntl.ioctl(fd, termios.FIONREAD, unread)
                if int.from_bytes(unread, sys.byteorder) == 0:
                    break
                time.sleep(0.002)
        except OSError:     # a closed descriptor: nothing to wait for
            continue


def abort_job(status=1, use_mpi=True):
    """End every rank of the job; never returns.  ``use_mpi=False`` (the watchdog while the
    main thread may be inside MPI_Init) goes straight to SIGKILL."""
    try:
        if use_mpi:
            if _context_abort is not None:
                _context_abort(status)
            MPI = sys.modules.get("mpi4py.MPI")
            if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
                MPI.COMM_WORLD.Abort(status)
    finally:
        os.kill(os.getpid(), signal.SIGKILL)


def timed_out(message):
    """The watchdog's end of the job before MPI is up (``message`` is printed already)."""
    mark("timeout", message)
    abort_job(1, use_mpi=False)


def _hook(etype, value, tb):
    fail("".join(traceback.format_exception(etype, value, tb)))


def install_excepthook():
    """Under a bare ``mpiexec python script.py`` (no bootstrap), let an unhandled exception
    after init() end the job instead of leaving the other ranks waiting.  Not in an
    interactive session, nor over a hook the program installed."""
    if sys.excepthook is sys.__excepthook__ and not hasattr(sys, "ps1") \
            and not sys.flags.interactive:
        sys.excepthook = _hook


def join(MPI, calling_init):
    """The first collective of every rank: init() contributes 1, a script that ended without
    calling init() contributes 0 (through the bootstrap).  Returns the ranks of the other
    side, so one side that is empty means every rank agrees."""
    comm = MPI.COMM_WORLD
    flags = np.empty(comm.Get_size(), np.int8)
    comm.Allgather(np.array([int(calling_init)], np.int8), flags)
    return [int(r) for r in np.flatnonzero(flags != int(calling_init))]


def ended_without_init():
    """At the normal end of a script that never called init(): meet the other ranks, and end
    the job if any of them is inside init() (it would wait for this rank forever)."""
    try:
        from mpi4py import MPI
    except ImportError:         # then no rank can be inside init()
        return
    others = join(MPI, calling_init=False)
    set_rank(MPI.COMM_WORLD.Get_rank())
    if others:
        fail(f"ruda.distributed: rank {_rank} ended its script without calling "
             f"ruda.distributed.init() while rank(s) {others} called it; every rank must "
             f"call it")
