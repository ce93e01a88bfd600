"""Linear algebra of the wgpu backend: the generic matmul kernel (any dtype; float32/float16
take the tuned kernels of ``_matmul``), tensordot, vecdot, norms, diagonal, trace, cross,
outer and matrix power.
"""
import math

import numpy as np

from ruda.backends.wgpu._array import (basic_index, broadcast_shape, broadcast_strides,
                                       contiguous_strides, permute)
from ruda.backends.wgpu._base import _K, I, np_of
from ruda.runtime import ir


def _as_matrices(x1, x2):
    """matmul operands as (stacks of) matrices: 1-D ones become a row / a column view.

    Returns (a, b, x1 was 1-D, x2 was 1-D, batch shape, M, K, N)."""
    a, b = x1, x2
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = a.view((1, a.shape[0]), (0, a.strides[0]), a.offset)
    if vb:
        b = b.view((b.shape[0], 1), (b.strides[0], 0), b.offset)
    M, K = a.shape[-2:]
    return a, b, va, vb, broadcast_shape(a.shape[:-2], b.shape[:-2]), M, K, b.shape[-1]


def _drop_vector_dims(out, va, vb):
    """The matmul result without the unit dimensions that 1-D operands were given."""
    if not (va or vb):
        return out
    s = out.shape[:-2] + (() if va else out.shape[-2:-1]) + (() if vb else out.shape[-1:])
    return out.view(s, contiguous_strides(s), 0)


class LinalgOps:
    """Linear algebra (mixin of the backend; decompositions are host fallbacks)."""

    def matmul(self, x1, x2):
        a, b, va, vb, batch, M, K, N = _as_matrices(x1, x2)
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
        return _drop_vector_dims(out, va, vb)

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
        shape = broadcast_shape(x1.shape, x2.shape)
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
        shape = broadcast_shape(x1.shape, x2.shape)
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
        rdt = np_of(ir.real_of(x.ir))
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
            with np.errstate(over="ignore"):     # p, 1 / p as the computing dtype holds them (inf past its range)
                p, q = (float(np.array(v, np.float32 if r == "f32" else np.float64)) for v in (ord, 1.0 / ord))
            s = self._reduce(x, axes, "sum", r, rdt, keepdims,
                             value=lambda a: ir.op("pow", ir.op("abs", a), ir.Const(p, r)), key=("nrm_p", p))
            res = self._map(("pow_c", q), lambda a: ir.op("pow", a, ir.Const(q, r)), [s])
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

