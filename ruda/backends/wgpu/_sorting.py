"""Sorting and sets of the wgpu backend: a stable bitonic network on (key, index) pairs (NaN
the largest value), searchsorted (a binary search whose loop bounds are runtime parameters),
isin and the unique_* family (sort, flag run starts, prefix count, compaction).
"""
import math

import numpy as np

from ruda import _dtypes
from ruda.backends.wgpu._array import IR, contiguous_strides, permute
from ruda.backends.wgpu._base import _K, I
from ruda.runtime import ir


def _order(op, a, b):
    """IR ``a op b`` for op lt/le/gt/ge; complex values compare lexicographically (real, imag),
    the order sort gives them for unique_* and isin."""
    if a.dtype not in ir.COMPLEX:
        return ir.op(op, a, b)
    ra, rb = ir.op("real", a), ir.op("real", b)
    return ir.op("or", ir.op(op[0] + "t", ra, rb),
                 ir.op("and", ir.op("eq", ra, rb), ir.op(op, ir.op("imag", a), ir.op("imag", b))))


def _bsearch(v, dt, right):
    """IR: how many of the sorted values (arg 0, flat) sort before ``v`` (``right``: at or
    before), NaN last.  A loop over runtime params (n, steps = n.bit_length(), top = 1 << (steps
    - 1)): step ``k`` tries ``pos + (top >> k)``, so the kernel is the same for every n."""
    pos, k = ir.Var("pos"), ir.Var("k")
    n, steps, top = (ir.Param(i, I) for i in range(3))
    cand = ir.op("add", pos, ir.op("shr", top, k))
    a = ir.Load(0, ir.Flat(ir.op("sub", ir.op("min", cand, n), ir.Const(1, I))), dt)
    if dt in ir.FLOATS or dt in ir.COMPLEX:     # complex: isin only
        na, nv = ir.op("isnan", a), ir.op("isnan", v)
        if right:
            ok = ir.op("or", nv, ir.op("and", ir.op("not", na), _order("le", a, v)))
        else:
            ok = ir.op("and", ir.op("not", na), ir.op("or", nv, _order("lt", a, v)))
    else:
        ok = ir.op("le" if right else "lt", a, v)
    ok = ir.op("and", ir.op("le", cand, n), ok)
    return ir.iterate(k, ir.Const(0, I), steps, pos, ir.Const(0, I), ir.select(ok, cand, pos))


class SortingOps:
    """Sorting, searching and sets (mixin of the backend)."""

    def _before(self, a, ia, b, ib, n, descending):
        """IR bool: (a, ia) sorts before (b, ib), ties by index (stable); padding (index >= n)
        last; NaN is the largest value (last ascending, first descending, as NumPy's flip)."""
        pa = ir.op("ge", ia, n)
        pb = ir.op("ge", ib, n)
        lt_i = ir.op("lt", ia, ib)
        cmp = _order("gt" if descending else "lt", a, b)
        v = ir.op("or", cmp, ir.op("and", ir.op("eq", a, b), lt_i))
        if a.dtype in ir.COMPLEX or a.dtype in ir.FLOATS:
            na, nb_ = ir.op("isnan", a), ir.op("isnan", b)
            v = ir.select(ir.op("and", na, nb_), lt_i,
                          ir.select(na, ir.Const(bool(descending), "bool"),
                                    ir.select(nb_, ir.Const(not descending, "bool"), v)))
        both_pad = ir.op("and", pa, pb)
        return ir.select(both_pad, lt_i, ir.select(pa, ir.Const(False, "bool"), ir.select(pb, ir.Const(True, "bool"), v)))

    def _sort_pairs(self, x, axis, descending):
        """(keys, idx) sorted along ``axis``: views of shape x.shape, idx int32."""
        order = [d for d in range(x.ndim) if d != axis] + [axis]
        xv = permute(x, order)
        n = xv.shape[-1]
        rows = math.prod(xv.shape[:-1])
        P = 1 << max(0, (n - 1).bit_length())
        keys = self._new((rows, P), x.dtype)
        idx = self._new((rows, P), np.int32)
        xr = self.reshape(xv, (rows, n))
        # init: keys[r, i] = x[r, min(i, n-1)], idx = i
        kkey = ("sort_init", x.ir)
        k = _K.get(kkey)
        if k is None:
            c0, c1 = ir.Coord(0), ir.Coord(1)
            cl = ir.op("min", c1, ir.op("sub", ir.Param(0, I), ir.Const(1, I)))
            val = ir.Load(0, ir.Strided((c0, cl)), x.ir)
            k = _K[kkey] = ir.Kernel("sort_init", (ir.Arg("x", x.ir, 2), ir.Arg("k", x.ir, 2, True),
                                                   ir.Arg("i", "i32", 2, True)), (I,), 2,
                                     ir.Map((ir.Store(1, ir.Strided(), val), ir.Store(2, ir.Strided(), c1))))
        self._launch(k, [xr, keys, idx], [xr.strides, keys.strides, idx.strides], (rows, P), (n,))
        if P > 1:
            kkey = ("sort_stage", x.ir, descending)
            k = _K.get(kkey)
            if k is None:
                r, t = ir.Coord(0), ir.Coord(1)
                j, kk, nn, P_ = (ir.Param(i, I) for i in range(4))
                lo = ir.op("add", ir.op("mul", ir.op("floordiv", t, j), ir.op("mul", j, ir.Const(2, I))),
                           ir.op("mod", t, j))
                hi = ir.op("add", lo, j)
                base = ir.op("mul", r, P_)
                flo, fhi = ir.Flat(ir.op("add", base, lo)), ir.Flat(ir.op("add", base, hi))
                kl, kh = ir.Load(0, flo, x.ir), ir.Load(0, fhi, x.ir)
                il, ih = ir.Load(1, flo, "i32"), ir.Load(1, fhi, "i32")
                asc = ir.op("eq", ir.op("and", lo, kk), ir.Const(0, I))
                swap = ir.select(asc, self._before(kh, ih, kl, il, nn, descending),
                                 self._before(kl, il, kh, ih, nn, descending))
                stores = (ir.Store(0, flo, ir.select(swap, kh, kl)), ir.Store(0, fhi, ir.select(swap, kl, kh)),
                          ir.Store(1, flo, ir.select(swap, ih, il)), ir.Store(1, fhi, ir.select(swap, il, ih)))
                k = _K[kkey] = ir.Kernel("sort_stage", (ir.Arg("k", x.ir, 0, True), ir.Arg("i", "i32", 0, True)),
                                         (I, I, I, I), 2, ir.Map(stores))
            kk = 2
            while kk <= P:
                j = kk // 2
                while j >= 1:
                    self._launch(k, [keys, idx], [(), ()], (rows, P // 2), (j, kk, n, P))
                    j //= 2
                kk *= 2
        shp = xv.shape
        kv = keys.view(shp, tuple(contiguous_strides(shp[:-1] + (P,))[:-1]) + (1,), 0) if shp else keys
        iv = idx.view(shp, tuple(contiguous_strides(shp[:-1] + (P,))[:-1]) + (1,), 0) if shp else idx
        inv = [order.index(d) for d in range(x.ndim)]
        return permute(kv, inv), permute(iv, inv)

    def sort(self, x, axis=-1, descending=False, stable=True):
        if x.size == 0:
            return self.copy(x)
        keys, _ = self._sort_pairs(x, axis % x.ndim, descending)
        return self.copy(keys)

    def argsort(self, x, axis=-1, descending=False, stable=True):
        if x.size == 0:
            return self._new(x.shape, self._index_dtype())
        _, idx = self._sort_pairs(x, axis % x.ndim, descending)
        return self.copy(idx, self._index_dtype())

    def searchsorted(self, x1, x2, side="left", sorter=None):
        idt = self._index_dtype()
        if sorter is not None:
            x1 = self.take(x1, sorter, axis=0)
        x1 = self._contig(x1)
        n = x1.shape[0]
        out = self._new(x2.shape, idt)
        if out.size == 0 or n == 0:
            return self.full(x2.shape, 0, idt) if out.size else out
        right = side == "right"
        dt, nd = x1.ir, x2.ndim
        kkey = ("searchsorted", dt, right, nd, IR[idt])
        k = _K.get(kkey)
        if k is None:
            val = ir.cast(_bsearch(ir.load(1, dt), dt, right), IR[idt])
            k = _K[kkey] = ir.Kernel("searchsorted", (ir.Arg("s", dt, 0), ir.Arg("v", dt, nd), ir.Arg("o", IR[idt], nd, True)),
                                     (I, I, I), nd, ir.Map((ir.Store(2, ir.Strided(), val),)))
        steps = n.bit_length()
        self._launch(k, [x1, x2, out], [(), x2.strides, out.strides], x2.shape, (n, steps, 1 << (steps - 1)))
        return out

    def isin(self, x1, x2, invert=False):
        b = self._contig(x2)
        flat = b.view((b.size,), (1,), b.offset)
        if flat.size == 0:
            return self.full(x1.shape, bool(invert), _dtypes.bool)
        s = self.sort(flat)
        pos = self.searchsorted(s, x1, side="left")
        n = flat.size
        dt = x1.ir

        def fn(v, p, nn):
            pc = ir.op("min", ir.cast(p, I), ir.op("sub", nn, ir.Const(1, I)))
            hit = ir.op("and", ir.op("lt", ir.cast(p, I), nn),
                        ir.op("eq", ir.Load(2, ir.Flat(pc), dt), v))
            if dt in ir.FLOATS:
                hit = ir.op("and", hit, ir.op("not", ir.op("isnan", v)))
            return ir.op("not", hit) if invert else hit
        out = self._new(x1.shape, _dtypes.bool)
        if out.size == 0:
            return out
        nd = x1.ndim
        kkey = ("isin", dt, nd, pos.ir, invert)
        k = _K.get(kkey)
        if k is None:
            val = fn(ir.load(0, dt), ir.load(1, pos.ir), ir.Param(0, I))
            k = _K[kkey] = ir.Kernel("isin", (ir.Arg("v", dt, nd), ir.Arg("p", pos.ir, nd), ir.Arg("s", dt, 0),
                                              ir.Arg("o", "bool", nd, True)), (I,), nd, ir.Map((ir.Store(3, ir.Strided(), val),)))
        self._launch(k, [x1, pos, s, out], [x1.strides, pos.strides, (), out.strides], x1.shape, (n,))
        return out

    def _unique_core(self, x):
        """sorted values, perm (i32), run-start flags positions (i32 inclusive scan), count."""
        xc = self._contig(x)
        flat = xc.view((x.size,), (1,), xc.offset)
        keys, perm = self._sort_pairs(flat, 0, False)
        keys, perm = self.copy(keys), self.copy(perm)
        n = x.size
        dt = x.ir

        def flag(c):
            i = c[0]
            prev = ir.Load(0, ir.Flat(ir.op("max", ir.op("sub", i, ir.Const(1, I)), ir.Const(0, I))), dt)
            cur = ir.Load(0, ir.Flat(i), dt)
            new = ir.op("ne", cur, prev)
            if dt in ir.FLOATS:
                new = ir.op("or", new, ir.op("isnan", cur))
            return ir.op("or", ir.op("eq", i, ir.Const(0, I)), new)
        flags = self._new((n,), _dtypes.bool)
        kkey = ("uflag", dt)
        k = _K.get(kkey)
        if k is None:
            k = _K[kkey] = ir.Kernel("uflag", (ir.Arg("s", dt, 0), ir.Arg("f", "bool", 1, True)), (), 1,
                                     ir.Map((ir.Store(1, ir.Strided(), flag([ir.Coord(0)])),)))
        self._launch(k, [keys, flags], [(), flags.strides], (n,))
        pos, count = self._positions(flags)
        return keys, perm, flags, pos, count

    def _compact(self, src, flags, pos, count, key, value_fn=None, dtype=None):
        """out[pos[i]-1] = value(i) where flags[i]."""
        dtype = np.dtype(dtype or src.dtype)
        out = self._new((count,), dtype)
        n = flags.shape[0]
        kkey = ("compact", key, src.ir, IR[dtype])
        k = _K.get(kkey)
        if k is None:
            i = ir.Coord(0)
            v = value_fn(i) if value_fn else ir.Load(0, ir.Flat(i), src.ir)
            p = ir.op("sub", ir.Load(2, ir.Flat(i), "i32"), ir.Const(1, "i32"))
            st = ir.Store(3, ir.Flat(p), ir.cast(v, IR[dtype]), when=ir.Load(1, ir.Flat(i), "bool"))
            k = _K[kkey] = ir.Kernel("compact", (ir.Arg("s", src.ir, 0), ir.Arg("f", "bool", 0), ir.Arg("p", "i32", 0),
                                                 ir.Arg("o", IR[dtype], 0, True)), (), 1, ir.Map((st,)))
        if count:
            self._launch(k, [src, flags, pos, out], [(), (), (), ()], (n,))
        return out

    def unique_values(self, x):
        if x.size == 0:
            return self._new((0,), x.dtype)
        keys, perm, flags, pos, count = self._unique_core(x)
        return self._compact(keys, flags, pos, count, "vals")

    def _unique_starts(self, keys, flags, pos, count):
        return self._compact(keys, flags, pos, count, "starts", value_fn=lambda i: i, dtype=np.int32)

    def _counts(self, starts, n):
        idt = self._index_dtype()
        m = starts.shape[0]
        out = self._new((m,), idt)
        if m:
            kkey = ("ucounts", IR[idt])
            k = _K.get(kkey)
            if k is None:
                j = ir.Coord(0)
                nxt = ir.select(ir.op("lt", ir.op("add", j, ir.Const(1, I)), ir.Param(0, I)),
                                ir.Load(0, ir.Flat(ir.op("min", ir.op("add", j, ir.Const(1, I)),
                                                         ir.op("sub", ir.Param(0, I), ir.Const(1, I)))), "i32"),
                                ir.Param(1, I))
                v = ir.cast(ir.op("sub", nxt, ir.Load(0, ir.Flat(j), "i32")), IR[idt])
                k = _K[kkey] = ir.Kernel("ucounts", (ir.Arg("s", "i32", 0), ir.Arg("o", IR[idt], 1, True)), (I, I), 1,
                                         ir.Map((ir.Store(1, ir.Strided(), v),)))
            self._launch(k, [starts, out], [(), out.strides], (m,), (m, n))
        return out

    def _inverse(self, perm, pos, shape):
        idt = self._index_dtype()
        n = perm.shape[0]
        out = self._new((n,), idt)
        kkey = ("uinverse", IR[idt])
        k = _K.get(kkey)
        if k is None:
            i = ir.Coord(0)
            st = ir.Store(2, ir.Flat(ir.Load(0, ir.Flat(i), "i32")),
                          ir.cast(ir.op("sub", ir.Load(1, ir.Flat(i), "i32"), ir.Const(1, "i32")), IR[idt]))
            k = _K[kkey] = ir.Kernel("uinverse", (ir.Arg("perm", "i32", 0), ir.Arg("p", "i32", 0),
                                                  ir.Arg("o", IR[idt], 0, True)), (), 1, ir.Map((st,)))
        if n:
            self._launch(k, [perm, pos, out], [(), (), ()], (n,))
        return out.view(shape, contiguous_strides(shape), 0)

    def unique_counts(self, x):
        if x.size == 0:
            return self._new((0,), x.dtype), self._new((0,), self._index_dtype())
        keys, perm, flags, pos, count = self._unique_core(x)
        vals = self._compact(keys, flags, pos, count, "vals")
        starts = self._unique_starts(keys, flags, pos, count)
        return vals, self._counts(starts, x.size)

    def unique_inverse(self, x):
        if x.size == 0:
            return self._new((0,), x.dtype), self._new(x.shape, self._index_dtype())
        keys, perm, flags, pos, count = self._unique_core(x)
        vals = self._compact(keys, flags, pos, count, "vals")
        return vals, self._inverse(perm, pos, x.shape)

    def unique_all(self, x):
        idt = self._index_dtype()
        if x.size == 0:
            e = self._new((0,), idt)
            return self._new((0,), x.dtype), e, self._new(x.shape, idt), e
        keys, perm, flags, pos, count = self._unique_core(x)
        vals = self._compact(keys, flags, pos, count, "vals")
        starts = self._unique_starts(keys, flags, pos, count)
        first = self._compact(perm, flags, pos, count, "first", dtype=idt)
        return vals, first, self._inverse(perm, pos, x.shape), self._counts(starts, x.size)
