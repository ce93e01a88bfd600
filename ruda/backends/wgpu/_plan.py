"""Plans: an op called again on operands of the same dtypes, shapes, strides and offsets
launches the same kernels with the same metadata, so its first call is recorded and later calls
replay the prepared launches with new buffers, skipping broadcasting, collapsing, kernel
selection and packing.

While a call is recorded (a :class:`Recording` is the queue's ``capture``), every buffer a launch
binds has a declared role: an input of the call (by position), a buffer the backend keeps (the
reductions' counter, bound as it is), or memory the call took through ``_new`` (``OUT``: an
array it may return) or ``_temp`` (``TEMP``).  A call that moved data (an upload, a copy, a
readback: the queue spoils the recording), bound a buffer of no declared role, returned
something that is not one of its ``OUT`` arrays, or got aliased inputs, leaves no plan.  Kernel
choice inside a planned op must depend on the operand views only (and on the thresholds the
plan key holds: ``_base.VEC4_MIN``, which tests lower).
"""
import warnings

from ruda.backends.wgpu import _base
from ruda.backends.wgpu._array import WArray
from ruda.backends.wgpu._base import OUT, TEMP

PLANS = 4096        # plans kept per device
_INPUT, _KEPT = 0, 2


def _out_array(st, shape, strides, dtype, irdt, _alloc=object.__new__):
    """A new WArray at offset 0 without __init__'s dtype lookup (the replay path)."""
    a = _alloc(WArray)
    a.st, a.shape, a.strides, a.offset, a.dtype, a.ir = st, shape, strides, 0, dtype, irdt
    return a


class Recording:
    """The launches of one op call and the role of every buffer it may bind."""

    __slots__ = ("launches", "roles", "spoiled", "aliased")

    def __init__(self, inputs, kept=()):
        self.launches = []          # (Launch, storages), as the queue recorded them
        self.roles = {}             # id(storage) -> (role, input index or the storage)
        self.spoiled = False
        self.aliased = len(set(map(id, inputs))) < len(inputs)
        for s in kept:
            self.roles[id(s)] = (_KEPT, s)
        for i, s in enumerate(inputs):
            self.roles[id(s)] = (_INPUT, i)

    def take(self, st, role):
        """``st`` was taken by the call as ``role`` (OUT or TEMP)."""
        self.roles[id(st)] = (role, st)

    def merge_into(self, outer):
        """A nested call's launches and memory belong to the enclosing call too."""
        outer.launches.extend(self.launches)
        outer.spoiled |= self.spoiled
        for k, r in self.roles.items():
            if r[0] in (OUT, TEMP):
                outer.roles.setdefault(k, r)

    def program(self, out):
        """(sizes, program, output slot, roles): each launch with its buffers as (0, input
        index), (1, new buffer index) or (2, kept storage); False when not replayable."""
        if self.spoiled or self.aliased or not self.launches:
            return False
        slots, sizes, roles, program = {}, [], [], []
        for lau, used in self.launches:
            refs = []
            for s in used:
                ref = slots.get(id(s))
                if ref is None:
                    r = self.roles.get(id(s))
                    if r is None:
                        return False                # memory the call neither got nor took
                    if r[0] == _INPUT:
                        ref = (0, r[1])
                    elif r[0] == _KEPT:
                        ref = (2, s)
                    else:
                        ref = (1, len(sizes))
                        sizes.append(s.nbytes)
                        roles.append(r[0])
                    slots[id(s)] = ref
                refs.append(ref)
            program.append((lau, tuple(refs)))
        oi = slots.get(id(out.st))
        if oi is None or oi[0] != 1 or roles[oi[1]] != OUT:
            return False
        return tuple(sizes), tuple(program), oi[1], tuple(roles)


class Plans:
    """Recording and replaying plans (mixin of the backend; plans are kept per device, in the
    queue's ``plans``)."""

    def _recorded(self, rec, run):
        """``run()`` with ``rec`` as the queue's capture (nested captures merge outward)."""
        ctx = self.ctx
        prev, ctx.capture = ctx.capture, rec
        try:
            return run()
        finally:
            ctx.capture = prev
            if prev is not None:
                rec.merge_into(prev)

    def _remember(self, pkey, plan):
        plans = self.ctx.plans
        if len(plans) >= PLANS:
            plans.clear()
        plans[pkey] = plan

    # a whole call recorded and replayed on the same memory (the contract's "recording")
    records = True

    def capture(self, fn):
        """``fn()`` run, then recorded (every launch with its buffers, all kept alive) and
        returned as ``(replay, out)``: ``replay()`` records those launches again on the same
        buffers, without the ops layer.  NotImplemented, with a RuntimeWarning, when the
        recorded call moved data (an upload, a copy or a readback cannot be replayed)."""
        fn()
        rec = Recording(())
        out = self._recorded(rec, fn)
        if rec.spoiled:
            warnings.warn("ruda: wgpu: capture: the call moved data (an upload, a copy or a "
                          "readback), which a recording cannot replay; it runs unrecorded",
                          RuntimeWarning, stacklevel=3)
            return NotImplemented
        ctx, program = self.ctx, tuple(rec.launches)

        def replay():
            for lau, storages in program:
                ctx.replay(lau, storages)
        return replay, out

    # one launch, inputs then the output bound (elementwise ops, copies): the fast form
    def _replayed(self, pkey, sts):
        """The output of the one-launch plan under ``pkey`` replayed on input buffers ``sts``;
        None without one."""
        ctx = self.ctx
        plan = ctx.plans.get(pkey)
        if not plan or plan[0] != _base.VEC4_MIN:
            return None
        _, shape, strides, dtype, irdt, nbytes, lau = plan
        st = ctx.alloc(nbytes)
        if ctx.capture is not None:
            ctx.capture.take(st, OUT)
        ctx.replay(lau, (*sts, st))
        return _out_array(st, shape, strides, dtype, irdt)

    def _planned(self, pkey, inputs, run):
        """``run()`` (one elementwise launch over ``inputs``), remembering its plan under
        ``pkey`` when it can replay."""
        if self.ctx.plans.get(pkey, True) is False:     # known not to be replayable
            return run()
        sts = [a.st for a in inputs]
        rec = Recording(sts)
        out = self._recorded(rec, run)
        plan = False
        # bindings are positional (input i, then the output), so aliased inputs replay alike
        if (not rec.spoiled and out.offset == 0 and len(rec.launches) == 1
                and rec.roles.get(id(out.st), (None,))[0] == OUT):
            lau, used = rec.launches[0]
            if len(used) == len(sts) + 1 and all(a is b for a, b in zip(used, sts + [out.st])):
                plan = (_base.VEC4_MIN, out.shape, out.strides, out.dtype, out.ir, out.st.nbytes, lau)
        self._remember(pkey, plan)
        return out

    # several launches with temporaries (reductions: partials, then their fold)
    def _replayed_multi(self, pkey, ins):
        ctx = self.ctx
        plan = ctx.plans.get(pkey)
        if not plan:
            return None
        sizes, program, oi, roles, shape, strides, offset, dtype, irdt = plan
        new = [ctx.alloc(n) for n in sizes]
        cap = ctx.capture
        if cap is not None:
            for st, role in zip(new, roles):
                cap.take(st, role)
        srcs = ([a.st for a in ins], new)
        for lau, refs in program:     # list comprehensions: cheaper than generators here
            ctx.replay(lau, tuple([i if k == 2 else srcs[k][i] for k, i in refs]))
        out = _out_array(new[oi], shape, strides, dtype, irdt)
        out.offset = offset
        return out

    def _planned_multi(self, pkey, ins, run, kept=()):
        """``run()``, remembering a plan of its launches under ``pkey`` when one can replay it;
        ``kept``: storages of the backend the launches bind as they are."""
        if self.ctx.plans.get(pkey, True) is False:
            return run()
        rec = Recording([a.st for a in ins], kept)
        out = self._recorded(rec, run)
        if rec.aliased:
            return out      # aliased inputs say nothing of which buffer each launch reads
        prog = rec.program(out)
        self._remember(pkey, prog and prog + (out.shape, out.strides, out.offset, out.dtype, out.ir))
        return out
