"""Large host-memory copies split over threads (NumPy's copyto drops the GIL), for the
backends' staging paths: cuda uploads through pinned buffers, wgpu readbacks out of mapped ones."""
import os

import numpy as np

from ruda.backends._workers import THREADS
SPLIT = 4 << 20        # bytes each thread takes at least
_pool = None


def start(dst, src):
    """Start ``dst[:] = src`` (1-D uint8 views of one size): on up to THREADS threads when each
    gets at least SPLIT bytes, else done here.  Returns the futures to wait for."""
    global _pool
    n = src.size
    parts = min(THREADS, n // SPLIT)
    if parts <= 1:
        np.copyto(dst, src)
        return ()
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor
        _pool = ThreadPoolExecutor(THREADS, thread_name_prefix="ruda-host-copy")
    step = -(-n // parts)
    return [_pool.submit(np.copyto, dst[a:a + step], src[a:a + step]) for a in range(0, n, step)]


def _after_fork():
    global _pool
    _pool = None          # its threads do not exist in a forked child


os.register_at_fork(after_in_child=_after_fork)


def join(jobs):
    """Wait for every job of ``start`` (their errors stay in the futures), through a
    KeyboardInterrupt too: it is raised once no thread still touches the buffers."""
    if not jobs:
        return
    from concurrent.futures import wait
    stop = None
    while True:
        try:
            wait(jobs)
            break
        except KeyboardInterrupt as e:
            stop = e
    if stop is not None:
        raise stop


def copy(dst, src):
    """``dst[:] = src``, threaded as in ``start``; a thread's error is raised here."""
    jobs = start(dst, src)
    join(jobs)
    for j in jobs:
        j.result()
