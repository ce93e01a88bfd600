"""The host's worker threads, for Python-level tasks that release the GIL (NumPy copies and
ufuncs, BLAS): ``run(fn, n)`` calls ``fn(0) ... fn(n - 1)`` on the caller and up to
``THREADS - 1`` persistent workers.

A ``ThreadPoolExecutor``'s threads are gone in a forked child (a ``multiprocessing`` pool on
Linux forks), where its queue then waits forever; these start again in the child. Idle, they
sleep on a lock, and a task is handed off by releasing it. A call made while another runs
(another thread, or a task calling ``run``) runs its tasks in turn on the caller. Numba kernels
run on Numba's thread team instead (``host/_jit.py``), whose spinning threads hand off faster.
"""
import os
import threading

THREADS = max(1, min(8, os.cpu_count() or 1))


class _Worker:
    __slots__ = ("go", "done", "task", "error")

    def __init__(self):
        self.go = threading.Lock()
        self.go.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.task = None
        self.error = None
        threading.Thread(target=self._loop, name="ruda-host", daemon=True).start()

    def _loop(self):
        while True:
            self.go.acquire()
            fn, ids = self.task
            try:
                for i in ids:           # shared with the other threads: each takes the next
                    fn(i)
            except BaseException as e:  # noqa: BLE001 - raised again on the caller
                self.error = e
            self.task = None
            self.done.release()


_busy = threading.Lock()
_workers = []
forked = False          # True in a process forked after this import


def run(fn, n):
    """``fn(i)`` for i in range(n), each task taken by the next thread free (the caller is one
    of them, so splitting work into a few tasks per thread evens out the workers' later
    start); returns once all are done, raising the first error."""
    if n <= 1 or THREADS == 1 or not _busy.acquire(blocking=False):
        for i in range(n):
            fn(i)
        return
    try:
        k = min(n, THREADS)
        while len(_workers) < k - 1:
            _workers.append(_Worker())
        used = _workers[:k - 1]
        ids = iter(range(n))            # next() on it is atomic under the GIL
        for w in used:
            w.task = (fn, ids)
            w.go.release()
        error = None
        try:
            for i in ids:
                fn(i)
        except BaseException as e:  # noqa: BLE001 - the workers still finish first
            error = e
        waiting = list(used)
        try:
            for w in used:
                w.done.acquire()
                waiting.remove(w)
                if w.error is not None:
                    error = error or w.error
                    w.error = None
        finally:
            if waiting:       # interrupted while they ran: leave them to finish, unused
                _workers[:] = [w for w in _workers if w not in waiting]
        if error is not None:
            raise error
    finally:
        _busy.release()


def run_split(n, fn, parts):
    """``fn(a, b)`` over [0, n) cut into ``parts`` (at most n) contiguous ranges, on ``run``'s
    threads."""
    T = max(1, min(parts, n))
    run(lambda i: fn(n * i // T, n * (i + 1) // T), T)


def scratch(name, size, dtype):
    """This thread's kept work array ``name`` (flat, its first ``size`` elements of ``dtype``):
    a fresh NumPy array faults its pages in at a few microseconds each, which for the work
    arrays of a kernel on these threads can cost as much as the arithmetic. Arrays over
    ``SCRATCH_MAX`` bytes are not kept. The caller must not hand the array out."""
    kept = getattr(_kept, name, None)
    if kept is not None and kept.dtype == dtype and kept.size >= size:
        return kept[:size]
    import numpy as np
    a = np.empty(size, dtype)
    if a.nbytes <= SCRATCH_MAX:
        setattr(_kept, name, a)
    return a


_kept = threading.local()
SCRATCH_MAX = 1 << 23


def _after_fork():
    global _busy, forked
    _busy = threading.Lock()
    forked = True
    _workers.clear()          # their threads do not exist in the child


os.register_at_fork(after_in_child=_after_fork)
