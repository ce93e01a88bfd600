"""Watchdog: a rank that dies or hangs makes the others fail instead of hanging.

Every blocking call into MPI or NCCL is bracketed by ``arm(what)`` and
``disarm()``, which only store a deadline (no syscall, so the fast path stays
fast).  A daemon thread checks the deadline a few times per timeout; past it, it
prints which call on which rank timed out, aborts the NCCL communicator if any
and calls ``MPI_Abort`` on the world, which ends every rank of the job.

The timeout covers waiting for the slowest rank to reach the same call.  It is
``RUDA_DIST_TIMEOUT`` seconds (default 600), or ``init(timeout=...)``; 0 or a
negative value disables the watchdog, and anything but a finite number raises ValueError.
"""
import math
import sys
import threading
import time

from ruda.runtime import env

DEFAULT_TIMEOUT = 600.0


def timeout_from_env():
    return env.number("RUDA_DIST_TIMEOUT", DEFAULT_TIMEOUT, unit="seconds")


def checked_timeout(t):
    """``init(timeout=t)`` as seconds: a finite number (NaN would switch the watchdog off unseen)."""
    got = t
    try:
        t = float(t)
    except (TypeError, ValueError):
        t = None
    if t is None or not math.isfinite(t):
        raise ValueError(f"ruda.distributed.init: timeout must be a finite number of seconds "
                         f"(0 or less disables the watchdog); got {got!r}")
    return t


class Watchdog:
    def __init__(self, timeout, rank, abort):
        self.timeout = timeout
        self.rank = rank
        self.abort = abort           # callable(message) that ends the job
        self._deadline = 0.0
        self._what = ""
        self._limit = timeout
        self._stop = threading.Event()
        self._thread = None
        if timeout > 0:
            self._thread = threading.Thread(target=self._run, name="ruda-dist-watchdog",
                                            daemon=True)
            self._thread.start()

    def arm(self, what, timeout=None):
        self._what = what
        self._limit = self.timeout if timeout is None else timeout
        self._deadline = time.monotonic() + self._limit

    def disarm(self):
        self._deadline = 0.0

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self):
        poll = min(1.0, max(0.05, self.timeout / 20))
        while not self._stop.wait(poll):
            deadline = self._deadline
            if deadline and time.monotonic() > deadline:
                self._fire()
                return

    def _fire(self):
        who = "?" if self.rank is None else self.rank
        msg = (f"ruda.distributed: rank {who}: {self._what} did not complete within "
               f"{self._limit:g} s (RUDA_DIST_TIMEOUT); another rank died, hung or did not "
               f"call it; aborting the job")
        print(msg, file=sys.stderr, flush=True)
        time.sleep(0.5)         # let mpiexec forward the message before the job is torn down
        self.abort(msg)
