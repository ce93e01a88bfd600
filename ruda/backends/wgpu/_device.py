"""One WebGPU device: adapter, features and limits, buffer pool, batched command recording,
metadata arena, upload and readback.

Batching: dispatches are recorded into one open command encoder (one compute pass) and
submitted only when the host needs a result (readback, ``synchronize``), when the
metadata arena is full, after ``FLUSH_EVERY`` dispatches, or at once for a launch over
``EAGER_ELEMS`` elements (one that repeats the one before is also finished ahead into a command
buffer of its own, submitted as is if the next call repeats it again: ``_eager``).  After a
submit the next encoder is opened while the device works.  The arena is content-addressed
and outlives submits: a dispatch whose metadata words were seen before binds their slot, so a
loop of same-shaped ops writes no metadata at all (each ``queue.write_buffer`` costs wgpu a
staging buffer: ~0.1 ms per submit on an H200).  Freed buffers return to the
pool only at a submit, so a buffer still referenced by recorded work is never handed out
and overwritten by a queued upload.
"""
import itertools
import math
import operator
import os
import weakref

import numpy as np

from ruda.backends import _hostcopy
from ruda.backends.wgpu._native import native
from ruda.runtime import packing
from ruda.runtime.cache import ProgramCache
from ruda.runtime.wgsl import WGSLRenderer

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")   # silences Mesa's warning on headless hosts

FLUSH_EVERY = 256
EAGER_ELEMS = 1 << 26   # a launch over this many elements is submitted at once (the device starts it
                        # while the host records on; a submit's ~50 us is small beside its run)
ARENA_BYTES = 1 << 20
READ_CHUNK = 64 << 20
HOST_COPY_MAX = 64 << 10   # storages up to this size are read whole, the copy kept (read_through)
BIND_GROUP_CACHE = 4096
# Optional features ruda uses (wgpu-native spellings), requested when the adapter has them.
WANTED_FEATURES = ("shader-f16", "shader-f64", "shader-int64", "subgroup", "timestamp-query")
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1, "OpenGLES": 1}


def _wgpu():
    import wgpu
    return wgpu


_adapters = None


def _is_gl(adapter):
    return adapter.info.get("backend_type", "").startswith("OpenGL")


def _computes(adapter):
    """The adapter can run ruda's kernels: 256-invocation workgroups with 8 storage buffers."""
    lim = adapter.limits
    return (lim.get("max-compute-invocations-per-workgroup", 0) >= 256
            and lim.get("max-storage-buffers-per-shader-stage", 0) >= 8)


def adapters():
    """Usable adapters, high-performance first; one per physical device (native API over GL)."""
    global _adapters
    if _adapters is None:
        wgpu = _wgpu()
        found = list(wgpu.gpu.enumerate_adapters_sync())
        want = os.environ.get("RUDA_WGPU_BACKEND")
        if want:
            found = [a for a in found if a.info.get("backend_type", "").lower() == want.lower()]
        # OpenGL adapters only where no native one exists: beside Vulkan/Metal/D3D12 they
        # duplicate a native adapter (under another name) and may lack compute shaders
        # (NVIDIA's GL adapter failed every pipeline on an H200)
        if any(not _is_gl(a) for a in found):
            found = [a for a in found if not _is_gl(a)]
        found = [a for a in found if _computes(a)]
        rank = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
        found.sort(key=lambda a: (rank.get(a.info.get("adapter_type"), 4),
                                  _BACKEND_RANK.get(a.info.get("backend_type"), 2)))
        seen, out = set(), []
        for a in found:
            ident = (a.info.get("device"), a.info.get("vendor_id"), a.info.get("device_id"))
            if ident in seen:
                continue
            seen.add(ident)
            out.append(a)
        _adapters = out
    return _adapters


_epochs = itertools.count(1)     # arena generations, unique across contexts
_buffer_of = operator.attrgetter("buffer")


class Launch:
    """One prepared dispatch: pipeline, metadata words and workgroups, replayable as is.

    ``epoch``/``at``: the arena slot its words were last written to; while the arena keeps
    that generation (same epoch) a replay binds that slot again without looking it up.
    """

    __slots__ = ("pipe", "bgl", "words", "need", "groups", "outs", "eager", "bg_key", "epoch", "at")

    def __init__(self, pipe, bgl, words, need, groups, outs, eager=False):
        self.pipe = pipe
        self.bgl = bgl
        self.words = words
        self.need = need
        self.groups = groups
        self.outs = outs            # indices of the storages it writes
        self.eager = eager          # submitted as soon as recorded (EAGER_ELEMS)
        self.bg_key = (id(bgl), need)
        self.epoch = 0
        self.at = 0


def _size_class(n):
    n = max(n, 16)
    if n <= 1 << 20:
        return 1 << (n - 1).bit_length()
    return -(-n // (1 << 20)) << 20


class Storage:
    """A pooled wgpu buffer; returned to the pool when the last array using it goes."""

    __slots__ = ("buffer", "nbytes", "ctx", "serial", "host", "__weakref__")

    def __init__(self, ctx, buffer, nbytes):
        self.buffer = buffer
        self.nbytes = nbytes
        self.ctx = ctx
        self.serial = next(ctx.serials)     # creation order (plans tell temporaries by it)
        self.host = None                    # (ctx.writes when read, its bytes): read_through

    def __del__(self):
        try:
            self.ctx._pending_free.append(self.buffer)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _withheld():
    """Features not to request (``RUDA_WGPU_WITHOUT=shader-f64,shader-int64``): a capable
    adapter then stands in for a browser's or OpenGL's, so those paths can be tested."""
    return {f.strip() for f in os.environ.get("RUDA_WGPU_WITHOUT", "").split(",") if f.strip()}


class Context:
    """Everything that belongs to one wgpu device."""

    def __init__(self, adapter):
        wgpu = _wgpu()
        self.wgpu = wgpu
        self.adapter = adapter
        have = set(adapter.features) - _withheld()
        self.features = frozenset(f for f in WANTED_FEATURES if f in have)
        lim = adapter.limits
        want_limits = {k: lim[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                           "max-storage-buffers-per-shader-stage",
                                           "max-compute-workgroup-storage-size",
                                           "max-compute-invocations-per-workgroup",
                                           "max-compute-workgroup-size-x") if k in lim}
        self.device = adapter.request_device_sync(required_features=sorted(self.features),
                                                  required_limits=want_limits)
        self.limits = dict(self.device.limits)
        # whole vec4s: NVIDIA reports 2^31 - 1, and pooled buffers (size classes capped at this)
        # must hold a multiple of 16 bytes for the vec4 kernels
        self.max_binding = int(self.limits["max-storage-buffer-binding-size"]) // 16 * 16
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.queue = self.device.queue
        self.renderer = WGSLRenderer(f16="shader-f16" in self.features, f64="shader-f64" in self.features,
                                     subgroup="subgroup" in self.features,
                                     int64="shader-int64" in self.features)
        self.cache = ProgramCache(self.renderer, self._compile)
        U = wgpu.BufferUsage
        self.usage = U.STORAGE | U.COPY_SRC | U.COPY_DST
        self.align_words = max(16, int(self.limits.get("min-uniform-buffer-offset-alignment", 256))) // 4
        self.arena_buf = self.device.create_buffer(size=ARENA_BYTES, usage=U.UNIFORM | U.COPY_DST)
        self.arena = np.zeros(ARENA_BYTES // 4, np.uint32)
        self.arena_used = 0
        self.arena_written = 0      # words below this are on the device
        self.slots = {}             # metadata bytes -> arena word offset (this generation)
        self.pool = {}
        self.live = {}
        self.bind_groups = {}
        self.scalars = {}
        self._pending_free = []
        self.staging = {}
        self.enc = None
        self.cpass = None
        self.last_pipe = None
        self.last_bind = None
        self.last_at = -1
        self.ndispatch = 0
        self.epoch = next(_epochs)
        self.capture = None      # a list while the ops layer records launches (see _ops plans)
        self.plans = {}          # the ops layer's replayable launches, keyed by op and operand views
        self._sizes = {}
        self.nat = native(self.device, adapter.info.get("adapter_type", ""))
        self._native = (*self.nat.calls, self.nat.offsets) if self.nat is not None else None
        self._cp_h = None
        self.recorded = False    # work recorded since the last submit
        self.spec = None         # (call, command buffer) finished ahead: see _eager
        self.last_eager = None
        self.stats = {"dispatches": 0, "submits": 0, "uploads": 0, "readbacks": 0, "copies": 0}
        self.serials = itertools.count()
        self.writes = 0          # writes to unnamed storages so far: host copies older are void

    # ------------------------------------------------------------------ compile
    def _compile(self, prog):
        wgpu = self.wgpu
        dev = self.device
        B = wgpu.ShaderStage.COMPUTE
        entries = [{"binding": 0, "visibility": B, "buffer": {"type": wgpu.BufferBindingType.uniform,
                                                              "has_dynamic_offset": True}}]
        for i, a in enumerate(prog.kernel.args):
            t = wgpu.BufferBindingType.storage if a.writable else wgpu.BufferBindingType.read_only_storage
            entries.append({"binding": i + 1, "visibility": B, "buffer": {"type": t}})
        bgl = dev.create_bind_group_layout(entries=entries)
        layout = dev.create_pipeline_layout(bind_group_layouts=[bgl])
        try:
            module = dev.create_shader_module(code=prog.source)
            pipe = dev.create_compute_pipeline(layout=layout, compute={"module": module, "entry_point": "main"})
        except Exception as e:
            raise RuntimeError(f"ruda wgpu: kernel {prog.kernel.name!r} failed to compile: {e}\n"
                               f"--- WGSL ---\n{prog.source}") from None
        return pipe, bgl

    # ------------------------------------------------------------------ buffers
    def _size_for(self, nbytes):
        if nbytes > self.max_binding:
            raise MemoryError(f"ruda wgpu: an array of {nbytes} bytes exceeds this adapter's "
                              f"max-storage-buffer-binding-size ({self.max_binding} bytes)")
        size = max(min(_size_class(nbytes), max(self.max_binding, 16)), -(-nbytes // 4) * 4, 16)
        if len(self._sizes) >= 4096:
            self._sizes.clear()
        self._sizes[nbytes] = size
        return size

    def alloc(self, nbytes, upload=False):
        size = self._sizes.get(nbytes) or self._size_for(nbytes)
        # A buffer freed since the last submit may still be read by recorded dispatches: a later
        # dispatch may write it (WebGPU orders dispatches), a queued upload may not (write_buffer
        # runs before the whole command buffer), so uploads take only from the submitted pool.
        hot = None if upload else self._hot(size)
        free = self.pool.get(size)
        if hot is not None:
            buf = hot
        elif free:
            buf = free.pop()
        else:
            try:
                buf = self.device.create_buffer(size=size, usage=self.usage)
            except Exception:
                self.flush()
                self.drop_speculation()
                for bufs in self.pool.values():
                    for b in bufs:
                        self.live.pop(id(b), None)
                self.pool.clear()
                self.bind_groups.clear()
                buf = self.device.create_buffer(size=size, usage=self.usage)
            # every buffer stays reachable from the context, so the cyclic GC never finalizes
            # (releases) a GPUBuffer that a dying Storage is about to return to the pool
            self.live[id(buf)] = buf
        return Storage(self, buf, nbytes)

    def _recycle(self):
        for b in self._pending_free:
            self.pool.setdefault(b.size, []).append(b)
        self._pending_free.clear()

    def _hot(self, size):
        pf = self._pending_free
        if not pf:
            return None
        if pf[-1].size == size:
            return pf.pop()
        for i in range(len(pf) - 2, max(-1, len(pf) - 65), -1):
            if pf[i].size == size:
                return pf.pop(i)
        return None

    def upload(self, host):
        """A new Storage holding the bytes of C-contiguous ``host``."""
        st = self.alloc(host.nbytes, upload=True)
        if host.nbytes:
            data = host if host.nbytes % 4 == 0 else np.concatenate(
                [host.reshape(-1).view(np.uint8), np.zeros(4 - host.nbytes % 4, np.uint8)])
            self.queue.write_buffer(st.buffer, 0, data)
        self.stats["uploads"] += 1
        return st

    # ------------------------------------------------------------------ recording
    def _pass(self):
        if self.enc is None:
            self.enc = self.device.create_command_encoder()
        if self.cpass is None:
            self.cpass = self.enc.begin_compute_pass()
            self._cp_h = getattr(self.cpass, "_internal", None)     # None: the public API
        return self.cpass

    def _end_pass(self):
        if self.cpass is not None:
            cp, self.cpass, self._cp_h, self.last_pipe, self.last_bind = self.cpass, None, None, None, None
            cp.end()

    def put(self, words):
        """The arena word offset holding metadata ``words`` (a uint32 array), added if new."""
        key = words.tobytes()
        at = self.slots.get(key)
        if at is not None:
            return at
        n = words.size
        need = -(-n // 4) * 4
        if self.arena_used + need > self.arena.size:
            # a new generation: recorded work is submitted with its slots, which are then
            # overwritten only by writes queued behind it
            self.flush()
            self.slots.clear()
            self.arena_used = self.arena_written = 0
            self.epoch = next(_epochs)
        at = self.arena_used
        self.arena[at:at + n] = words
        aw = self.align_words
        self.arena_used = at + -(-need // aw) * aw
        self.slots[key] = at
        return at

    def prepare(self, kernel, views, shape, params=(), extras=None):
        """A :class:`Launch` of ``kernel`` over ``shape`` (operand views and params packed)."""
        prog, (pipe, bgl) = self.cache.get(kernel)
        lay = prog.layout
        words = packing.pack(kernel, shape, views, params, extras, lay=lay)
        return Launch(pipe, bgl, words, -(-lay.words // 4) * 4, prog.grid(words), prog.outs,
                      math.prod(shape) >= EAGER_ELEMS)

    def launch(self, kernel, storages, views, shape, params=(), extras=None):
        """Record one dispatch of ``kernel`` over ``shape`` with buffers ``storages``."""
        self.replay(self.prepare(kernel, views, shape, params, extras), storages)

    def replay(self, lau, storages):
        """Record ``lau`` again with buffers ``storages`` (its words bound in place when they are
        already in the arena).  A capture under way (the ops layer's plans) sees it."""
        if self.capture is not None:
            self.capture.append((lau, storages))
        if not lau.groups:
            return
        for i in lau.outs:
            storages[i].host = None
        if lau.epoch != self.epoch:
            lau.at = self.put(lau.words)
            lau.epoch = self.epoch
        # bind groups are cached per (layout, buffers): the metadata slot is a dynamic offset and
        # storage bindings cover whole pooled buffers, so a loop over recycled buffers hits
        key = (lau.bg_key, *map(_buffer_of, storages))
        bg = self.bind_groups.get(key)
        if bg is None:
            bg = self._bind_group(key, lau.bgl, lau.need, storages)
        if lau.eager:
            self._eager(lau.pipe, bg, lau.at, lau.groups)
        else:
            self._dispatch(lau.pipe, bg, lau.at, lau.groups)

    def _eager(self, pipe, bg, at, gx):
        """Record a large launch and submit at once (the device starts it while the host records
        on).  A launch that repeats the one before it exactly, with nothing recorded between, is
        submitted as a command buffer finished ahead (``_speculate``): only the submit is left
        on its critical path (the pass end and the finish are ~10-18 us of an H200 host).  With
        work recorded before it, it is recorded with that work and the buffer kept for later."""
        call = (pipe, bg, at, gx, self.epoch)
        spec = self.spec
        if spec is not None:
            if spec[0] != call:
                self.spec = None
                self.nat.ffi.release(spec[1])
            elif not self.recorded:
                self.spec = None
                self.nat.submit_buffer(spec[1])
                self.stats["dispatches"] += 1
                self.stats["submits"] += 1
                self._recycle()
                self._speculate(call)
                return
        self._dispatch(pipe, bg, at, gx)
        self.flush()
        if call == self.last_eager and self.spec is None:   # a repeat: expect another (a one-off
            self._speculate(call)                           # or an alternation: no more than once)
        self.last_eager = call

    def _speculate(self, call):
        """Finish a command buffer of its own holding ``call`` again (pipeline, bind group,
        metadata slot, workgroups, arena generation) while the device runs the one just
        submitted.  It is valid while those stay the same: a slot's words do not change within
        a generation, and a bind group names its buffers, whatever they now hold."""
        nat, calls = self.nat, self._native
        if nat is None or calls is None:
            return
        pipe, bg, at, gx, _ = call
        enc = self.device.create_command_encoder()
        cp = enc.begin_compute_pass()
        h = cp._internal
        calls[0](h, pipe._internal)
        offs = calls[3]
        offs[0] = at * 4
        calls[1](h, 0, bg._internal, 1, offs)
        calls[2](h, gx, 1, 1)
        try:
            self.spec = (call, nat.finish(enc, h))
        except Exception:  # noqa: BLE001 - recorded for real, the call reports it
            self.spec = None

    def drop_speculation(self):
        """Release a command buffer finished ahead (and the buffers it holds)."""
        spec, self.spec, self.last_eager = self.spec, None, None
        if spec is not None:
            self.nat.ffi.release(spec[1])

    def _bind_group(self, key, bgl, need, storages):
        entries = [{"binding": 0, "resource": {"buffer": self.arena_buf, "offset": 0, "size": need * 4}}]
        for i, st in enumerate(storages):
            entries.append({"binding": i + 1, "resource": {"buffer": st.buffer, "offset": 0,
                                                           "size": st.buffer.size}})
        bg = self.device.create_bind_group(layout=bgl, entries=entries)
        if len(self.bind_groups) >= BIND_GROUP_CACHE:
            self.bind_groups.clear()
        self.bind_groups[key] = bg
        return bg

    def record(self, pipe, bg, at, gx, gy=1, gz=1):
        """Record one dispatch into the open compute pass: metadata at arena word ``at``.  Which
        storages it writes is unknown here: every host copy (read_through) is void after it."""
        self.writes += 1
        self._dispatch(pipe, bg, at, gx, gy, gz)

    def _dispatch(self, pipe, bg, at, gx, gy=1, gz=1):
        """``record`` for a caller that voided the host copies of what it writes.

        The pipeline is set only when it changes, the bind group only when it or its offset
        changes (state persists within a pass)."""
        cp = self.cpass
        if cp is None:
            cp = self._pass()
        nat, h = self._native, self._cp_h
        if nat is not None and h is not None:
            if pipe is not self.last_pipe or self.last_bind is not bg or self.last_at != at:
                self._bind(pipe, bg, at)
            nat[2](h, gx, gy, gz)
        else:
            if pipe is not self.last_pipe:
                cp.set_pipeline(pipe)
                self.last_pipe, self.last_bind = pipe, None
            if self.last_bind is not bg or self.last_at != at:
                cp.set_bind_group(0, bg, [at * 4])
                self.last_bind, self.last_at = bg, at
            cp.dispatch_workgroups(gx, gy, gz)
        self.recorded = True
        self.ndispatch += 1
        self.stats["dispatches"] += 1
        if self.ndispatch >= FLUSH_EVERY:
            self.flush()

    def _bind(self, pipe, bg, at):
        """Set ``pipe`` and ``bg`` (metadata at arena word ``at``) on the open pass, natively, each
        only where it changed."""
        nat, h = self._native, self._cp_h
        if pipe is not self.last_pipe:
            nat[0](h, pipe._internal)
            self.last_pipe, self.last_bind = pipe, None
        if self.last_bind is not bg or self.last_at != at:
            offs = nat[3]
            offs[0] = at * 4
            nat[1](h, 0, bg._internal, 1, offs)
            self.last_bind, self.last_at = bg, at

    def copy(self, src, src_off, dst, dst_off, nbytes, staging=False):
        """Record a buffer-to-buffer copy (byte offsets and size multiples of 4); into a
        ``staging`` buffer, it writes no storage (host copies stay valid)."""
        if nbytes == 0:
            return
        if self.enc is None:
            self.enc = self.device.create_command_encoder()
        self._end_pass()
        self.enc.copy_buffer_to_buffer(src, src_off, dst, dst_off, nbytes)
        self.recorded = True
        self.writes += not staging
        self.stats["copies"] += 1

    def flush(self):
        """Submit recorded work (metadata first), then open the next encoder and pass while the
        device runs it (their ~30 us on an H200 host leave the next call's critical path)."""
        if not self.recorded:
            self._recycle()
            return
        enc, lo, hi = self.enc, self.arena_written, self.arena_used
        self.enc = None                     # a failed submit must not leave a finished encoder open
        self.recorded = False
        self.ndispatch = 0
        self.arena_written = hi
        nat, cp, h = self.nat, self.cpass, self._cp_h
        last = (self.last_pipe, self.last_bind, self.last_at)
        try:
            if nat is None or h is None:
                self._end_pass()
            else:                           # the native submit ends the pass (cp keeps it alive)
                self.cpass, self._cp_h, self.last_pipe, self.last_bind = None, None, None, None
            if hi > lo:                     # only the slots added since the last submit
                self.queue.write_buffer(self.arena_buf, lo * 4, self.arena[lo:hi])
            if nat is not None:
                nat.submit(enc, h)
            else:
                self.queue.submit([enc.finish()])
            self.stats["submits"] += 1
        finally:
            self._recycle()
        self._pass()
        if last[1] is not None and self._native is not None and self._cp_h is not None:
            # the next pass starts with the last pipeline and bind group bound, while the device
            # runs: an op repeated after a submit records only its dispatch (two native calls
            # fewer on its critical path); a compute pass's usage scope is each dispatch's own
            # bindings, so a group bound and replaced unused constrains nothing
            self._bind(*last)

    def wait(self):
        """Return when all submitted work is done."""
        if self.nat is not None:
            self.nat.wait()
        elif hasattr(self.device, "_poll_wait"):     # wgpu-py 0.32's on_submitted_work_done
            self.device._poll_wait()                # declares the callback wrongly
        else:
            self.queue.on_submitted_work_done_sync()

    def synchronize(self):
        self.flush()
        self.wait()

    # ------------------------------------------------------------------ readback
    def _staging(self, size, slot):
        key = (size, slot)
        b = self.staging.get(key)
        if b is None:
            U = self.wgpu.BufferUsage
            b = self.staging[key] = self.device.create_buffer(size=size, usage=U.MAP_READ | U.COPY_DST)
        return b

    def read_through(self, st, byte_off, nbytes, out):
        """``read``, but a storage of at most HOST_COPY_MAX bytes is read whole and its host copy
        kept until the device next records a write to it (a launch naming it as an output, or a
        write it cannot name: ``record``, a copy into a non-staging buffer): reading a small
        array element by element then costs one readback, not one each (a submit and a map:
        ~3 ms on lavapipe, ~0.1 ms on NVIDIA)."""
        if st.nbytes > HOST_COPY_MAX:
            return self.read(st, byte_off, nbytes, out)
        held = st.host
        if held is None or held[0] != self.writes:
            whole = np.empty(st.nbytes, np.uint8)
            self.read(st, 0, st.nbytes, whole)
            st.host = held = (self.writes, whole)
        out[:] = held[1][byte_off:byte_off + nbytes]

    def _map(self, sb, n4):
        """The first ``n4`` bytes of staging buffer ``sb``, mapped once the device is done."""
        if self.nat is not None:
            self.nat.wait()
            return self.nat.map_read(sb, n4)
        sb.map_sync(self.wgpu.MapMode.READ, 0, n4)
        try:
            return sb.read_mapped(0, n4, copy=False)
        except BaseException:
            sb.unmap()
            raise

    def _unmap(self, sb):
        if self.nat is not None:
            self.nat.unmap(sb)
        else:
            sb.unmap()

    def read(self, st, byte_off, nbytes, out):
        """Copy ``nbytes`` from ``st`` at ``byte_off`` into the uint8 view ``out``.

        In READ_CHUNK pieces through two staging buffers: while the host copies piece *i* out of
        its mapped staging buffer (threaded when large: ``ruda.backends._hostcopy``), the
        device copies piece *i+1* into the other one and the main thread maps it.  A map waits
        for the device's last submission, so piece *i+1* is submitted only after piece *i* is
        mapped: the wait covers exactly its own copy."""
        self.stats["readbacks"] += 1
        if nbytes == 0:
            self.flush()
            return
        chunk = min(READ_CHUNK, -(-nbytes // 4) * 4)
        nchunks = -(-nbytes // chunk)
        size = _size_class(chunk)

        def issue(i):
            lo = i * chunk
            n = min(chunk, nbytes - lo)
            n4 = -(-n // 4) * 4
            sb = self._staging(size, i % 2)
            self.copy(st.buffer, byte_off + lo, sb, 0, n4, staging=True)
            self.flush()
            return sb, lo, n, np.frombuffer(self._map(sb, n4), np.uint8, n)

        cur = issue(0)
        for i in range(nchunks):
            sb, lo, n, src = cur
            jobs = ()
            try:
                jobs = _hostcopy.start(out[lo:lo + n], src)
                cur = issue(i + 1) if i + 1 < nchunks else None
            finally:
                _hostcopy.join(jobs)        # no thread may still read the mapping when it goes
                self._unmap(sb)
            for j in jobs:
                j.result()                  # a copy's error, if any
