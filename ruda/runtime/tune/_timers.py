"""Timers: how the tuner measures a candidate on the device at hand.

A timer is any object with ``measure(fn, number) -> seconds``: it runs ``fn()``
``number`` times back to back and returns the *total* device time they took.
The backend chooses the timer; the tuner only calls ``measure``.
"""
import time


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


class WgpuTimestampTimer:
    """WebGPU timestamp queries written at the beginning and end of each compute pass.

    The candidate's callable must accept a keyword ``timestamp_writes`` (default None)
    and pass it to ``command_encoder.begin_compute_pass(timestamp_writes=...)`` of the
    pass to be timed; with ``timestamp_writes=None`` it runs untimed.  Needs a device
    created with the ``"timestamp-query"`` feature.  Timestamps are nanoseconds
    (WebGPU spec); ``period_ns`` rescales for implementations that report ticks.
    """

    def __init__(self, device, period_ns=1.0):
        import wgpu
        self._wgpu = wgpu
        self.device = device
        self.period_ns = period_ns

    @staticmethod
    def supported(device):
        return "timestamp-query" in set(device.features)

    def measure(self, fn, number):
        wgpu = self._wgpu
        dev = self.device
        count = 2 * number
        qs = dev.create_query_set(type=wgpu.QueryType.timestamp, count=count)
        for i in range(number):
            fn(timestamp_writes={"query_set": qs, "beginning_of_pass_write_index": 2 * i,
                                 "end_of_pass_write_index": 2 * i + 1})
        size = 8 * count
        resolve = dev.create_buffer(size=size, usage=wgpu.BufferUsage.QUERY_RESOLVE
                                    | wgpu.BufferUsage.COPY_SRC)
        enc = dev.create_command_encoder()
        enc.resolve_query_set(qs, 0, count, resolve, 0)
        dev.queue.submit([enc.finish()])
        raw = dev.queue.read_buffer(resolve)
        import numpy as np
        ts = np.frombuffer(raw, dtype=np.uint64).astype(np.float64)
        qs.destroy()
        resolve.destroy()
        total = float((ts[1::2] - ts[0::2]).sum())
        return total * self.period_ns * 1e-9


class CallableTimer:
    """Adapt a plain function ``measure(fn, number) -> seconds`` to the timer protocol."""

    def __init__(self, measure):
        self.measure = measure
