"""Ops of the wgpu backend, each a few IR kernels (no host round trips).

Every op builds (once, cached by dtype/ndim key) an :mod:`ruda.runtime.ir` kernel and launches
it through the device context; shapes, strides, offsets and scalars travel as metadata so
one pipeline serves every shape.
"""
import math
import operator

import numpy as np

from ruda import _dtypes
from ruda.backends.wgpu._array import (IR, HOST_STORAGE, WArray, basic_index, broadcast_strides,
                                       collapse, contiguous_strides, permute, reshape_view)
from ruda.runtime import ir

_K = {}   # op key -> ir.Kernel
I = ir.INDEX

UNARY = {
    "abs": "abs", "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh",
    "atan": "atan", "atanh": "atanh", "bitwise_invert": "invert", "ceil": "ceil", "conj": "conj",
    "cos": "cos", "cosh": "cosh", "exp": "exp", "expm1": "expm1", "floor": "floor",
    "imag": "imag", "isfinite": "isfinite", "isinf": "isinf", "isnan": "isnan", "log": "log",
    "log1p": "log1p", "log2": "log2", "log10": "log10", "logical_not": "not", "negative": "neg",
    "real": "real", "reciprocal": "reciprocal", "round": "round", "sign": "sign",
    "signbit": "signbit", "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "square": "square",
    "tan": "tan", "tanh": "tanh", "trunc": "trunc",
}
BINARY = {
    "add": "add", "atan2": "atan2", "bitwise_and": "and", "bitwise_left_shift": "shl",
    "bitwise_or": "or", "bitwise_right_shift": "shr", "bitwise_xor": "xor", "copysign": "copysign",
    "divide": "div", "equal": "eq", "floor_divide": "floordiv", "greater": "gt",
    "greater_equal": "ge", "hypot": "hypot", "less": "lt", "less_equal": "le",
    "logaddexp": "logaddexp", "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
    "maximum": "max", "minimum": "min", "multiply": "mul", "nextafter": "nextafter",
    "not_equal": "ne", "pow": "pow", "remainder": "mod", "subtract": "sub",
}
NP_OF = {v: k for k, v in IR.items()}


def _np(irdt):
    return NP_OF[irdt]


def _bshape(*shapes):
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, n in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise ValueError(f"shapes {shapes} cannot be broadcast together")
    return tuple(out)


def _unary_op(name, irop):
    def method(self, x):
        return self._map(("u", irop), lambda a: ir.op(irop, a), [x])
    method.__name__ = name
    return method


def _binary_op(name, irop):
    def method(self, x1, x2):
        return self._map(("b", irop), lambda a, b: ir.op(irop, a, b), [x1, x2])
    method.__name__ = name
    return method


class Ops:
    # ================================================================== plumbing
    def _new(self, shape, dtype):
        shape = tuple(int(s) for s in shape)
        d = IR[np.dtype(dtype)]
        st = self.ctx.alloc(math.prod(shape) * self.ctx.renderer.itemsize[d])
        return WArray(st, shape, contiguous_strides(shape), 0, np.dtype(dtype))

    def _launch(self, kernel, arrays, strides, shape, params=(), extras=None):
        views = [(a.offset, tuple(s)) for a, s in zip(arrays, strides)]
        self.ctx.launch(kernel, [a.st for a in arrays], views, tuple(shape), params, extras)

    def _map(self, key, fn, inputs, out_dtype=None, shape=None, params=(), param_dtypes=()):
        """``out = fn(*loads, *params)`` elementwise over the broadcast shape of ``inputs``."""
        if shape is None:
            shape = _bshape(*[a.shape for a in inputs]) if inputs else ()
        dts = tuple(a.ir for a in inputs)
        kkey = (key, dts, out_dtype, param_dtypes)
        if out_dtype is None:
            probe = _K.get(("probe",) + kkey)
            if probe is None:
                val = fn(*[ir.load(i, dt) for i, dt in enumerate(dts)],
                         *[ir.Param(j, p) for j, p in enumerate(param_dtypes)])
                probe = _K[("probe",) + kkey] = val.dtype
            out_dtype = _np(probe)
        out = self._new(shape, out_dtype)
        if out.size == 0:
            return out
        sts = [broadcast_strides(a, shape) for a in inputs] + [out.strides]
        cshape, csts = collapse(shape, sts)
        self._run_map(kkey, fn, inputs, out, cshape, csts, params, param_dtypes)
        return out

    def _run_map(self, kkey, fn, inputs, out, cshape, csts, params=(), param_dtypes=()):
        nd = len(cshape)
        k = _K.get((kkey, nd))
        if k is None:
            dts = [a.ir for a in inputs]
            val = fn(*[ir.load(i, dt) for i, dt in enumerate(dts)],
                     *[ir.Param(j, p) for j, p in enumerate(param_dtypes)])
            args = tuple(ir.Arg(f"x{i}", dt, nd) for i, dt in enumerate(dts)) + \
                (ir.Arg("out", out.ir, nd, True),)
            store = ir.Store(len(dts), ir.Strided(), ir.cast(val, out.ir))
            k = _K[(kkey, nd)] = ir.Kernel(f"map_{kkey[0][-1] if isinstance(kkey[0], tuple) else kkey[0]}",
                                           args, tuple(param_dtypes), nd, ir.Map((store,)))
        self._launch(k, list(inputs) + [out], csts, cshape, params)

    def _write(self, dst, fn, inputs, key, params=(), param_dtypes=()):
        """Evaluate ``fn`` elementwise and store it into the (strided) view ``dst``."""
        if dst.size == 0:
            return
        inputs = [self.copy(a) if a.st is dst.st else a for a in inputs]
        sts = [broadcast_strides(a, dst.shape) for a in inputs] + [dst.strides]
        cshape, csts = collapse(dst.shape, sts)
        kkey = (key, tuple(a.ir for a in inputs), dst.dtype, param_dtypes)
        self._run_map(kkey, fn, inputs, dst, cshape, csts, params, param_dtypes)

    def copy(self, x, dtype=None):
        """A new C-contiguous array (optionally cast)."""
        dt = x.dtype if dtype is None else np.dtype(dtype)
        return self._map(("copy",), lambda a: a, [x], dt)

    def _contig(self, x):
        return x if x.is_contiguous() else self.copy(x)

    # ================================================================== elementwise
    for _n, _o in UNARY.items():
        locals()[_n] = _unary_op(_n, _o)
    for _n, _o in BINARY.items():
        locals()[_n] = _binary_op(_n, _o)
    del _n, _o

    def positive(self, x):
        return self.copy(x)

    def real(self, x):
        if x.ir in ir.COMPLEX:
            return self._map(("u", "real"), lambda a: ir.op("real", a), [x])
        return self.copy(x)

    def conj(self, x):
        if x.ir in ir.COMPLEX:
            return self._map(("u", "conj"), lambda a: ir.op("conj", a), [x])
        return self.copy(x)

    def astype(self, x, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype == x.dtype and not copy:
            return x
        self._check_dtype("astype", dtype)
        return self.copy(x, dtype)

    def clip(self, x, min=None, max=None):
        ins = [x] + [b for b in (min, max) if b is not None]
        has = (min is not None, max is not None)

        def fn(a, *bs):
            bs = list(bs)
            v = a
            if has[0]:
                lo = bs.pop(0)
                v = ir.select(ir.op("lt", v, lo), lo, v) if a.dtype not in ir.FLOATS else \
                    ir.select(ir.op("or", ir.op("isnan", v), ir.op("ge", v, lo)), v, lo)
            if has[1]:
                hi = bs.pop(0)
                v = ir.select(ir.op("gt", v, hi), hi, v) if a.dtype not in ir.FLOATS else \
                    ir.select(ir.op("or", ir.op("isnan", v), ir.op("le", v, hi)), v, hi)
            return v
        return self._map(("clip", has), fn, ins, x.dtype, shape=x.shape)

    def where(self, condition, x1, x2):
        return self._map(("where",), lambda c, a, b: ir.select(c, a, b), [condition, x1, x2])

    # ================================================================== creation
    def _param_dtype(self, dt):
        return IR[np.dtype(dt)]

    def full(self, shape, fill_value, dtype):
        dtype = np.dtype(dtype)
        out = self._new(shape, dtype)
        if out.size:
            p = IR[dtype]
            v = fill_value
            if dtype.kind in "iu":
                v = int(v)
            self._write(out, lambda c: c, [], ("full",), params=(v,), param_dtypes=(p,))
        return out

    def empty(self, shape, dtype):
        return self._new(shape, dtype)

    def _index_value(self, nd, d=0):
        return ir.Coord(d)

    def arange(self, start, stop, step, dtype):
        dtype = np.dtype(dtype)
        n = len(range(0, 0)) if False else None
        if dtype.kind in "iu" and all(isinstance(v, int) for v in (start, stop, step)):
            n = len(range(start, stop, step))
        else:
            n = max(0, math.ceil((stop - start) / step))
        out = self._new((n,), dtype)
        if n:
            p = IR[dtype]
            cdt = "f64" if p in ("f32", "f64") and self.has_f64 else p
            if p in ir.INTS:
                cdt = "i64" if self.has_i64 else "i32"
            if dtype.kind in "iu":
                start, step = int(start), int(step)
            self._write(out, lambda s, st: ir.cast(ir.op("add", s, ir.op("mul", ir.cast(ir.Coord(0), cdt), st)), p),
                        [], ("arange",), params=(start, step), param_dtypes=(cdt, cdt))
        return out

    def linspace(self, start, stop, num, dtype, endpoint):
        dtype = np.dtype(dtype)
        out = self._new((num,), dtype)
        if not num:
            return out
        p = IR[dtype]
        cplx = p in ir.COMPLEX
        cdt = ("c128" if cplx else "f64") if self.has_f64 else ("c64" if cplx else "f32")
        div = (num - 1) if endpoint else num
        step = (stop - start) / div if div > 0 else 0.0
        last = num - 1 if endpoint and num > 1 else -1

        def fn(s, st, e, lastp):
            i = ir.Coord(0)
            v = ir.op("add", s, ir.op("mul", ir.cast(i, cdt), st))
            v = ir.select(ir.op("eq", i, lastp), e, v)
            return ir.cast(v, p)
        self._write(out, fn, [], ("linspace",), params=(start, step, stop, last),
                    param_dtypes=(cdt, cdt, cdt, I))
        return out

    def eye(self, n_rows, n_cols, k, dtype):
        dtype = np.dtype(dtype)
        out = self._new((n_rows, n_cols), dtype)
        if out.size:
            p = IR[dtype]
            self._write_coords(out, lambda c, kk: ir.cast(ir.op("eq", ir.op("sub", c[1], c[0]), kk), p),
                               ("eye",), params=(k,), param_dtypes=(I,))
        return out

    def _write_coords(self, out, fn, key, inputs=(), params=(), param_dtypes=()):
        """out[c] = fn(coords, *params[, loads]) with uncollapsed coordinates (index-aware kernels)."""
        nd = out.ndim
        dts = tuple(a.ir for a in inputs)
        kkey = (key, dts, out.ir, param_dtypes, nd)
        k = _K.get(kkey)
        if k is None:
            c = [ir.Coord(d) for d in range(nd)]
            ps = [ir.Param(j, p) for j, p in enumerate(param_dtypes)]
            loads = [ir.load(i, dt) for i, dt in enumerate(dts)]
            val = fn(c, *ps, *loads) if loads else fn(c, *ps)
            args = tuple(ir.Arg(f"x{i}", dt, nd) for i, dt in enumerate(dts)) + (ir.Arg("out", out.ir, nd, True),)
            k = _K[kkey] = ir.Kernel(f"idx_{key[0]}", args, tuple(param_dtypes), nd,
                                     ir.Map((ir.Store(len(dts), ir.Strided(), ir.cast(val, out.ir)),)))
        if out.size:
            sts = [broadcast_strides(a, out.shape) for a in inputs] + [out.strides]
            self._launch(k, list(inputs) + [out], sts, out.shape, params)

    def tril(self, x, k):
        out = self._new(x.shape, x.dtype)
        z = ir.Const(0, x.ir)
        self._write_coords(out, lambda c, kk, a: ir.select(ir.op("le", ir.op("sub", c[-1], c[-2]), kk), a, z),
                           ("tril",), [x], (k,), (I,))
        return out

    def triu(self, x, k):
        out = self._new(x.shape, x.dtype)
        z = ir.Const(0, x.ir)
        self._write_coords(out, lambda c, kk, a: ir.select(ir.op("ge", ir.op("sub", c[-1], c[-2]), kk), a, z),
                           ("triu",), [x], (k,), (I,))
        return out

    def meshgrid(self, *arrays, indexing="xy"):
        n = len(arrays)
        shape = [a.shape[0] for a in arrays]
        if indexing == "xy" and n > 1:
            shape[0], shape[1] = shape[1], shape[0]
        outs = []
        for i, a in enumerate(arrays):
            pos = i
            if indexing == "xy" and n > 1 and i < 2:
                pos = 1 - i
            strides = [0] * n
            strides[pos] = a.strides[0]
            v = a.view(shape, strides, a.offset)
            outs.append(self.copy(v))
        return outs

    # ================================================================== views / manipulation
    def reshape(self, x, shape, copy=None):
        shape = list(shape)
        if -1 in shape:
            i = shape.index(-1)
            rest = math.prod(s for s in shape if s != -1)
            shape[i] = x.size // rest if rest else 0
        shape = tuple(shape)
        if copy:
            return self.copy(x).view(shape, contiguous_strides(shape), 0)
        v = reshape_view(x, shape)
        if v is not None:
            return v
        if copy is False:
            raise ValueError(f"cannot reshape a non-contiguous array of shape {x.shape} to {shape} without a copy")
        return self.copy(x).view(shape, contiguous_strides(shape), 0)

    def permute_dims(self, x, axes):
        return permute(x, axes)

    def broadcast_to(self, x, shape):
        shape = tuple(shape)
        return x.view(shape, broadcast_strides(x, shape), x.offset)

    def expand_dims(self, x, axis):
        nd = x.ndim + len(axis)
        shape, strides = list(x.shape), list(x.strides)
        for a in sorted(axis):
            shape.insert(a, 1)
            strides.insert(a, 0)
        return x.view(shape, strides, x.offset)

    def squeeze(self, x, axis):
        keep = [d for d in range(x.ndim) if d not in axis]
        return x.view([x.shape[d] for d in keep], [x.strides[d] for d in keep], x.offset)

    def moveaxis(self, x, source, destination):
        order = [d for d in range(x.ndim) if d not in source]
        for dst, src in sorted(zip(destination, source)):
            order.insert(dst, src)
        return permute(x, order)

    def flip(self, x, axis):
        shape, strides, off = list(x.shape), list(x.strides), x.offset
        for a in axis:
            if shape[a]:
                off += (shape[a] - 1) * strides[a]
            strides[a] = -strides[a]
        return self.copy(x.view(shape, strides, off))

    def unstack(self, x, axis=0):
        return tuple(self.copy(basic_index(x, (slice(None),) * axis + (i,))) for i in range(x.shape[axis]))

    def concat(self, arrays, axis=0):
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        out = self._new(shape, arrays[0].dtype)
        pos = 0
        for a in arrays:
            n = a.shape[axis]
            if n:
                dst = basic_index(out, (slice(None),) * axis + (slice(pos, pos + n),))
                self._write(dst, lambda v: v, [a], ("copy",))
            pos += n
        return out

    def stack(self, arrays, axis=0):
        return self.concat([self.expand_dims(a, (axis,)) for a in arrays], axis=axis)

    def roll(self, x, shift, axis=None):
        if axis is None:
            flat = self.reshape(x, (-1,))
            return self.reshape(self.roll(flat, (shift,), (0,)), x.shape)
        if isinstance(axis, int):
            axis, shift = (axis,), (shift,)
        sh = [0] * x.ndim
        for a, s in zip(axis, shift):
            if x.shape[a]:
                sh[a] = (sh[a] + int(s)) % x.shape[a]
        nd = x.ndim
        out = self._new(x.shape, x.dtype)
        if not out.size:
            return out
        kkey = ("roll", x.ir, nd)
        k = _K.get(kkey)
        if k is None:
            coords = []
            for d in range(nd):
                c, s, n = ir.Coord(d), ir.Param(d, I), ir.Size(d)
                coords.append(ir.op("mod", ir.op("add", ir.op("sub", c, s), n), n))
            val = ir.Load(0, ir.Strided(tuple(coords)), x.ir)
            k = _K[kkey] = ir.Kernel("roll", (ir.Arg("x", x.ir, nd), ir.Arg("out", x.ir, nd, True)),
                                     (I,) * nd, nd, ir.Map((ir.Store(1, ir.Strided(), val),)))
        self._launch(k, [x, out], [x.strides, out.strides], x.shape, tuple(sh))
        return out

    def _gather_coords(self, x, out_shape, coord_fn, key, extra=(), params=(), param_dtypes=()):
        """out[c] = x[coord_fn(c, loads...)] -- x read with computed coordinates."""
        nd = len(out_shape)
        out = self._new(out_shape, x.dtype)
        if not out.size:
            return out
        dts = tuple(a.ir for a in extra)
        kkey = (key, x.ir, x.ndim, dts, nd, param_dtypes)
        k = _K.get(kkey)
        if k is None:
            c = [ir.Coord(d) for d in range(nd)]
            loads = [ir.Load(i + 1, ir.Strided(), dt) for i, dt in enumerate(dts)]
            ps = [ir.Param(j, p) for j, p in enumerate(param_dtypes)]
            xc = coord_fn(c, loads, ps)
            val = ir.Load(0, ir.Strided(tuple(xc)), x.ir)
            args = (ir.Arg("x", x.ir, x.ndim),) + tuple(ir.Arg(f"i{i}", dt, nd) for i, dt in enumerate(dts)) + \
                (ir.Arg("out", x.ir, nd, True),)
            k = _K[kkey] = ir.Kernel(f"gather_{key[0]}", args, tuple(param_dtypes), nd,
                                     ir.Map((ir.Store(len(args) - 1, ir.Strided(), val),)))
        sts = [x.strides] + [broadcast_strides(a, out_shape) for a in extra] + [out.strides]
        self._launch(k, [x] + list(extra) + [out], sts, out_shape, params)
        return out

    def tile(self, x, repetitions):
        reps = tuple(repetitions)
        nd = max(len(reps), x.ndim)
        reps = (1,) * (nd - len(reps)) + reps
        xv = x.view((1,) * (nd - x.ndim) + x.shape, (0,) * (nd - x.ndim) + x.strides, x.offset)
        shape = tuple(n * r for n, r in zip(xv.shape, reps))
        return self._gather_coords(xv, shape, lambda c, _l, ps: [ir.op("mod", c[d], ps[d]) for d in range(nd)],
                                   ("tile",), params=tuple(max(n, 1) for n in xv.shape), param_dtypes=(I,) * nd)

    def repeat(self, x, repeats, axis=None):
        if axis is None:
            x = self.reshape(x, (-1,))
            axis = 0
        if isinstance(repeats, WArray):
            if repeats.ndim == 0 or repeats.shape[0] == 1:
                r = int(self.to_host(repeats).reshape(-1)[0])   # size readback: data-dependent shape
                return self.repeat(x, r, axis)
            return self._repeat_array(x, repeats, axis)
        r = int(repeats)
        shape = list(x.shape)
        shape[axis] *= r
        nd = x.ndim
        return self._gather_coords(
            x, tuple(shape),
            lambda c, _l, ps: [ir.op("floordiv", c[d], ps[0]) if d == axis else c[d] for d in range(nd)],
            ("repeat", axis), params=(max(r, 1),), param_dtypes=(I,))

    def _repeat_array(self, x, repeats, axis):
        idt = self._index_dtype()
        cum = self.cumulative_sum(repeats, axis=0, dtype=idt, include_initial=False)
        total = int(self.to_host(basic_index(cum, (-1,)))) if cum.size else 0   # size readback
        pos = self.arange(0, total, 1, idt)
        src = self.searchsorted(cum, pos, side="right")
        return self.take(x, src, axis=axis)

    def _index_dtype(self):
        return np.dtype(np.int64) if self.has_i64 else np.dtype(np.int32)

    # ================================================================== reductions
    def _reduce(self, x, axes, op, acc, out_dtype, keepdims, value=None, extra=(), index_out=False,
                key=None):
        """Reduce ``value(load x, loads extra...)`` (cast to ``acc``) over ``axes`` with ``op``."""
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
        serial = nout >= 256 or R <= 64
        split = not serial and not index_out and R >= 16384 and nout < 64
        nsplit = min(max(1, R // 4096), 1024) if split else 1
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
            if index_out:
                args += (ir.Arg("idx", iout.ir, k_out, True),)
            body = ir.Reduce(op, v, n_in, k_out, n_in + 1 if index_out else None, split)
            k = _K[kkey] = ir.Kernel(f"reduce_{op}", args, (), k_out + k_red, body,
                                     (("serial", True),) if serial else ())
        if split:
            part = self._new((nout * nsplit,), _np(acc))
            chunk = -(-R // nsplit)
            self._launch(k, ins + [part], in_sts + [()], shape, extras={"nsplit": nsplit, "chunk": chunk})
            pv = part.view((nout, nsplit), (nsplit, 1), 0)
            comb = {"sum": "sum", "prod": "prod", "max": "max", "min": "min", "all": "all", "any": "any"}[op]
            res = self._reduce(pv, (1,), comb, acc, out_dtype, False)
            out = res.view(oshape, contiguous_strides(oshape), res.offset)
            return self._finish_reduce(out, None, kshape)
        osts = [contiguous_strides(osh)]
        if index_out:
            osts.append(contiguous_strides(osh))
        self._launch(k, ins + [out] + ([iout] if index_out else []), in_sts + osts, shape)
        return self._finish_reduce(out, iout, kshape)

    def _finish_reduce(self, out, iout, kshape):
        r = iout if iout is not None else out
        return r.view(kshape, contiguous_strides(kshape), r.offset)

    def sum(self, x, axis, dtype, keepdims=False):
        acc = IR[np.dtype(dtype)]
        return self._reduce(x, axis, "sum", acc, dtype, keepdims)

    def prod(self, x, axis, dtype, keepdims=False):
        acc = IR[np.dtype(dtype)]
        return self._reduce(x, axis, "prod", acc, dtype, keepdims)

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
        if R == 0:
            return self.full(tuple(1 if d in axis else n for d, n in enumerate(x.shape)) if keepdims else
                             tuple(n for d, n in enumerate(x.shape) if d not in axis), float("nan"), x.dtype)
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

    # ================================================================== scans
    def _scan(self, x, axis, op, dtype, include_initial, exclusive=False):
        dtype = np.dtype(dtype)
        shape = list(x.shape)
        n = shape[axis]
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

    def cumulative_sum(self, x, axis=None, dtype=None, include_initial=False):
        return self._scan(x, axis or 0, "add", dtype or x.dtype, include_initial)

    def cumulative_prod(self, x, axis=None, dtype=None, include_initial=False):
        return self._scan(x, axis or 0, "mul", dtype or x.dtype, include_initial)

    # ================================================================== linear algebra
    def matmul(self, x1, x2):
        a, b = x1, x2
        va = a.ndim == 1
        vb = b.ndim == 1
        if va:
            a = a.view((1, a.shape[0]), (0, a.strides[0]), a.offset)
        if vb:
            b = b.view((b.shape[0], 1), (b.strides[0], 0), b.offset)
        batch = _bshape(a.shape[:-2], b.shape[:-2])
        M, K = a.shape[-2:]
        N = b.shape[-1]
        oshape = batch + (M, N)
        out = self._new(oshape, a.dtype)
        if out.size:
            if K == 0:
                out = self.full(oshape, 0, a.dtype)
            else:
                nb = len(batch)
                nd = nb + 2
                sa = broadcast_strides(a.view(a.shape, a.strides, a.offset), batch + (M, K))
                sb = broadcast_strides(b, batch + (K, N))
                kkey = ("matmul", a.ir, nd)
                k = _K.get(kkey)
                if k is None:
                    kv = ir.Var("k")
                    c = [ir.Coord(d) for d in range(nd)]
                    la = ir.Load(0, ir.Strided(tuple(c[:nb]) + (c[nb], kv)), a.ir)
                    lb = ir.Load(1, ir.Strided(tuple(c[:nb]) + (kv, c[nb + 1])), a.ir)
                    acc = a.ir if a.ir != "bool" else "bool"
                    f = ir.Fold("add", kv, ir.Const(0, I), ir.Param(0, I), ir.op("mul", la, lb),
                                ir.Const(0, acc), acc)
                    k = _K[kkey] = ir.Kernel("matmul", (ir.Arg("a", a.ir, nd), ir.Arg("b", a.ir, nd),
                                                        ir.Arg("out", a.ir, nd, True)), (I,), nd,
                                             ir.Map((ir.Store(2, ir.Strided(), f),)))
                self._launch(k, [a, b, out], [sa, sb, out.strides], oshape, (K,))
        if va and vb:
            return out.view(oshape[:-2], contiguous_strides(oshape[:-2]), 0)
        if va:
            s = oshape[:-2] + (N,)
            return out.view(s, contiguous_strides(s), 0)
        if vb:
            s = oshape[:-2] + (M,)
            return out.view(s, contiguous_strides(s), 0)
        return out

    def tensordot(self, x1, x2, axes):
        ax1, ax2 = axes
        f1 = [d for d in range(x1.ndim) if d not in ax1]
        f2 = [d for d in range(x2.ndim) if d not in ax2]
        a = permute(x1, f1 + list(ax1))
        b = permute(x2, list(ax2) + f2)
        m = math.prod(x1.shape[d] for d in f1)
        kk = math.prod(x1.shape[d] for d in ax1)
        n = math.prod(x2.shape[d] for d in f2)
        r = self.matmul(self.reshape(a, (m, kk)), self.reshape(b, (kk, n)))
        return self.reshape(r, tuple(x1.shape[d] for d in f1) + tuple(x2.shape[d] for d in f2))

    def vecdot(self, x1, x2, axis=-1):
        shape = _bshape(x1.shape, x2.shape)
        nd = len(shape)
        a = self.broadcast_to(x1, shape)
        b = self.broadcast_to(x2, shape)
        ax = axis % nd
        cplx = x1.ir in ir.COMPLEX
        return self._reduce(a, (ax,), "sum", x1.ir, x1.dtype, False,
                            value=lambda u, v: ir.op("mul", ir.op("conj", u) if cplx else u, v),
                            extra=[b], key="vecdot")

    def linalg_matmul(self, x1, x2):
        return self.matmul(x1, x2)

    def linalg_outer(self, x1, x2):
        a = x1.view((x1.shape[0], 1), (x1.strides[0], 0), x1.offset)
        b = x2.view((1, x2.shape[0]), (0, x2.strides[0]), x2.offset)
        return self.multiply(a, b)

    def linalg_diagonal(self, x, offset=0):
        n, m = x.shape[-2:]
        if offset >= 0:
            k = max(0, min(n, m - offset))
            off = x.offset + offset * x.strides[-1] if k else x.offset
        else:
            k = max(0, min(n + offset, m))
            off = x.offset - offset * x.strides[-2] if k else x.offset
        v = x.view(x.shape[:-2] + (k,), x.strides[:-2] + (x.strides[-2] + x.strides[-1],), off)
        return self.copy(v)

    def linalg_trace(self, x, offset=0, dtype=None):
        d = self.linalg_diagonal(x, offset)
        return self.sum(d, (d.ndim - 1,), dtype or x.dtype)

    def linalg_cross(self, x1, x2, axis=-1):
        shape = _bshape(x1.shape, x2.shape)
        nd = len(shape)
        ax = axis % nd
        a = self.broadcast_to(x1, shape)
        b = self.broadcast_to(x2, shape)
        comps = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            aj = basic_index(a, (slice(None),) * ax + (j,))
            ak = basic_index(a, (slice(None),) * ax + (k,))
            bj = basic_index(b, (slice(None),) * ax + (j,))
            bk = basic_index(b, (slice(None),) * ax + (k,))
            comps.append(self._map(("cross",), lambda p, q, r, s: ir.op("sub", ir.op("mul", p, s), ir.op("mul", q, r)),
                                   [aj, ak, bj, bk]))
        return self.stack(comps, axis=ax)

    def linalg_vector_norm(self, x, axis=None, keepdims=False, ord=2):
        axes = tuple(range(x.ndim)) if axis is None else axis
        rdt = _np(ir.real_of(x.ir))
        r = ir.real_of(x.ir)
        if ord == float("inf"):
            res = self._reduce(x, axes, "max", r, rdt, keepdims, value=lambda a: ir.op("abs", a), key="nrm_inf")
        elif ord == float("-inf"):
            res = self._reduce(x, axes, "min", r, rdt, keepdims, value=lambda a: ir.op("abs", a), key="nrm_-inf")
        elif ord == 0:
            res = self._reduce(x, axes, "sum", r, rdt, keepdims,
                               value=lambda a: ir.cast(ir.op("ne", a, ir.Const(0, x.ir)), r), key="nrm_0")
        elif ord == 1:
            res = self._reduce(x, axes, "sum", r, rdt, keepdims, value=lambda a: ir.op("abs", a), key="nrm_1")
        elif ord == 2:
            s = self._reduce(x, axes, "sum", r, rdt, keepdims,
                             value=lambda a: ir.op("square", ir.op("abs", a)), key="nrm_2")
            res = self.sqrt(s)
        else:
            p = float(ord)
            s = self._reduce(x, axes, "sum", r, rdt, keepdims,
                             value=lambda a: ir.op("pow", ir.op("abs", a), ir.Const(p, r)), key=("nrm_p", p))
            res = self._map(("pow_c", 1.0 / p), lambda a: ir.op("pow", a, ir.Const(1.0 / p, r)), [s])
        if axis is None and keepdims:
            res = res.view((1,) * x.ndim, (0,) * x.ndim, res.offset)
        return res

    def linalg_matrix_norm(self, x, keepdims=False, ord="fro"):
        nd = x.ndim
        if ord == "fro":
            return self.linalg_vector_norm(x, (nd - 2, nd - 1), keepdims, 2)
        if ord in (1, -1, float("inf"), float("-inf")):
            sum_ax, red_ax = (nd - 2, nd - 1) if ord in (1, -1) else (nd - 1, nd - 2)
            s = self.linalg_vector_norm(x, (sum_ax,), True, 1)
            r = self.max(s, (red_ax,), True) if ord in (1, float("inf")) else self.min(s, (red_ax,), True)
            if not keepdims:
                r = self.squeeze(r, (nd - 2, nd - 1))
            return r
        sv = self.linalg_svdvals(x)
        if ord == "nuc":
            r = self.sum(sv, (sv.ndim - 1,), sv.dtype)
        else:
            r = (self.max if ord == 2 else self.min)(sv, (sv.ndim - 1,))
        if keepdims:
            r = self.expand_dims(self.expand_dims(r, (r.ndim,)), (r.ndim + 1,))
        return r

    def linalg_matrix_power(self, x, n):
        if n < 0:
            x = self.linalg_inv(x)
            n = -n
        if n == 0:
            m = x.shape[-1]
            e = self.eye(m, m, 0, x.dtype)
            return self.copy(self.broadcast_to(e, x.shape))
        result = None
        base = x
        while n:
            if n & 1:
                result = base if result is None else self.matmul(result, base)
            n >>= 1
            if n:
                base = self.matmul(base, base)
        return self.copy(result) if result is x else result

    # ================================================================== indexing (basic; advanced in _index.py)
    def getitem(self, x, key):
        if not isinstance(key, tuple):
            key = (key,)
        if all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key):
            return basic_index(x, key)
        return self._advanced_getitem(x, key)

    def setitem(self, x, key, value):
        if not isinstance(key, tuple):
            key = (key,)
        if all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key):
            dst = basic_index(x, key)
            if value.dtype != x.dtype:
                value = self.astype(value, x.dtype)
            self._write(dst, lambda v: v, [value], ("copy",))
            return
        self._advanced_setitem(x, key, value)
