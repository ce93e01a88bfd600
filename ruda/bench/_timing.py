"""Timing of benchmark cases: warm-up, calibration, interleaved repeats, median and min."""
import math
import time

_clock = time.perf_counter


class Entry:
    """One contestant of one case: a zero-argument callable and the device sync to call."""

    __slots__ = ("name", "fn", "sync", "number", "samples", "skip", "first_s")

    def __init__(self, name, fn, sync=None):
        self.name = name
        self.fn = fn
        self.sync = sync
        self.number = 1
        self.samples = []
        self.skip = None
        self.first_s = None

    def sample(self, number):
        fn, sync = self.fn, self.sync
        if sync is not None:
            sync()
        t0 = _clock()
        for _ in range(number):
            fn()
        if sync is not None:
            sync()
        return _clock() - t0


def run_case(entries, *, repeat, min_time, max_call_s, warmup=1):
    """Time every entry of one case, interleaving them round by round.

    Each entry is warmed up (``warmup`` calls, then one timed call), calibrated so that a
    sample of ``number`` calls lasts at least ``min_time`` seconds, then sampled ``repeat``
    times in rotating order.  An entry whose single call exceeds ``max_call_s`` keeps that one
    measurement (``number`` 1, one sample) rather than holding up the run.
    """
    live = []
    for e in entries:
        try:
            for _ in range(warmup):
                e.sample(1)
            t1 = e.sample(1)
        except Exception as exc:  # noqa: BLE001 - reported as a skip with its reason
            e.skip = f"{type(exc).__name__}: {exc}"[:300]
            continue
        e.first_s = t1
        if t1 > max_call_s:
            e.samples = [t1]
            continue
        e.number = max(1, min(1_000_000, math.ceil(min_time / max(t1, 1e-7))))
        live.append(e)
    for r in range(repeat):
        k = r % len(live) if live else 0
        for e in live[k:] + live[:k]:
            try:
                e.samples.append(e.sample(e.number) / e.number)
            except Exception as exc:  # noqa: BLE001
                e.skip = f"{type(exc).__name__}: {exc}"[:300]
                e.samples = []
        live = [e for e in live if e.skip is None]
    return entries


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return math.nan
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
