"""Timers: how the tuner measures a candidate on the device at hand.

The tuner knows no device.  It asks the caller -- the backend -- for a timer, an object with
the ``Timer`` interface below; each device backend provides its own in its ``_timer`` module
(``tuning_timer(...)``: CUDA events on cuda, timestamp queries or the host clock on wgpu).
Host-clock timers, which need no device library, live here.
"""
import time
from typing import Callable, Protocol, runtime_checkable


@runtime_checkable
class Timer(Protocol):
    """``measure(fn, number)`` runs ``fn()`` ``number`` times back to back and returns the
    *total* device time they took, in seconds."""

    def measure(self, fn: Callable, number: int) -> float: ...


def check_timer(timer, where="ruda.runtime.tune.Tuner"):
    """``timer`` if it has the ``Timer`` interface, else TypeError naming what came."""
    if not callable(getattr(timer, "measure", None)):
        raise TypeError(f"{where}: timer must have a measure(fn, number) -> seconds method "
                        f"(a backend's tuning_timer()), got {type(timer).__name__}")
    return timer


class HostTimer:
    """Host clock around ``number`` calls, with ``sync()`` before starting and before stopping.

    ``sync`` is the device's wait-for-idle (``backend.synchronize``); omit it for
    synchronous (host) work.
    """

    def __init__(self, sync=None, clock=time.perf_counter):
        self.sync = sync
        self.clock = clock

    def measure(self, fn, number):
        sync = self.sync
        if sync is not None:
            sync()
        t0 = self.clock()
        for _ in range(number):
            fn()
        if sync is not None:
            sync()
        return self.clock() - t0


class CallableTimer:
    """Adapt a plain function ``measure(fn, number) -> seconds`` to the timer protocol."""

    def __init__(self, measure):
        self.measure = measure
