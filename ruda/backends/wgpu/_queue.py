"""The command queue of one wgpu device: pipelines, launches, recording and submission.

It owns the device's :class:`~ruda.backends.wgpu._alloc.Allocator` and
:class:`~ruda.backends.wgpu._transfers.Transfers`, and every kernel goes through it: IR kernels
(``prepare``/``launch``) and generated WGSL (``raw_pipeline``/``launch_raw``: matmul) share the
pipeline cache, the metadata arena and the bind-group cache.

Batching: dispatches are recorded into one open command encoder (one compute pass) and
submitted only when the host needs a result (readback, ``synchronize``), when the metadata
arena is full, after FLUSH_EVERY dispatches, or at once for a launch over EAGER_ELEMS elements
(one that repeats the one before is also finished ahead into a command buffer of its own,
submitted as is if the next call repeats it again: ``_eager``).  After a submit the next
encoder is opened while the device works.  The arena is content-addressed and outlives submits:
a dispatch whose metadata words were seen before binds their slot, so a loop of same-shaped ops
writes no metadata at all (each ``queue.write_buffer`` costs wgpu a staging buffer).

Interrupts (a KeyboardInterrupt, which Python raises in whatever code runs next): a flush
interrupted before it takes the encoder leaves the work recorded for the next one (the arena's
new slots are written again: the same words); once taken, a failed finish or submit drops the
work (a refused dispatch does too), and the arrays it was to write then raise when read or used
(``_lose``), never give what their buffers held before.  The encoder and its pass are made
together, so an interrupt between them leaves no half-open pair.
"""
import itertools
import math
import operator
import warnings

import numpy as np

from ruda.backends.wgpu._alloc import Allocator, Batch
from ruda.backends.wgpu._transfers import Transfers
from ruda.runtime import packing
from ruda.runtime.cache import ProgramCache

FLUSH_EVERY = 256
EAGER_ELEMS = 1 << 26   # a launch over this many elements is submitted at once (the device starts it
                        # while the host records on; a submit is small beside its run)
ARENA_BYTES = 1 << 20
BIND_GROUP_CACHE = 4096

_epochs = itertools.count(1)     # arena generations, unique across queues
_buffer_of = operator.attrgetter("buffer")


class Launch:
    """One prepared dispatch: pipeline, metadata words and workgroups, replayable as is.

    ``epoch``/``at``: the arena slot its words were last written to; while the arena keeps
    that generation (same epoch) a replay binds that slot again without looking it up.
    """

    __slots__ = ("pipe", "bgl", "words", "need", "groups", "gy", "gz", "outs", "eager", "bg_key",
                 "epoch", "at")

    def __init__(self, pipe, bgl, words, need, groups, outs, eager=False, gy=1, gz=1):
        self.pipe = pipe
        self.bgl = bgl
        self.words = words
        self.need = need
        self.groups = groups        # workgroups along x (0: nothing to run)
        self.gy, self.gz = gy, gz
        self.outs = outs            # indices of the storages it writes
        self.eager = eager          # submitted as soon as recorded (EAGER_ELEMS)
        self.bg_key = (id(bgl), need)
        self.epoch = 0
        self.at = 0


class Queue:
    """Everything that records and submits work on one :class:`~ruda.backends.wgpu._device.Device`."""

    def __init__(self, dev):
        wgpu = dev.wgpu
        self.dev = dev
        self.wgpu = wgpu
        self.adapter = dev.adapter
        self.device = dev.device
        self.features = dev.features
        self.limits = dev.limits
        self.max_binding = dev.max_binding
        self.max_buffer = dev.max_buffer
        self.renderer = dev.renderer
        self.nat = dev.nat
        self.queue = self.device.queue
        self.cache = ProgramCache(self.renderer, self._compile)
        self.layouts = {}        # storage writability per binding -> bind group layout
        self.raw = {}            # generator key -> (pipeline, layout): generated WGSL (matmul)
        U = wgpu.BufferUsage
        self.stats = {"dispatches": 0, "submits": 0, "uploads": 0, "readbacks": 0, "copies": 0}
        self.mem = Allocator(self.device, self.queue, self.max_binding, U.STORAGE | U.COPY_SRC | U.COPY_DST,
                             self._drop_all, self._uploaded)
        self.alloc = self.mem.alloc
        self.upload = self.mem.upload
        self.xfer = Transfers(self)
        self.read = self.xfer.read
        self.read_through = self.xfer.read_through
        self.align_words = max(16, int(self.limits.get("min-uniform-buffer-offset-alignment", 256))) // 4
        self.arena_buf = self.device.create_buffer(size=ARENA_BYTES, usage=U.UNIFORM | U.COPY_DST)
        self.arena = np.zeros(ARENA_BYTES // 4, np.uint32)
        self.arena_used = 0
        self.arena_written = 0      # words below this are on the device
        self.slots = {}             # metadata bytes -> arena word offset (this generation)
        self.epoch = next(_epochs)
        self.bind_groups = {}
        self.scalars = {}           # the backend's cached operand scalars
        self.ext = {}               # per-device state of kernel families (matmul's choices, tuners)
        self.plans = {}             # the ops layer's replayable plans (_plan.py)
        self.capture = None         # the plan being recorded (_plan.Recording), if any
        self.enc = None
        self.cpass = None
        self.last_pipe = None
        self.last_bind = None
        self.last_at = -1
        self.ndispatch = 0
        self._native = (*self.nat.calls, self.nat.offsets) if self.nat is not None else None
        self._cp_h = None
        self.recorded = False    # work recorded since the last submit
        self.spec = None         # (call, command buffer) finished ahead: see _eager
        self.last_eager = None
        self.writes = 0          # writes to unnamed storages so far: host copies older are void
        self.batch = Batch()     # marks the outputs of what is recorded until the next submit
        self.lost = False        # some batch's work was dropped: launches check their inputs

    def note(self, what):
        """Count a transfer (``uploads``, ``copies``, ``readbacks``); a plan being recorded
        cannot replay a call that moved data."""
        self.stats[what] += 1
        if self.capture is not None:
            self.capture.spoiled = True

    def _uploaded(self):
        self.note("uploads")

    def _drop_all(self):
        """Submit recorded work and drop what holds pooled buffers (allocation failed)."""
        self.flush()
        self.drop_speculation()
        self.bind_groups.clear()

    def empty_cache(self):
        """Release the device memory kept for reuse: the pooled buffers (those freed since the
        last submit included: recorded work is submitted first) and the readback staging
        buffers.  Arrays keep theirs; later allocations make buffers again."""
        self._drop_all()
        self.mem.trim(0)
        self.xfer.release()

    def memory_stats(self):
        """Bytes of device memory held: ``in_use`` by arrays (and buffers freed since the last
        submit), ``pooled`` for reuse, ``staging`` for readbacks."""
        mem = self.mem
        pooled = sum(b.size for bufs in mem.pool.values() for b in bufs)
        return {"in_use": sum(b.size for b in mem.live.values()) - pooled, "pooled": pooled,
                "staging": self.xfer.nbytes()}

    # ------------------------------------------------------------------ compile
    def _layout(self, writable):
        """Bind group layout: the metadata uniform (dynamic offset), then one storage buffer each;
        one per binding signature, so kernels of the same signature share bind groups."""
        writable = tuple(writable)
        bgl = self.layouts.get(writable)
        if bgl is None:
            bgl = self.layouts[writable] = self._new_layout(writable)
        return bgl

    def _new_layout(self, writable):
        wgpu = self.wgpu
        B = wgpu.ShaderStage.COMPUTE
        T = wgpu.BufferBindingType
        entries = [{"binding": 0, "visibility": B, "buffer": {"type": T.uniform, "has_dynamic_offset": True}}]
        for i, w in enumerate(writable):
            entries.append({"binding": i + 1, "visibility": B,
                            "buffer": {"type": T.storage if w else T.read_only_storage}})
        return self.device.create_bind_group_layout(entries=entries)

    def _build(self, name, source, writable):
        dev = self.device
        bgl = self._layout(writable)
        layout = dev.create_pipeline_layout(bind_group_layouts=[bgl])
        try:
            module = dev.create_shader_module(code=source)
            pipe = dev.create_compute_pipeline(layout=layout, compute={"module": module, "entry_point": "main"})
        except Exception as e:
            raise RuntimeError(f"ruda wgpu: kernel {name!r} failed to compile: {e}\n"
                               f"--- WGSL ---\n{source}") from None
        return pipe, bgl

    def _compile(self, prog):
        return self._build(prog.kernel.name, prog.source, [a.writable for a in prog.kernel.args])

    def program(self, kernel):
        """(program, (pipeline, layout)) of an IR kernel.  Where the adapter lists subgroups but
        its compiler refuses a kernel using them, the renderer stops using them (one warning)
        and the kernel is rendered again: the workgroup folds take shared memory from then on."""
        try:
            return self.cache.get(kernel)
        except RuntimeError as e:
            r = self.renderer
            if not (r.subgroup and "failed to compile" in str(e) and "subgroup" in str(e)):
                raise
            warnings.warn(f"ruda wgpu: subgroup operations did not compile; using shared memory ({e})",
                          RuntimeWarning, stacklevel=3)
            r.subgroup = False
            return self.cache.get(kernel)

    def raw_pipeline(self, key, make_source, writable, name):
        """(pipeline, layout) of generated WGSL (``make_source()``), cached per ``key`` and, like
        IR programs, per source."""
        hit = self.raw.get(key)
        if hit is None:
            src = make_source()
            hit = self.cache.compiled.get(src)
            if hit is None:
                hit = self.cache.compiled[src] = self._build(name, src, writable)
            self.raw[key] = hit
        return hit

    # ------------------------------------------------------------------ launches
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
        prog, (pipe, bgl) = self.program(kernel)
        lay = prog.layout
        words = packing.pack(kernel, shape, views, params, extras, lay=lay)
        return Launch(pipe, bgl, words, -(-lay.words // 4) * 4, prog.grid(words), prog.outs,
                      math.prod(shape) >= EAGER_ELEMS)

    def launch(self, kernel, storages, views, shape, params=(), extras=None):
        """Record one dispatch of ``kernel`` over ``shape`` with buffers ``storages``."""
        self.replay(self.prepare(kernel, views, shape, params, extras), storages)

    def launch_raw(self, pipe, bgl, words, storages, groups, outs):
        """Record one dispatch of a ``raw_pipeline`` (metadata ``words``, workgroups (x, y, z))."""
        gx, gy, gz = groups
        self.replay(Launch(pipe, bgl, words, -(-words.size // 4) * 4, gx, outs, gy=gy, gz=gz), storages)

    def replay(self, lau, storages):
        """Record ``lau`` again with buffers ``storages`` (its words bound in place when they are
        already in the arena).  A plan being recorded sees it."""
        if self.capture is not None:
            self.capture.launches.append((lau, storages))
        if not lau.groups:
            return
        if self.lost:
            self._check_inputs(lau, storages)
        batch = self.batch
        for i in lau.outs:
            storages[i].host = batch
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
            self._dispatch(lau.pipe, bg, lau.at, lau.groups, lau.gy, lau.gz)

    def _check_inputs(self, lau, storages):
        """Raise if an input of ``lau`` was to be written by work that was dropped."""
        for i, st in enumerate(storages):
            if st.host.__class__ is Batch and i not in lau.outs:
                st.host.check("an operand")

    def _lose(self, err, batch=None):
        """The work of ``batch`` (default: what is recorded now, and a new batch begins) is gone:
        its submit failed or was interrupted.  The storages it was to write raise when read or
        used as inputs."""
        if batch is None:
            batch, self.batch = self.batch, Batch()
        said = str(err).strip().split("\n", 1)[0]
        batch.lost = f"{type(err).__name__}: {said}" if said else type(err).__name__
        self.lost = True

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

    # ------------------------------------------------------------------ speculation
    def _eager(self, pipe, bg, at, gx):
        """Record a large launch and submit at once (the device starts it while the host records
        on).  A launch that repeats the one before it exactly, with nothing recorded between, is
        submitted as a command buffer finished ahead (``_speculate``): only the submit is left
        on its critical path, not the pass end and the finish.  With work recorded before it, it
        is recorded with that work and the buffer kept for later."""
        call = (pipe, bg, at, gx, self.epoch)
        spec = self.spec
        if spec is not None:
            if spec[0] != call:
                self.spec = None
                self.nat.ffi.release(spec[1])
            elif not self.recorded:
                fresh = Batch()
                self.spec, batch, self.batch = None, self.batch, fresh
                try:
                    self.nat.submit_buffer(spec[1])
                except BaseException as e:
                    self._lose(e, batch)
                    raise
                self.stats["dispatches"] += 1
                self.stats["submits"] += 1
                self.mem.recycle()
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

    # ------------------------------------------------------------------ recording
    def _pass(self):
        """Open a compute pass (and an encoder, if none is open).  Both are made first and
        assigned together: interrupted between, a new encoder is dropped whole, and an open one
        that a pass may now lock is given up (its work lost: ``_lose``)."""
        enc = self.enc
        try:
            if enc is None:
                enc = self.device.create_command_encoder()
            cp = enc.begin_compute_pass()
            h = getattr(cp, "_internal", None)      # None: the public API
        except BaseException as e:
            if self.enc is not None:
                if self.recorded:
                    self._lose(e)
                self.enc, self.recorded, self.ndispatch = None, False, 0
                self.mem.recycle()
            raise
        self.enc, self.cpass, self._cp_h = enc, cp, h
        return cp

    def _end_pass(self):
        if self.cpass is not None:
            cp, self.cpass, self._cp_h, self.last_pipe, self.last_bind = self.cpass, None, None, None, None
            cp.end()

    def record(self, pipe, bg, at, gx, gy=1, gz=1):
        """Record one dispatch into the open compute pass: metadata at arena word ``at``.  Which
        storages it writes is unknown here: every host copy (read_through) is void after it, and
        a plan being recorded cannot replay it."""
        self.writes += 1
        if self.capture is not None:
            self.capture.spoiled = True
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
        self.note("copies")

    # ------------------------------------------------------------------ submission
    def flush(self):
        """Submit recorded work (metadata first), then open the next encoder and pass while the
        device runs it, so their cost leaves the next call's critical path.  Interrupted before
        it takes the encoder, everything stays recorded for the next flush; after, a failed
        finish or submit drops the work (``_lose``)."""
        if not self.recorded:
            self.mem.recycle()
            return
        lo, hi = self.arena_written, self.arena_used
        if hi > lo:                         # only the slots added since the last submit
            self.queue.write_buffer(self.arena_buf, lo * 4, self.arena[lo:hi])
            self.arena_written = hi
        # the encoder and its batch are taken (plain stores: nothing can interrupt them); a failed
        # submit must not leave a finished encoder open; cp keeps the pass alive until submitted
        fresh = Batch()
        nat, enc, cp, h, batch = self.nat, self.enc, self.cpass, self._cp_h, self.batch
        last = (self.last_pipe, self.last_bind, self.last_at)
        self.enc, self.cpass, self._cp_h, self.last_pipe, self.last_bind = None, None, None, None, None
        self.recorded, self.ndispatch, self.batch = False, 0, fresh
        try:
            if nat is not None:
                nat.submit(enc, h)          # ends the pass (h: None when none is open)
            else:
                if cp is not None:
                    cp.end()
                self.queue.submit([enc.finish()])
            self.stats["submits"] += 1
        except BaseException as e:
            self._lose(e, batch)
            raise
        finally:
            self.mem.recycle()
        del cp
        self._pass()
        if last[1] is not None and self._native is not None and self._cp_h is not None:
            # the next pass starts with the last pipeline and bind group bound, while the device
            # runs: an op repeated after a submit records only its dispatch; a compute pass's
            # usage scope is each dispatch's own bindings, so a group bound and replaced unused
            # constrains nothing
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
