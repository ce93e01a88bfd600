"""The cuda backend's timer for the runtime tuner (``ruda.runtime.tune``): CUDA events.

A timer is the tuner's ``Timer`` interface: ``measure(fn, number) -> seconds``, the total
device time of ``number`` back-to-back calls of ``fn``.
"""


class CudaEventTimer:
    """CUDA events recorded on ``stream`` (default: CuPy's current stream) around the calls."""

    def __init__(self, stream=None):
        import cupy
        self._cp = cupy
        self.stream = stream

    def measure(self, fn, number):
        cp = self._cp
        stream = self.stream if self.stream is not None else cp.cuda.get_current_stream()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(number):
            fn()
        end.record(stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e-3


def tuning_timer(stream=None):
    """The timer the tuner uses on cuda: events on ``stream`` (CuPy's current one if None)."""
    return CudaEventTimer(stream)
