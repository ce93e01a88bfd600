"""Batch iteration: order (shuffle, shard), background prefetch, device placement."""
import queue
import threading

import numpy as np

import ruda as xp

_FN = "ruda.data.Dataset.batches"
_DONE = object()
GROUP_BYTES = 8 << 20      # the prefetch thread hands over batches in groups of about this size


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


def _check(batch_size, shard, prefetch, device, shuffle, seed):
    def is_int(v):
        return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
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
    return None if device is None else xp.device(device)


def iterate(ds, batch_size, shuffle, seed, drop_last, device, shard, prefetch):
    device = _check(batch_size, shard, prefetch, device, shuffle, seed)
    batches = plan(len(ds), batch_size, shuffle, seed, drop_last, shard)
    reader = ds._reader
    if prefetch:
        return _convert(ds, _prefetched(reader, batches, prefetch), device)
    return _convert(ds, (reader.take(b) for b in batches), device)


def _convert(ds, host_batches, device):
    try:
        for host in host_batches:
            yield ds._arrays(host, device)
    finally:
        host_batches.close()          # stops the prefetch thread now, not at garbage collection


def _nbytes(host):
    return sum(a.nbytes if isinstance(a, np.ndarray) else sum(x.nbytes for x in a) for a in host)


def _fill(reader, batches, put):
    """Read the batches and put them in groups; False if the consumer stopped listening."""
    group, size = [], 0
    for b in batches:
        group.append(reader.take(b))
        size += _nbytes(group[-1])
        if size >= GROUP_BYTES:
            if not put(group):
                return False
            group, size = [], 0
    return not group or put(group)


def _prefetched(main, batches, depth):
    """Host batches read by a background thread, up to ``depth`` groups ahead (handing over
    groups rather than single batches keeps thread switches rare)."""
    reader = main.worker()
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
        try:
            outcome = _DONE if _fill(reader, batches, put) else None
        except BaseException as e:  # handed to the consumer
            outcome = e
        finally:
            main.release(reader)    # before the consumer hears of the end and asks again
        if outcome is not None:
            put(outcome)

    thread = threading.Thread(target=work, name="ruda.data prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                raise item
            yield from item
    finally:
        stop.set()
        thread.join()
