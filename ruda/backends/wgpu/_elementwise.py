"""Elementwise ops of the wgpu backend: maps over broadcast operands, copies and casts.

Each op is one IR ``Map`` kernel over the operands' strides after merging the dimensions that
all of them walk contiguously; shapes, strides and offsets travel as metadata, so a kernel is
keyed by op, dtypes and collapsed rank only.  From ``_base.VEC4_MIN`` elements, a map whose
merged operands are 1-D, 4-byte, and unit-stride from an offset that is a multiple of 4 or
broadcast takes the vec4 kernel (16-byte loads and stores, the n % 4 tail by invocation 0).
Unary and binary ops replay plans (``_plan``) when called again on the same views; where no
plan replays, a bfloat16 operand takes ``_half``'s route (float32 views, the results rounded).
"""
import numpy as np

from ruda import backends
from ruda.backends.wgpu import _base, _half
from ruda.backends.wgpu._array import broadcast_shape, broadcast_strides, collapse
from ruda.backends.wgpu._base import _K, np_of
from ruda.runtime import ir

# the IR op of each elementwise function whose name differs from it
_IR_NAMES = {"bitwise_invert": "invert", "logical_not": "not", "negative": "neg",
             "bitwise_and": "and", "bitwise_left_shift": "shl", "bitwise_or": "or",
             "bitwise_right_shift": "shr", "bitwise_xor": "xor", "divide": "div", "equal": "eq",
             "floor_divide": "floordiv", "greater": "gt", "greater_equal": "ge", "less": "lt",
             "less_equal": "le", "logical_and": "and", "logical_or": "or", "logical_xor": "xor",
             "maximum": "max", "minimum": "min", "multiply": "mul", "not_equal": "ne",
             "remainder": "mod", "subtract": "sub"}
UNARY = {n: _IR_NAMES.get(n, n) for n in backends.ELEMENTWISE_UNARY if n != "positive"}   # positive: a copy
BINARY = {n: _IR_NAMES.get(n, n) for n in backends.ELEMENTWISE_BINARY}


def _unary_op(name, irop):
    key = ("u", irop)

    def fn(a):
        return ir.op(irop, a)

    def method(self, x):
        pkey = (key, x.ir, x.shape, x.strides, x.offset)
        r = self._replayed(pkey, (x.st,))       # bfloat16 operands never record a plan
        if r is not None:
            return r
        if x.dtype == _half.BF16:
            return _half.elementwise(self, method, x)
        return self._planned(pkey, (x,), lambda: self._map(key, fn, [x]))
    method.__name__ = name
    method.routes_halves = True             # _half.guards leaves it as it is
    return method


def _binary_op(name, irop):
    key = ("b", irop)

    def fn(a, b):
        return ir.op(irop, a, b)

    def method(self, x1, x2):
        pkey = (key, x1.ir, x1.shape, x1.strides, x1.offset, x2.ir, x2.shape, x2.strides, x2.offset)
        r = self._replayed(pkey, (x1.st, x2.st))
        if r is not None:
            return r
        if x1.dtype == _half.BF16 or x2.dtype == _half.BF16:
            return _half.elementwise(self, method, x1, x2)
        return self._planned(pkey, (x1, x2), lambda: self._map(key, fn, [x1, x2]))
    method.__name__ = name
    method.routes_halves = True
    return method


_COPY = ("copy",)


def _identity(a):
    return a


class ElementwiseOps:
    """Elementwise ops (mixin of the backend)."""

    # the generated unary/binary methods first: real, conj below replace theirs
    for _n, _o in UNARY.items():
        locals()[_n] = _unary_op(_n, _o)
    for _n, _o in BINARY.items():
        locals()[_n] = _binary_op(_n, _o)
    del _n, _o
    _real_square = locals()["square"]

    def square(self, x):
        if x.ir in ir.COMPLEX:
            # the product x * x, the operand bound twice: from one load, Mesa rewrote Im = x y + y x
            # (and t + t, 2 t) as x (2 y), which overflows where the product is finite
            return self.multiply(x, x)
        return self._real_square(x)
    square.routes_halves = True

    def _map(self, key, fn, inputs, out_dtype=None, shape=None, params=(), param_dtypes=()):
        """``out = fn(*loads, *params)`` elementwise over the broadcast shape of ``inputs``."""
        if shape is None:
            shape = broadcast_shape(*[a.shape for a in inputs]) if inputs else ()
        dts = tuple(a.ir for a in inputs)
        kkey = (key, dts, out_dtype, param_dtypes)
        if out_dtype is None:
            probe = _K.get(("probe",) + kkey)
            if probe is None:
                val = fn(*[ir.load(i, dt) for i, dt in enumerate(dts)],
                         *[ir.Param(j, p) for j, p in enumerate(param_dtypes)])
                probe = _K[("probe",) + kkey] = val.dtype
            out_dtype = np_of(probe)
        out = self._new(shape, out_dtype)
        if out.size == 0:
            return out
        sts = [broadcast_strides(a, shape) for a in inputs] + [out.strides]
        cshape, csts = collapse(shape, sts)
        self._run_map(kkey, fn, inputs, out, cshape, csts, params, param_dtypes)
        return out

    def _run_map(self, kkey, fn, inputs, out, cshape, csts, params=(), param_dtypes=()):
        nd = len(cshape)
        arrays = list(inputs) + [out]
        if nd == 1 and cshape[0] >= _base.VEC4_MIN:
            mask = self._vec4_mask(arrays, csts)
            if mask is not None and mask[-1]:
                # unit-stride 4-byte operands: the vec4 kernel (16-byte loads/stores, n % 4 tail)
                k = _K.get((kkey, "vec4", mask))
                if k is None:
                    base = self._map_kernel(kkey, fn, inputs, out, 1, param_dtypes)
                    k = _K[(kkey, "vec4", mask)] = ir.Kernel(base.name + "_v4", base.args, base.params, 1, base.body,
                                                             (("vec4", mask),))
                self._launch(k, arrays, csts, cshape, params)
                return
        k = _K.get((kkey, nd))
        if k is None:
            k = _K[(kkey, nd)] = self._map_kernel(kkey, fn, inputs, out, nd, param_dtypes)
        self._launch(k, arrays, csts, cshape, params)

    def _vec4_mask(self, arrays, strides):
        """For 1-D operands with ``strides``: per operand True (read/written as vec4: unit stride,
        4-byte storage, element offset a multiple of 4) or False (broadcast, stride 0); None when
        an operand is neither.  Depends on the views only (elementwise plans replay it); pooled
        buffers hold whole vec4s (size classes, capped at a binding limit rounded to 16 bytes)."""
        isz = self.ctx.renderer.itemsize
        mask = []
        for a, s in zip(arrays, strides):
            if s[0] == 0:
                mask.append(False)
            elif s[0] == 1 and isz[a.ir] == 4 and a.offset % 4 == 0:
                mask.append(True)
            else:
                return None
        return tuple(mask)

    def _map_kernel(self, kkey, fn, inputs, out, nd, param_dtypes):
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
        return k

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
        pkey = (_COPY, dt, x.ir, x.shape, x.strides, x.offset)
        return self._replayed(pkey, (x.st,)) or self._planned(
            pkey, (x,), lambda: self._map(_COPY, _identity, [x], dt))


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
        return self._map(("clip", has), fn, ins, x.dtype)     # the frontend allows broadcasting bounds

    def where(self, condition, x1, x2):
        return self._map(("where",), lambda c, a, b: ir.select(c, a, b), [condition, x1, x2])
