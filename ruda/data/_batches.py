"""Batch iteration: order (shuffle, shard), background prefetch, device placement."""
import collections
import itertools
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import ruda as xp
from ruda.data import _reader

_FN = "ruda.data.Dataset.batches"
GROUP_BYTES = 8 << 20      # the prefetch thread hands over batches in groups of about this size
_END = object()
WINDOW_BYTES = 1 << 30     # default bytes of records that a shuffled read gathers at once
PICK_THREADS_FROM = 1 << 18  # batches of at least this many bytes are picked by threads
PICK_BYTES = 4 << 20       # bytes of batches that a picking thread takes at a time


def plan(n, batch_size, shuffle, seed, drop_last, shard):
    """The index arrays of the batches, in order."""
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    full = len(order)
    if shard is not None:
        rank, world = shard
        order = order[rank * n // world:(rank + 1) * n // world]
        full = n // world               # the shortest rank's share: same batch count on all
    stop = full - full % batch_size if drop_last else len(order)
    return [order[i:i + batch_size] for i in range(0, stop, batch_size)]


def windows(batches, record_bytes, window):
    """Consecutive groups of ``batches`` of at most about ``window`` bytes of records each
    (at least one batch), as equal in size as whole batches allow."""
    total = sum(len(b) for b in batches)
    count = max(1, -(-total // max(1, int(window // record_bytes))))
    per = max(1, -(-len(batches) // count))
    return [batches[i:i + per] for i in range(0, len(batches), per)]


def read(reader, batches, window):
    """Host batches in order.  With a ``window`` (shuffled batches), they are read a window
    at a time: the window's records (a run of the permutation covering many batches) are
    gathered into one buffer grouped by chunk, each chunk it touches read whole once, and
    each batch is then picked from that buffer with NumPy fancy indexing, as from a memory
    map.  The buffer serves every window and is kept for the next epoch; batches are
    copies, never views of it."""
    if not window:
        for b in batches:
            yield reader.take(b)
        return
    groups = windows(batches, reader.record_bytes(), window)
    limit = max([int(window // reader.record_bytes())] + [sum(map(len, g)) for g in groups])
    room = reader.room()
    try:
        for group in groups:
            buffers, rows = reader.window(np.concatenate(group), room, limit)
            yield from _picked(reader, buffers, rows, [len(b) for b in group])
    finally:
        reader.unroom(room)


def _picked(reader, buffers, rows, sizes):
    """The batches of ``sizes`` records at ``rows`` of ``buffers``, in order.  Large ones
    are picked by READERS threads (NumPy's take runs without the GIL), a few batches of
    about PICK_BYTES per task, at most two tasks per thread ahead of the consumer."""
    bounds = np.cumsum([0] + sizes).tolist()

    def task(i, outs):
        return [reader.pick(buffers, rows[bounds[j]:bounds[j + 1]], out)
                for j, out in zip(range(i, min(i + per, len(sizes))), outs)]

    def submit(i):
        # the batches' memory comes from this thread: memory that a picking thread allocates
        # and the consumer frees goes back to that thread's heap, which returns it to the OS,
        # so every batch would fault in fresh pages
        return pool.submit(task, i, [reader.empty(sizes[j])
                                     for j in range(i, min(i + per, len(sizes)))])
    batch_bytes = reader.record_bytes() * max(sizes)
    if _reader.READERS < 2 or batch_bytes < PICK_THREADS_FROM or len(sizes) < 2:
        for j in range(len(sizes)):
            yield reader.pick(buffers, rows[bounds[j]:bounds[j + 1]])
        return
    per = max(1, int(PICK_BYTES // batch_bytes))
    starts = iter(range(0, len(sizes), per))
    threads = _reader.READERS
    with ThreadPoolExecutor(threads, thread_name_prefix="ruda.data picker") as pool:
        pending = collections.deque(submit(i) for i in itertools.islice(starts, 2 * threads))
        try:
            while pending:
                done = pending.popleft().result()
                for i in itertools.islice(starts, 1):
                    pending.append(submit(i))
                yield from done
        finally:
            for f in pending:
                f.cancel()


def _check(batch_size, shard, prefetch, device, shuffle, seed, drop_last, window):
    def is_int(v):
        return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
    for name, flag in (("shuffle", shuffle), ("drop_last", drop_last)):
        if not isinstance(flag, bool | np.bool_):
            raise TypeError(f"{_FN}: expected {name} as a bool; got {flag!r}")
    if seed is not None and (not is_int(seed) or seed < 0):
        raise ValueError(f"{_FN}: expected seed as a non-negative int or None; got {seed!r}")
    if not is_int(batch_size) or batch_size < 1:
        raise ValueError(f"{_FN}: expected batch_size as a positive int; got {batch_size!r}")
    if shard is not None and not (isinstance(shard, tuple | list) and len(shard) == 2 and
                                  all(map(is_int, shard)) and 0 <= shard[0] < shard[1]):
        raise ValueError(f"{_FN}: expected shard as (rank, world_size) with 0 <= rank < "
                         f"world_size; got {shard!r}")
    if shard is not None and shuffle and seed is None:
        raise ValueError(f"{_FN}: shuffle with shard=(rank, world_size) needs a seed shared by "
                         f"every rank (otherwise ranks draw different orders); got seed=None")
    if not is_int(prefetch) or prefetch < 0:
        raise ValueError(f"{_FN}: expected prefetch as a non-negative int; got {prefetch!r}")
    if window is not None and (not is_int(window) or window < 1):
        raise ValueError(f"{_FN}: expected window as a positive int (bytes) or None; got "
                         f"{window!r}")
    return None if device is None else xp.device(device)


def iterate(ds, batch_size, shuffle, seed, drop_last, device, shard, prefetch, window):
    device = _check(batch_size, shard, prefetch, device, shuffle, seed, drop_last, window)
    batches = plan(len(ds), batch_size, shuffle, seed, drop_last, shard)
    window = (WINDOW_BYTES if window is None else window) if shuffle else None
    reader = ds._reader
    if prefetch:
        return _convert(ds, _prefetched(reader, batches, window, prefetch), device)
    return _convert(ds, read(reader, batches, window), device)


def _convert(ds, host_batches, device):
    try:
        for host in host_batches:
            if ds.closed:             # batches read ahead (or cached) are not served either
                raise ValueError(f"ruda.data: {ds.path}: the dataset was closed while its "
                                 f"batches were read")
            yield ds._arrays(host, device)
    finally:
        host_batches.close()          # stops the prefetch thread now, not at garbage collection


def _nbytes(host):
    return sum(a.nbytes if isinstance(a, np.ndarray) else sum(x.nbytes for x in a) for a in host)


def _groups(host_batches):
    """The host batches in lists of about GROUP_BYTES."""
    group, size = [], 0
    for b in host_batches:
        group.append(b)
        size += _nbytes(b)
        if size >= GROUP_BYTES:
            yield group
            group, size = [], 0
    if group:
        yield group


def background(items, depth, name):
    """The items of generator ``items``, produced by a thread of that ``name`` up to ``depth``
    items ahead.  Its errors reach the consumer; closing this generator stops the thread
    (``items`` is closed there, so its own cleanup runs before the consumer hears the end)."""
    q = queue.Queue(depth)
    stop = threading.Event()

    def put(item):
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def work():
        outcome = _END
        try:
            for item in items:
                if not put(item):
                    break
        except BaseException as e:  # handed to the consumer
            outcome = e
        finally:
            items.close()
        put(outcome)

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def _prefetched(main, batches, window, depth):
    """Host batches read by a background thread, up to ``depth`` groups ahead (handing over
    groups rather than single batches keeps thread switches rare)."""
    def produce():
        reader = main.worker()
        try:
            for group in _groups(read(reader, batches, window)):
                if main.closed:
                    raise ValueError(f"ruda.data: {main.parts[0].store.path}: the dataset was "
                                     f"closed while its batches were read")
                yield group
        finally:
            main.release(reader)    # before the consumer hears of the end and asks again
    groups = background(produce(), depth, "ruda.data prefetch")
    try:
        for group in groups:
            yield from group
    finally:
        groups.close()
