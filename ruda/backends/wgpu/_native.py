"""wgpu-native entry points called without wgpu-py's per-call wrappers: compute-pass calls, the
finish and submit of an encoder (apart: a command buffer can be finished ahead of its submit),
the wait for submitted work, and the mapping of staging buffers.

wgpu-py waits for a map or for submitted work on a threading.Event that its polling thread sets:
two thread wake-ups per wait, a cost paid on every readback.  Here the calling thread
polls the device itself: on a GPU it spins on non-blocking polls for up to SPIN_S (the way CUDA's
default synchronization spins), then blocks; on a CPU adapter (lavapipe), where a spinning
thread takes a core from the "GPU", it blocks at once.

``native(ctx)`` is None where this wgpu-py lacks the internals (another version): the caller
uses the public API then.  Errors inside a pass are reported by wgpu-native when the pass ends
and the encoder finishes; both run under wgpu-py's error capture (its proxies' mechanism, one
capture for the two) and the submit through its proxy, so a refused command still raises.

A KeyboardInterrupt that lands in a callback (the signal handler runs in whatever Python code
comes next, often the callback that the blocking poll calls) would be printed and dropped by
cffi, the callback's count lost with it: ``interrupted`` counts the callback and keeps the
interrupt, which the wait raises once the poll returns.
"""
import time

from ruda.runtime import env

SPIN_S = 2e-3


class Native:
    __slots__ = ("lib", "ffi", "dev", "queue", "spin", "calls", "offsets", "done", "status", "stop",
                 "mapped", "_work", "_map", "_keep", "_submit", "_cb_desc", "_cbs", "_errors",
                 "_error_types")

    def __init__(self, api, error_types, device, spin):
        lib, ffi = api.lib, api.ffi
        self.lib, self.ffi = lib, ffi
        self.dev = device._internal
        self.queue = device.queue._internal
        self.spin = spin
        self.calls = (lib.wgpuComputePassEncoderSetPipeline, lib.wgpuComputePassEncoderSetBindGroup,
                      lib.wgpuComputePassEncoderDispatchWorkgroups)
        self.offsets = ffi.new("uint32_t[1]")
        # the submit through wgpu-py's error-raising proxy, the pass end and finish under one
        # capture of the same error handler (see ``submit``); no wrapper objects
        self._submit = api.libf.wgpuQueueSubmit
        self._errors = api.error_handler
        self._error_types = error_types
        self._cb_desc = ffi.new("WGPUCommandBufferDescriptor *")
        self._cbs = ffi.new("WGPUCommandBuffer[1]")
        self.done = 0                 # work-done and map callbacks fired so far
        self.status = None            # the last callback's status when it was not success
        self.stop = None              # a KeyboardInterrupt raised inside a callback, to raise
        self.mapped = {}              # id -> staging buffer mapped, or its map pending
        self._work = ffi.new("WGPUQueueWorkDoneCallbackInfo *")
        self._map = ffi.new("WGPUBufferMapCallbackInfo *")

        def on(ok):
            def fired(status, *_):
                self.status = None if status == ok else status
                self.done += 1
            return fired

        def interrupted(kind, value, tb):
            # the signal handler ran before the callback's first line: it fired all the same
            self.stop = value
            self.status = None
            self.done += 1
        self._keep = []               # the cdata callbacks must outlive every call
        for info, ok in ((self._work, lib.WGPUQueueWorkDoneStatus_Success),
                         (self._map, lib.WGPUMapAsyncStatus_Success)):
            cb = ffi.callback(ffi.typeof(info.callback), on(ok), onerror=interrupted)
            self._keep.append(cb)
            info.mode = lib.WGPUCallbackMode_AllowProcessEvents
            info.callback = cb

    def _until(self, want, what):
        """Poll until ``want`` callbacks have fired; raise if the last one failed."""
        poll, dev, ffi = self.lib.wgpuDevicePoll, self.dev, self.ffi
        if self.spin:
            end = time.perf_counter() + SPIN_S
            while self.done < want and time.perf_counter() < end:
                poll(dev, False, ffi.NULL)
        for _ in range(1000):
            if self.done >= want:
                break
            poll(dev, True, ffi.NULL)
        else:
            raise RuntimeError(f"ruda wgpu: {what} never completed (device lost?)")
        if self.stop is not None:
            stop, self.stop = self.stop, None
            raise stop
        if self.status is not None:
            raise RuntimeError(f"ruda wgpu: {what} failed with status {self.status}")

    def finish(self, encoder, cpass=None):
        """End the compute pass ``cpass`` (a handle; None: already ended) and finish ``encoder``:
        its command buffer, released when dropped (``submit_buffer`` releases it at once).  The
        end and the finish run under one capture of wgpu-py's error handler, which raises what
        either reported, as its proxies do (one proxy each would add its own capture to a
        submit's critical path)."""
        lib, errors = self.lib, self._errors
        errors.capture("wgpuCommandEncoderFinish")
        try:
            if cpass is not None:
                lib.wgpuComputePassEncoderEnd(cpass)
            cb = lib.wgpuCommandEncoderFinish(encoder._internal, self._cb_desc)
        finally:
            err = errors.release("wgpuCommandEncoderFinish")
        if err is not None:
            lib.wgpuCommandBufferRelease(cb)
            raise self._error_types.get(err[0], self._error_types[""])(err[1])
        return self.ffi.gc(cb, lib.wgpuCommandBufferRelease)

    def submit_buffer(self, cb):
        """Submit the command buffer ``cb`` (from ``finish``) and release it."""
        try:
            self._cbs[0] = cb
            self._submit(self.queue, 1, self._cbs)
        finally:
            self.ffi.release(cb)

    def submit(self, encoder, cpass=None):
        """``finish`` then ``submit_buffer``."""
        self.submit_buffer(self.finish(encoder, cpass))

    def wait(self):
        """Return when all submitted work is done."""
        want = self.done + 1
        self.lib.wgpuQueueOnSubmittedWorkDone(self.queue, self._work[0])
        self._until(want, "the queue's submitted work")

    def map_read(self, buffer, size):
        """Map ``size`` bytes of the MAP_READ ``buffer`` (its work already waited for): a buffer
        object over the mapping, valid until ``unmap``."""
        h = buffer._internal
        want = self.done + 1
        self.mapped[id(buffer)] = buffer        # noted just before the call: no interrupt between
        self.lib.wgpuBufferMapAsync(h, self.lib.WGPUMapMode_Read, 0, size, self._map[0])
        self._until(want, "mapping a staging buffer")
        ptr = self.lib.wgpuBufferGetConstMappedRange(h, 0, size)
        if ptr == self.ffi.NULL:
            raise RuntimeError("ruda wgpu: a mapped staging buffer gave no range")
        return self.ffi.buffer(ptr, size)

    def unmap(self, buffer):
        """Unmap ``buffer`` if ``map_read`` mapped it (a pending map is cancelled); else nothing
        (wgpu reports unmapping an unmapped buffer as an error)."""
        key, h = id(buffer), buffer._internal
        if key in self.mapped:          # no call between the test and the unmap: no interrupt
            del self.mapped[key]
            self.lib.wgpuBufferUnmap(h)


def native(device, adapter_type):
    """A :class:`Native` for ``device``, or None where this wgpu-py's internals differ."""
    if not hasattr(device, "_internal"):
        return None
    mode = env.text("RUDA_WGPU_WAIT")
    if mode not in (None, "spin", "block"):
        raise env.invalid("RUDA_WGPU_WAIT", mode, "spin or block")
    spin = mode == "spin" or (mode != "block" and adapter_type != "CPU")
    try:
        from wgpu.backends.wgpu_native import _api
        from wgpu.backends.wgpu_native._helpers import ERROR_TYPES
        return Native(_api, ERROR_TYPES, device, spin)
    except Exception:  # noqa: BLE001 - any other wgpu-py layout
        return None
