"""The wgpu backend's timers for the runtime tuner (``ruda.runtime.tune``).

A timer is the tuner's ``Timer`` interface: ``measure(fn, number) -> seconds``, the total
device time of ``number`` back-to-back calls of ``fn``.
"""
import numpy as np
import wgpu

from ruda.runtime.tune import HostTimer


class WgpuTimestampTimer:
    """WebGPU timestamp queries written at the beginning and end of each compute pass.

    The candidate's callable must accept a keyword ``timestamp_writes`` (default None)
    and pass it to ``command_encoder.begin_compute_pass(timestamp_writes=...)`` of the
    pass to be timed; with ``timestamp_writes=None`` it runs untimed.  Needs a device
    created with the ``"timestamp-query"`` feature.  Timestamps are nanoseconds
    (WebGPU spec); ``period_ns`` rescales for implementations that report ticks.
    """

    def __init__(self, device, period_ns=1.0):
        self.device = device
        self.period_ns = period_ns

    @staticmethod
    def supported(device):
        return "timestamp-query" in set(device.features)

    def measure(self, fn, number):
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
        ts = np.frombuffer(raw, dtype=np.uint64).astype(np.float64)
        qs.destroy()
        resolve.destroy()
        total = float((ts[1::2] - ts[0::2]).sum())
        return total * self.period_ns * 1e-9


def tuning_timer(device, sync):
    """The timer the tuner uses on a wgpu device: timestamp queries where the device has the
    ``"timestamp-query"`` feature (the candidate takes ``timestamp_writes=``), else the host
    clock around ``sync()`` (the device's wait-for-idle)."""
    if WgpuTimestampTimer.supported(device):
        return WgpuTimestampTimer(device)
    return HostTimer(sync=sync)


def candidate_run(ctx, pipe, bind_group, groups, result):
    """A tuning candidate's callable: one dispatch of ``pipe`` in a pass of its own, submitted at
    once, with the timestamp writes the timer passes (if any); returns ``result``."""
    def run(timestamp_writes=None):
        enc = ctx.device.create_command_encoder()
        cp = enc.begin_compute_pass(timestamp_writes=timestamp_writes)
        cp.set_pipeline(pipe)
        cp.set_bind_group(0, bind_group, [0])
        cp.dispatch_workgroups(*groups)
        cp.end()
        ctx.queue.submit([enc.finish()])
        return result
    return run
