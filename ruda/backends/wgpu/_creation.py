"""Creation and manipulation ops of the wgpu backend: full, arange, linspace, eye, tril/triu,
meshgrid; views (reshape, permute, broadcast, expand/squeeze, moveaxis); and copies computed
from output coordinates (flip, concat, stack, roll, tile, repeat).
"""
import math

import numpy as np

from ruda.backends import arange_fill, arange_length
from ruda.backends.wgpu._array import (IR, WArray, basic_index, broadcast_strides,
                                       contiguous_strides, permute, reshape_view)
from ruda.backends.wgpu._base import _K, I
from ruda.runtime import ir


def _linspace_line(start, stop, div, num, cdt):
    """The parameters (s, sl, d, dl, sc, lo, hi, stop) of one real linspace in ``cdt``: value i
    is ((s + i d) + (sl + i dl)) * sc within [lo, hi], the endpoint stop.

    float64: NumPy's start + i * step (sl = dl = -0.0 add nothing, not even to -0.0).  float32
    (no shader-f64): start and step each split in two, d with few enough bits that i * d is
    exact: start + i * step to about an ulp of the result, also where the sum cancels.
    sc, a power of two, is 1 unless the bounds or their difference pass half the largest float
    (a span of 1.7e308 overflows float64; -3.4e38 to 3.4e38 float32): the line is then computed
    at 1/sc of its size, where start + i * step stays finite; in float32 also where all are
    below 2**-60: computed near 1, rounded to float32's subnormals once, at the end.
    """
    top = 1022 if cdt == "f64" else 126              # bounds and span / sc at most 2 ** top
    half = max(abs(start) / 2, abs(stop) / 2, abs(stop / 2 - start / 2))
    ex = math.frexp(half)[1]                         # 0 for inf or nan bounds: sc = 1
    if cdt == "f32" and half and ex < -60:
        sc = 2.0 ** max(ex, -149)
    else:
        sc = 2.0 ** min(127, max(0, ex + 1 - top))
    s, t = start / sc, stop / sc
    d = (t - s) / div if div > 0 else 0.0
    sl = dl = -0.0
    if cdt == "f32":
        hi_bits = 24 - (num - 1).bit_length()    # i * d in float32's 24 bits
        with np.errstate(over="ignore"):         # (bounds past 2**253: inf, as a cast)
            sh = float(np.float32(s))
        sl, s = (s - sh) or -0.0, sh
        if hi_bits > 0 and math.isfinite(d):
            f, e = math.frexp(d)
            dh = math.ldexp(math.trunc(math.ldexp(f, hi_bits)), e - hi_bits)
            dl, d = (d - dh) or -0.0, dh
    return s, sl, d, dl, sc, min(start, stop), max(start, stop), stop


class CreationOps:
    """Creation and manipulation (mixin of the backend)."""

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
        if dtype.kind in "iu" and all(isinstance(v, int) for v in (start, stop, step)):
            n = len(range(start, stop, step))
        else:
            n = arange_length(start, stop, step)
        out = self._new((n,), dtype)
        if n and dtype.kind == "f":
            self._arange_float(out, start, step, dtype)
        elif n:
            p = IR[dtype]
            cdt = "f64" if p in ("f32", "f64") and self.has_f64 else p
            if p in ir.INTS:
                cdt = "i64" if self.has_i64 else "i32"
            if dtype.kind in "iu":
                start, step = int(start), int(step)
            self._write_coords(out, lambda c, s, st: ir.cast(ir.op("add", s, ir.op("mul", ir.cast(c[0], cdt), st)), p),
                               ("arange",), params=(start, step), param_dtypes=(cdt, cdt))
        return out

    def _arange_float(self, out, start, step, dtype):
        """NumPy's fill (``ruda.backends.arange_fill``), in one kernel."""
        wide, first, second, delta = arange_fill(start, step, dtype)
        cdt = IR[wide]

        def fill(c, a, b, d, one):
            # (i * d) * one, one = 1.0 unknown to the compiler: a driver that contracts a * b + c
            # into an fma (NVIDIA's) still rounds i * d once before the sum, as NumPy does
            rest = ir.op("add", a, ir.op("mul", ir.op("mul", ir.cast(c[0], cdt), d), one))
            return ir.select(ir.op("eq", c[0], ir.Const(0, I)), a,
                             ir.select(ir.op("eq", c[0], ir.Const(1, I)), b, rest))
        self._write_coords(out, fill, ("arange_float",), params=(float(first), float(second),
                           float(delta), 1.0), param_dtypes=(cdt,) * 4)

    def linspace(self, start, stop, num, dtype, endpoint):
        dtype = np.dtype(dtype)
        out = self._new((num,), dtype)
        if num and dtype.kind == "c":
            # the real and imaginary parts spaced apart: NumPy's real ramp times a complex step
            part = np.dtype(dtype.char.lower())
            for j, (a, b) in enumerate(((start.real, stop.real), (start.imag, stop.imag))):
                self._linspace_into(WArray(out.st, (num,), (2,), j, part), a, b, num, endpoint)
        elif num:
            self._linspace_into(out, start, stop, num, endpoint)
        return out

    def _linspace_into(self, out, start, stop, num, endpoint):
        cdt = "f64" if self.has_f64 else "f32"
        div = (num - 1) if endpoint else num
        last = num - 1 if endpoint and num > 1 else -1

        def fn(c, s, sl, d, dl, sc, lo, hi, e, lastp):
            i = ir.cast(c[0], cdt)
            v = ir.op("mul", ir.op("add", ir.op("add", s, ir.op("mul", i, d)),
                                   ir.op("add", sl, ir.op("mul", i, dl))), sc)
            # within [lo, hi], as the exact values (a rounding past the largest float would
            # be inf); NaN passes
            v = ir.select(ir.op("gt", v, hi), hi, ir.select(ir.op("lt", v, lo), lo, v))
            return ir.cast(ir.select(ir.op("eq", c[0], lastp), e, v), out.ir)
        self._write_coords(out, fn, ("linspace",),
                           params=(*_linspace_line(float(start), float(stop), div, num, cdt), last),
                           param_dtypes=(cdt,) * 8 + (I,))

    def eye(self, n_rows, n_cols, k, dtype):
        dtype = np.dtype(dtype)
        out = self._new((n_rows, n_cols), dtype)
        k = max(-n_rows - 1, min(n_cols + 1, k))      # keep the int32 parameter in range
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

    def _gather_coords(self, x, out_shape, coord_fn, key, extra=(), params=(), param_dtypes=(),
                       masked=False):
        """out[c] = x[coord_fn(c, loads...)] -- x read with computed coordinates; ``masked``:
        coord_fn returns (coordinates, valid) and out is 0 where valid is false."""
        nd = len(out_shape)
        out = self._new(out_shape, x.dtype)
        if not out.size:
            return out
        dts = tuple(a.ir for a in extra)
        kkey = (key, x.ir, x.ndim, dts, nd, param_dtypes, masked)
        k = _K.get(kkey)
        if k is None:
            c = [ir.Coord(d) for d in range(nd)]
            loads = [ir.Load(i + 1, ir.Strided(), dt) for i, dt in enumerate(dts)]
            ps = [ir.Param(j, p) for j, p in enumerate(param_dtypes)]
            xc = coord_fn(c, loads, ps)
            ok = None
            if masked:
                xc, ok = xc
            val = ir.Load(0, ir.Strided(tuple(xc)), x.ir)
            if ok is not None:
                val = ir.select(ok, val, ir.Const(0, x.ir))
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
                if r < 0:
                    raise ValueError(f"repeats must be non-negative; got {r}")
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
        total, low = 0, 0
        if cum.size:    # one readback: the size, and the least repeat (negative ones are an error)
            last = self.reshape(basic_index(cum, (slice(-1, None),)), (1,))
            low_ = self.reshape(self.astype(self.min(repeats, (0,)), idt, False), (1,))
            total, low = (int(v) for v in self.to_host(self.concat([last, low_])))
        if low < 0:
            raise ValueError(f"repeats must be non-negative; got {low}")
        pos = self.arange(0, total, 1, idt)
        src = self.searchsorted(cum, pos, side="right")
        return self.take(x, src, axis=axis)


