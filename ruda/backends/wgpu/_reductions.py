"""Reductions and scans of the wgpu backend.

``_reduce`` folds ``value(loads...)`` over any axes: one invocation per output element for many
outputs or short reductions (``serial``), else a workgroup per output (split over several
workgroups and folded again when the outputs are few and the reductions long).  Full
reductions of one unit-stride 4-byte operand from ``_base.VEC4_MIN`` elements take the vec4
kernel: up to ``_base.RED_PARTS`` workgroups fold blocks of ``_base.RED_BLOCK`` elements round
robin; with a 32-bit accumulator the last workgroup to finish folds the partials (atomics and a
device counter, the backend's ``counter``), else a second reduction does.  On a CPU adapter no
invocation loops past ``RED_CPU_MAX_STEPS`` (``_cpu_choice``).  Reductions replay plans of their
launches (``_plan``), their partials declared as temporaries.
"""
import functools
import operator

import math

import numpy as np

from ruda import _dtypes
from ruda.backends.wgpu import _base, _half
from ruda.backends.wgpu._array import (IR, basic_index, broadcast_strides, collapse,
                                       contiguous_strides, permute)
from ruda.backends.wgpu._base import _K, I, np_of
from ruda.runtime import ir
from ruda.runtime.wgsl import MAX_GROUPS, WG

_view_key = operator.attrgetter("ir", "shape", "strides", "offset")   # an operand's part of a plan key
# A scan kernel walks each row with one workgroup, about ten loop iterations per 256 elements;
# lavapipe ends a shader invocation after 65,535 loop iterations in all (llvmpipe's loop
# limiter) and the rest of the row silently stays unwritten, so longer rows scan in blocks.
SCAN_ROW = 1 << 18
# The limiter ends reduction invocations too: on a CPU adapter no reduction kernel runs whose
# invocations would loop more than this many times (``_red_steps``; 4x short of the limit), so
# longer serial reductions (one invocation per output) take a workgroup per output, and longer
# ones than that split into parts -- index reductions too: each part's best value and its
# index, then the first best part's index.  The vec4 kernel stays far below it (at most
# R / (RED_PARTS * RED_BLOCK) steps, 1024 for 2**32 elements).  GPUs have no such limit, and
# there the serial kernel is the fast, coalesced one for column reductions: their choice stays.
RED_CPU_MAX_STEPS = 1 << 14


def _red_steps(serial, nout, nsplit, chunk):
    """Loop iterations of one invocation of a reduction over ``nout`` outputs in ``nsplit``
    parts of ``chunk`` elements (wgsl_main's serial_reduce_main and reduce_main)."""
    if serial:      # outputs grid-stride over at most MAX_GROUPS workgroups; each walks its chunk
        return -(-nout // (MAX_GROUPS * WG)) * (chunk + 1)
    # workgroups take the nout * nsplit jobs round robin: chunk / WG steps each, then one of
    # the job loop and log2(WG) of the workgroup's tree
    return -(-(nout * nsplit) // MAX_GROUPS) * (-(-chunk // WG) + WG.bit_length())


def _cpu_choice(serial, split, nsplit, nout, R):
    """(serial, split, nsplit) on a CPU adapter: the given choice where every invocation stays
    within RED_CPU_MAX_STEPS, else a workgroup per output, else enough parts."""
    if serial and _red_steps(True, nout, 1, R) <= RED_CPU_MAX_STEPS:
        return serial, split, nsplit
    if _red_steps(False, nout, nsplit, -(-R // nsplit)) <= RED_CPU_MAX_STEPS:
        return False, split, nsplit
    per = (RED_CPU_MAX_STEPS - WG.bit_length()) * WG      # elements a part may take
    return False, True, max(nsplit, -(-R // per))


def _part_coords(c, loads, ps):
    """Coordinates (output, part) of each output's best part (an index reduction's split)."""
    return [c[0], ir.cast(loads[0], I)]


class ReductionOps:
    """Reductions, scans and ``diff`` (mixin of the backend)."""

    def _reduce(self, x, axes, op, acc, out_dtype, keepdims, value=None, extra=(), index_out=False,
                key=None):
        """Reduce ``value(load x, loads extra...)`` (cast to ``acc``) over ``axes`` with ``op``;
        replayed from a plan when called again on the same views (``value`` named by ``key``).
        No closure here: its cells would be made on every call, replayed ones included."""
        if value is not None and key is None:
            return self._reduce_run(x, axes, op, acc, out_dtype, keepdims, value, extra, index_out, key)
        ins = (x, *extra)
        pkey = ("reduce", op, acc, np.dtype(out_dtype), keepdims, tuple(axes), index_out, key, _base.VEC4_MIN,
                _base.RED_PARTS, RED_CPU_MAX_STEPS, self.ctx.renderer.subgroup, *map(_view_key, ins))
        return self._replayed_multi(pkey, ins) or self._planned_multi(pkey, ins, functools.partial(
            self._reduce_run, x, axes, op, acc, out_dtype, keepdims, value, extra, index_out, key),
            (self.counter.st,))

    def _reduce_run(self, x, axes, op, acc, out_dtype, keepdims, value, extra, index_out, key):
        nd = x.ndim
        axes = tuple(sorted(axes))
        outer = [d for d in range(nd) if d not in axes]
        oshape = tuple(x.shape[d] for d in outer)
        kshape = tuple(1 if d in axes else x.shape[d] for d in range(nd)) if keepdims else oshape
        out = self._new(oshape, out_dtype)
        iout = self._new(oshape, self._index_dtype()) if index_out else None
        R = math.prod(x.shape[d] for d in axes)
        if out.size == 0:
            return self._finish_reduce(out, iout, kshape)
        if R == 0:
            ident = {"sum": 0, "prod": 1, "all": True, "any": False}[op]
            out = self.full(oshape, ident, out_dtype)
            return self._finish_reduce(out, iout, kshape)
        ins = [x] + list(extra)
        full_shape = x.shape
        # per-operand strides over (outer..., reduced...)
        sts = [broadcast_strides(a, full_shape) for a in ins]
        osh, ost = collapse(oshape, [[s[d] for d in outer] for s in sts])
        rsh, rst = collapse(tuple(x.shape[d] for d in axes), [[s[d] for d in axes] for s in sts])
        if not osh:
            osh, ost = (1,), [(0,) for _ in ins]
        if not rsh:
            rsh, rst = (1,), [(0,) for _ in ins]
        k_out, k_red = len(osh), len(rsh)
        shape = osh + rsh
        in_sts = [o + r for o, r in zip(ost, rst)]
        nout = math.prod(osh)
        # bool accumulators (all/any) stay generic: their vec4 fold answered all() wrongly on
        # NVIDIA's Vulkan driver (n = 3), likely the workgroup array<bool> fault fixed since
        # (wgsl.py sv_type) but not re-tested there, and no target needs them fast
        if nout == 1 and not index_out and R >= _base.VEC4_MIN and len(rsh) == 1 and acc != "bool":
            mask = self._vec4_mask(ins, rst)
            if mask is not None and mask[0]:
                out = self._reduce_vec4(ins, rst, mask, R, op, acc, out, value, key)
                return self._finish_reduce(out, None, kshape)
        serial = nout >= 256 or R <= 64
        split = not serial and not index_out and R >= 16384 and nout < 64
        nsplit = min(max(1, R // 8192), 2048) if split else 1
        if self._cpu_adapter():         # lavapipe's loop limiter (RED_CPU_MAX_STEPS)
            serial, split, nsplit = _cpu_choice(serial, split, nsplit, nout, R)
        dts = tuple(a.ir for a in ins)
        kkey = ("reduce", key or op, dts, acc, out.ir, k_out, k_red, serial, split, index_out)
        k = _K.get(kkey)
        if k is None:
            loads = [ir.load(i, dt) for i, dt in enumerate(dts)]
            v = value(*loads) if value is not None else loads[0]
            v = ir.cast(v, acc)
            n_in = len(ins)
            args = tuple(ir.Arg(f"x{i}", dt, k_out + k_red) for i, dt in enumerate(dts))
            if split:
                args += (ir.Arg("part", acc, 0, True),)
            else:
                args += (ir.Arg("out", out.ir, k_out, True),)
            if index_out:       # split: each part's index (over the whole reduction)
                args += (ir.Arg("idx", iout.ir, 0 if split else k_out, True),)
            body = ir.Reduce(op, v, n_in, k_out, n_in + 1 if index_out else None, split)
            k = _K[kkey] = ir.Kernel(f"reduce_{op}", args, (), k_out + k_red, body,
                                     (("serial", True),) if serial else ())
        if split:
            part = self._temp((nout * nsplit,), np_of(acc))
            parts = [part, self._temp((nout * nsplit,), iout.dtype)] if index_out else [part]
            chunk = -(-R // nsplit)
            self._launch(k, ins + parts, in_sts + [()] * len(parts), shape,
                         extras={"nsplit": nsplit, "chunk": chunk})
            pv = part.view((nout, nsplit), (nsplit, 1), 0)
            if index_out:
                # the first best part (ties and NaN: the earliest, which holds the earliest
                # index) gives its index
                best = self._reduce(pv, (1,), op, acc, out_dtype, False, index_out=True)
                res = self._gather_coords(parts[1].view((nout, nsplit), (nsplit, 1), 0), (nout,),
                                          _part_coords, ("argpart",), extra=[best])
            else:
                comb = {"sum": "sum", "prod": "prod", "max": "max", "min": "min", "all": "all", "any": "any"}[op]
                res = self._reduce(pv, (1,), comb, acc, out_dtype, False)
            out = res.view(oshape, contiguous_strides(oshape), res.offset)
            return self._finish_reduce(out, None, kshape)
        osts = [contiguous_strides(osh)]
        if index_out:
            osts.append(contiguous_strides(osh))
        self._launch(k, ins + [out] + ([iout] if index_out else []), in_sts + osts, shape)
        return self._finish_reduce(out, iout, kshape)

    def _cpu_adapter(self):
        """Whether the adapter is a CPU (lavapipe, whose loop limiter RED_CPU_MAX_STEPS and the nn
        kernels' limits work around)."""
        cpu = self.__dict__.get("_cpu")
        if cpu is None:
            info = self.ctx.adapter.info
            cpu = self.__dict__["_cpu"] = str(info.get("adapter_type", "")).upper() == "CPU"
        return cpu

    def _reduce_vec4(self, ins, rst, mask, R, op, acc, out, value, key):
        """Full reduction of 1-D vec4 operands (``_vec4_mask``): up to _base.RED_PARTS workgroups each
        fold every _base.RED_PARTS-th block into one partial, then one small reduction of the partials."""
        dts = tuple(a.ir for a in ins)
        nsplit = max(1, min(_base.RED_PARTS, -(-R // _base.RED_BLOCK)))
        chunk = -(-R // nsplit)           # not read by the kernel (the generic split's parameter)
        final = nsplit == 1 and out.ir == acc
        # one pass where the accumulator is 32-bit (atomics): the last workgroup folds the partials
        finish = not final and out.ir == acc and acc in ("f32", "i32", "u32") and _base.SINGLE_PASS
        kkey = ("reduce_v4", key or op, dts, acc, mask, finish)
        k = _K.get(kkey)
        if k is None:
            loads = [ir.load(i, dt) for i, dt in enumerate(dts)]
            v = ir.cast(value(*loads) if value is not None else loads[0], acc)
            args = tuple(ir.Arg(f"x{i}", dt, 1) for i, dt in enumerate(dts)) + (ir.Arg("part", acc, 0, True),)
            if finish:
                args += (ir.Arg("out", acc, 0, True), ir.Arg("count", "u32", 0, True))
            body = ir.Reduce(op, v, len(ins), 0, None, True, (len(ins) + 1, len(ins) + 2) if finish else None)
            k = _K[kkey] = ir.Kernel(f"reduce_{op}_v4", args, (), 1, body,
                                     (("vec4", mask + (False,) * (3 if finish else 1)),))
        part = out if final else self._temp((nsplit,), np_of(acc))
        arrays = ins + [part] + ([out, self.counter] if finish else [])
        views = [tuple(s) for s in rst] + [()] * (3 if finish else 1)
        self._launch(k, arrays, views, (R,), extras={"nsplit": nsplit, "chunk": chunk})
        if final or finish:
            return out
        return self._reduce(part, (0,), op, acc, out.dtype, False)

    def _finish_reduce(self, out, iout, kshape):
        r = iout if iout is not None else out
        return r.view(kshape, contiguous_strides(kshape), r.offset)

    def sum(self, x, axis, dtype, keepdims=False):
        if x.dtype in _half.HALVES or dtype in _half.HALVES:
            return _half.reduction(self, ReductionOps.sum, x, axis, dtype, keepdims)
        acc = IR[np.dtype(dtype)]
        return self._reduce(x, axis, "sum", acc, dtype, keepdims)

    def prod(self, x, axis, dtype, keepdims=False):
        if x.dtype in _half.HALVES or dtype in _half.HALVES:
            return _half.reduction(self, ReductionOps.prod, x, axis, dtype, keepdims)
        acc = IR[np.dtype(dtype)]
        return self._reduce(x, axis, "prod", acc, dtype, keepdims)

    sum.routes_halves = prod.routes_halves = True     # _half.guards leaves them as they are

    def max(self, x, axis, keepdims=False):
        return self._reduce(x, axis, "max", x.ir, x.dtype, keepdims)

    def min(self, x, axis, keepdims=False):
        return self._reduce(x, axis, "min", x.ir, x.dtype, keepdims)

    def all(self, x, axis, keepdims=False):
        return self._reduce(x, axis, "all", "bool", _dtypes.bool, keepdims, key="all")

    def any(self, x, axis, keepdims=False):
        return self._reduce(x, axis, "any", "bool", _dtypes.bool, keepdims, key="any")

    def count_nonzero(self, x, axis, keepdims=False):
        idt = self._index_dtype()
        return self._reduce(x, axis, "sum", IR[idt], idt, keepdims,
                            value=lambda a: ir.cast(ir.cast(a, "bool"), IR[idt]), key="count_nonzero")

    def mean(self, x, axis, keepdims=False):
        R = math.prod(x.shape[d] for d in axis)
        if R == 0:     # 0 / 0: NaN in both parts of a complex mean, as NumPy
            nan = complex(math.nan, math.nan) if x.dtype.kind == "c" else math.nan
            return self.full(tuple(1 if d in axis else n for d, n in enumerate(x.shape)) if keepdims else
                             tuple(n for d, n in enumerate(x.shape) if d not in axis), nan, x.dtype)
        s = self._reduce(x, axis, "sum", x.ir, x.dtype, keepdims)
        return self._scale(s, 1.0 / R)

    def _scale(self, s, factor):
        rdt = ir.real_of(s.ir)
        return self._map(("scale",), lambda a, f: ir.op("mul", a, ir.cast(f, s.ir)), [s], s.dtype,
                         params=(factor,), param_dtypes=(rdt,))

    def var(self, x, axis, correction=0.0, keepdims=False):
        R = math.prod(x.shape[d] for d in axis)
        m = self.mean(x, axis, keepdims=True)
        sq = self._reduce(x, axis, "sum", x.ir, x.dtype, keepdims,
                          value=lambda a, mm: ir.op("square", ir.op("sub", a, mm)), extra=[m], key="var")
        div = R - correction
        return self._scale(sq, (1.0 / div) if div > 0 else float("nan") if div == 0 else 1.0 / div)

    def std(self, x, axis, correction=0.0, keepdims=False):
        return self.sqrt(self.var(x, axis, correction, keepdims))

    def _argreduce(self, x, axis, keepdims, op):
        if axis is None:
            axes = tuple(range(x.ndim))
            r = self._reduce(x, axes, op, x.ir, x.dtype, False, index_out=True)
            if keepdims:
                r = r.view((1,) * x.ndim, (0,) * x.ndim, r.offset)
            return r
        return self._reduce(x, (axis,), op, x.ir, x.dtype, keepdims, index_out=True)

    def argmax(self, x, axis=None, keepdims=False):
        return self._argreduce(x, axis, keepdims, "argmax")

    def argmin(self, x, axis=None, keepdims=False):
        return self._argreduce(x, axis, keepdims, "argmin")

    def diff(self, x, axis=-1, n=1, prepend=None, append=None):
        if n == 0:
            return self.copy(x)                     # NumPy: n=0 returns x (prepend/append ignored)
        parts = [a for a in (prepend, x, append) if a is not None]
        if len(parts) > 1:
            x = self.concat(parts, axis=axis)
        for _ in range(n):
            m = x.shape[axis]
            if m == 0:
                break
            hi = basic_index(x, (slice(None),) * axis + (slice(1, None),))
            lo = basic_index(x, (slice(None),) * axis + (slice(None, m - 1),))
            op = "xor" if x.ir == "bool" else "sub"
            x = self._map(("b", op), lambda a, b, op=op: ir.op(op, a, b), [hi, lo])
        return x

    def _scan(self, x, axis, op, dtype, include_initial, exclusive=False):
        dtype = np.dtype(dtype)
        shape = list(x.shape)
        oshape = list(shape)
        if include_initial:
            oshape[axis] += 1
        out = self._new(oshape, dtype)
        if include_initial:
            first = basic_index(out, (slice(None),) * axis + (slice(0, 1),))
            self._write(first, lambda c: c, [], ("full",), params=(0 if op == "add" else 1,),
                        param_dtypes=(out.ir,))
            dst = basic_index(out, (slice(None),) * axis + (slice(1, None),))
        else:
            dst = out
        if x.size == 0:
            return out
        order = [d for d in range(x.ndim) if d != axis] + [axis]
        xv, dv = permute(x, order), permute(dst, order)
        if xv.shape[-1] > SCAN_ROW:
            self._write(dv, lambda v: v, [self._blocked_scan(xv, op, dtype, exclusive)], ("copy",))
            return out
        acc = IR[dtype]
        pshape = xv.shape
        outer, ost = collapse(pshape[:-1], [xv.strides[:-1], dv.strides[:-1]])
        shape2 = outer + (pshape[-1],)
        sts = [ost[0] + (xv.strides[-1],), ost[1] + (dv.strides[-1],)]
        nd = len(shape2)
        kkey = ("scan", op, x.ir, acc, nd, exclusive)
        k = _K.get(kkey)
        if k is None:
            v = ir.cast(ir.load(0, x.ir), acc)
            k = _K[kkey] = ir.Kernel(f"scan_{op}", (ir.Arg("x", x.ir, nd), ir.Arg("out", acc, nd, True)), (),
                                     nd, ir.Scan(op, v, 1, exclusive))
        self._launch(k, [xv, dv], sts, shape2)
        return out

    def _blocked_scan(self, xv, op, dtype, exclusive):
        """The scan of ``xv`` (..., L) along its last axis, L > SCAN_ROW: blocks of SCAN_ROW
        scanned as rows, then each block combined with the exclusive scan of the blocks' totals
        (itself blocked where there are that many blocks)."""
        *outer, L = xv.shape
        C = SCAN_ROW
        B = -(-L // C)
        lead = (slice(None),) * len(outer)
        ident = ir.scan_identity(op, IR[np.dtype(dtype)])
        padded = self.full(tuple(outer) + (B * C,), ident, dtype)      # the tail: identities
        src = xv if xv.dtype == dtype else self.astype(xv, dtype)
        self._write(basic_index(padded, lead + (slice(0, L),)), lambda v: v, [src], ("copy",))
        blocks = padded.view(tuple(outer) + (B, C), contiguous_strides(tuple(outer) + (B, C)),
                             padded.offset)
        s = self._scan(blocks, len(outer) + 1, op, dtype, False)
        before = self._scan(basic_index(s, lead + (slice(None), C - 1)), len(outer), op, dtype,
                            False, exclusive=True)          # each block's offset
        before = before.view(tuple(outer) + (B, 1), before.strides + (0,), before.offset)
        s = self._map(("b", op), lambda a, b: ir.op(op, a, b), [s, before])
        s = s.view(tuple(outer) + (B * C,), contiguous_strides(tuple(outer) + (B * C,)), s.offset)
        if not exclusive:
            return basic_index(s, lead + (slice(0, L),))
        res = self.full(tuple(outer) + (L,), ident, dtype)          # shifted by one
        self._write(basic_index(res, lead + (slice(1, L),)), lambda v: v,
                    [basic_index(s, lead + (slice(0, L - 1),))], ("copy",))
        return res

    def cumulative_sum(self, x, axis=None, dtype=None, include_initial=False):
        return self._scan(x, axis or 0, "add", dtype or x.dtype, include_initial)

    def cumulative_prod(self, x, axis=None, dtype=None, include_initial=False):
        return self._scan(x, axis or 0, "mul", dtype or x.dtype, include_initial)

