"""Indexing of the wgpu backend: basic indexing (views), integer-array and boolean-mask
get and set (gather and scatter kernels over computed coordinates), take, take_along_axis and
nonzero (a prefix count, then compaction; its size is the one value read back).
"""
import math

import numpy as np

from ruda.backends import store_shape
from ruda.backends.wgpu._array import (IR, WArray, basic_index, broadcast_shape, broadcast_strides,
                                       contiguous_strides, reshape_view)
from ruda.backends.wgpu._base import _K, I
from ruda.backends.wgpu import _reductions
from ruda.runtime import ir


def _fitted(value, shape):
    """``value`` viewed for a store into ``shape`` (``store_shape``'s rule), else ValueError."""
    vs = store_shape(value.shape, shape)
    return value.view(vs, value.strides[value.ndim - len(vs):], value.offset)


_DEFAULT_STORAGE_BUFFERS = 8    # WebGPU's default maxStorageBuffersPerShaderStage


def _from_end(raw, n):
    """An INDEX value for an axis of ``n`` (an INDEX expression), a negative one counted from
    the end."""
    return ir.select(ir.op("lt", raw, ir.Const(0, I)), ir.op("add", raw, n), raw)


def _in_range(raw, n):
    """An index value of any integer dtype for an axis of ``n`` (an INDEX expression): its
    coordinate (negative ones counted from the end, out-of-range ones 0) and whether it was in
    range -- compared before a 64-bit or u32 value is narrowed to INDEX, so 2**32 + 1 is not 1."""
    t = raw.dtype
    if t == I or ir.BITS[t] < 32:
        raw = ir.cast(raw, I)
        ok = ir.op("and", ir.op("ge", raw, ir.op("neg", n)), ir.op("lt", raw, n))
    else:
        nt = ir.cast(n, t)
        ok = ir.op("lt", raw, nt)
        if t in ir.SIGNED:
            ok = ir.op("and", ok, ir.op("ge", raw, ir.op("neg", nt)))
        raw = ir.cast(raw, I)
    return ir.select(ok, _from_end(raw, n), ir.Const(0, I)), ok


class IndexingOps:
    """Indexing (mixin of the backend)."""

    def _bool_scalars(self, key):
        """Replace Python bools / 0-d bool arrays by None; positions of the False ones (empty axis)."""
        if not any(isinstance(k, bool) or (isinstance(k, WArray) and k.ndim == 0 and k.dtype.kind == "b")
                   for k in key):
            return key, ()
        out, empty, newdim = [], [], 0
        for k in key:
            if isinstance(k, WArray) and k.ndim == 0 and k.dtype.kind == "b":
                k = bool(self.to_host(k))      # size readback: the result shape depends on it
            if isinstance(k, bool):
                if not k:
                    empty.append(newdim)
                out.append(None)
                newdim += 1
            else:
                out.append(k)
                if k is not Ellipsis and not isinstance(k, int):
                    newdim += 1
        return tuple(out), tuple(empty)

    def _bool_scalars_as_arrays(self, x, key):
        """``(x', key')`` for a key mixing bool scalars with arrays or an ellipsis: NumPy reads such
        a scalar as a new axis indexed by an index array of length 1 (True) or 0 (False), which
        broadcasts with the other index arrays; ``x'`` is the view with every new axis in place
        and ``key'`` indexes it. Other keys come back as they are."""
        def bool_scalar(k):
            return isinstance(k, bool) or (isinstance(k, WArray) and k.ndim == 0 and k.dtype.kind == "b")
        bools = sum(map(bool_scalar, key))
        # NumPy's rule: bool scalars are advanced indices, which broadcast together, make ints
        # advanced too, and move to the front when separated; one alone among slices and None
        # is a new axis in place (_bool_scalars)
        if not bools or (bools == 1 and not any(
                k is Ellipsis or (isinstance(k, int) and not isinstance(k, bool))
                or (isinstance(k, WArray) and not bool_scalar(k))
                for k in key)):
            return x, key
        view, out = [], []
        for k in key:
            if bool_scalar(k):
                hit = k if isinstance(k, bool) else bool(self.to_host(k))
                view.append(None)
                out.append(self.full((int(hit),), 0, np.int32))
            elif k is None:
                view.append(None)
                out.append(slice(None))
            elif k is Ellipsis:
                view.append(k)
                out.append(k)
            else:
                n = k.ndim if isinstance(k, WArray) and k.dtype.kind == "b" else 1
                view.extend([slice(None)] * n)
                out.append(k)
        return basic_index(x, tuple(view)), tuple(out)

    def _wide_mask(self, x, key):
        """For ``x[mask]`` with a mask of more axes than one kernel may bind index arrays for:
        (x with the mask's axes merged, its mask flattened), else None."""
        if len(key) != 1 or not isinstance(key[0], WArray) or key[0].dtype.kind != "b" or \
                key[0].ndim + 2 <= _DEFAULT_STORAGE_BUFFERS:
            return None
        k = key[0].ndim
        shape = (math.prod(x.shape[:k]),) + x.shape[k:]
        return shape, self.reshape(key[0], (shape[0],))

    def getitem(self, x, key):
        if not isinstance(key, tuple):
            key = (key,)
        wide = self._wide_mask(x, key)
        if wide is not None:
            return self.getitem(self.reshape(x, wide[0]), (wide[1],))
        x, key = self._bool_scalars_as_arrays(x, key)
        key, empty = self._bool_scalars(key)
        if empty:
            r = self.getitem(x, key)
            shape = list(r.shape)
            for d in empty:
                shape[d] = 0
            return r.view(shape, r.strides, r.offset)
        if all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key):
            return basic_index(x, key)
        return self._advanced_getitem(x, key)

    def setitem(self, x, key, value):
        if not isinstance(key, tuple):
            key = (key,)
        wide = self._wide_mask(x, key)
        if wide is not None:
            merged = reshape_view(x, wide[0])
            if merged is not None:
                return self.setitem(merged, (wide[1],), value)
            merged = self.reshape(self.copy(x), wide[0])      # set in a copy, then write back
            self.setitem(merged, (wide[1],), value)
            self._write(x, lambda v: v, [merged.view(x.shape, contiguous_strides(x.shape),
                                                     merged.offset)], ("copy",))
            return
        x, key = self._bool_scalars_as_arrays(x, key)
        key, empty = self._bool_scalars(key)
        if empty:                                   # x[False] = v selects nothing
            if all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key):
                shape = list(self.getitem(x, key).shape)
                for d in empty:
                    shape[d] = 0
                _fitted(value, tuple(shape))
            return
        if all(k is None or k is Ellipsis or isinstance(k, (int, slice)) for k in key):
            dst = basic_index(x, key)
            value = _fitted(value, dst.shape)
            if value.dtype != x.dtype:
                value = self.astype(value, x.dtype)
            self._write(dst, lambda v: v, [value], ("copy",))
            return
        self._advanced_setitem(x, key, value)

    def _expand_key(self, x, key):
        """Key entries with Ellipsis expanded and boolean arrays turned into integer arrays."""
        used = 0
        for k in key:
            if k is None or k is Ellipsis or isinstance(k, bool):
                continue
            used += k.ndim if isinstance(k, WArray) and k.dtype.kind == "b" else 1
        out = []
        pos = 0
        for k in key:
            if k is Ellipsis:
                out.extend([slice(None)] * (x.ndim - used))
                pos += x.ndim - used
            elif isinstance(k, WArray) and k.dtype.kind == "b":
                dims = x.shape[pos:pos + k.ndim]
                if len(dims) < k.ndim or any(ks not in (xs, 0) for ks, xs in zip(k.shape, dims)):
                    raise IndexError(f"boolean index of shape {k.shape} does not match the indexed "
                                     f"dimensions {tuple(dims)} of an array of shape {x.shape}")
                pos += k.ndim
                if k.ndim == 0:
                    raise NotImplementedError("ruda: 'getitem' with a 0-d boolean array index is not "
                                              "implemented on device 'wgpu'")
                out.extend(self.nonzero(k))
            elif isinstance(k, bool):
                raise NotImplementedError("ruda: 'getitem' with a Python bool index is not implemented "
                                          "on device 'wgpu'")
            else:
                out.append(k)
                if k is not None:
                    pos += 1
        n_used = sum(1 for k in out if k is not None)
        out.extend([slice(None)] * (x.ndim - n_used))
        return out

    def _advanced_plan(self, x, key):
        """(view, adv, out_shape, B, bpos): adv = [(vdim, index)], index a WArray or an int."""
        # NumPy's rule reads the key as written: advanced indices with anything between them, an
        # ellipsis of no axes included, are separated (their axes go first)
        arrays = any(isinstance(k, WArray) for k in key)      # then ints are advanced too
        written = [i for i, k in enumerate(key) if isinstance(k, WArray) or (arrays and isinstance(k, int))]
        apart = bool(written) and written[-1] - written[0] + 1 != len(written)
        key = self._expand_key(x, key)
        arrays = [k for k in key if isinstance(k, WArray)]
        bkey, adv, vd = [], [], 0
        for k in key:
            if isinstance(k, WArray) or (arrays and isinstance(k, int)):
                bkey.append(slice(None))
                adv.append((vd, k))
                vd += 1
            else:
                bkey.append(k)
                if not isinstance(k, int):
                    vd += 1
        v = basic_index(x, tuple(bkey))
        try:
            B = broadcast_shape(*[a.shape for a in arrays])
        except ValueError:
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             "with shapes " + " ".join(str(a.shape) for a in arrays)) from None
        pos = [d for d, _ in adv]
        adjacent = pos == list(range(pos[0], pos[0] + len(pos))) and not apart
        rest = [d for d in range(v.ndim) if d not in pos]
        bpos = sum(1 for d in rest if d < pos[0]) if adjacent else 0
        out_shape = tuple(v.shape[d] for d in rest[:bpos]) + B + tuple(v.shape[d] for d in rest[bpos:])
        return v, adv, rest, out_shape, B, bpos

    def _adv_kernel(self, v, adv, rest, out_shape, B, bpos, value=None):
        """Gather (value None) or scatter kernel for an advanced index; returns (kernel, arrays, strides, params)."""
        nd = len(out_shape)
        nb = len(B)
        idx_arrays = [k for _, k in adv if isinstance(k, WArray)]
        # index views over the output coordinates
        iviews = []
        for a in idx_arrays:
            bs = broadcast_strides(a, B)
            strides = [0] * nd
            strides[bpos:bpos + nb] = bs
            iviews.append(a.view(out_shape, strides, a.offset))
        kinds = tuple("a" if isinstance(k, WArray) else "i" for _, k in adv)
        sig = (tuple(d for d, _ in adv), kinds, tuple(a.ir for a in idx_arrays), v.ir, v.ndim, nd, bpos, nb,
               None if value is None else value.ir)
        kkey = ("adv", sig)
        k = _K.get(kkey)
        if k is None:
            c = [ir.Coord(d) for d in range(nd)]
            rest_coords = c[:bpos] + c[bpos + nb:]
            vc = [None] * v.ndim
            for d, rc in zip(rest, rest_coords):
                vc[d] = rc
            ai = 0
            ok = None        # every index array's value in range (Python ints are checked already)
            for j, (d, kk) in enumerate(adv):
                n = ir.Param(len(adv) + j, I)
                if kinds[j] == "a":
                    vc[d], ok_j = _in_range(ir.Load(1 + ai, ir.Strided(), idx_arrays[ai].ir), n)
                    ok = ok_j if ok is None else ir.op("and", ok, ok_j)
                    ai += 1
                else:
                    vc[d] = _from_end(ir.Param(j, I), n)
            args = (ir.Arg("v", v.ir, v.ndim, value is not None),) + \
                tuple(ir.Arg(f"i{i}", a.ir, nd) for i, a in enumerate(idx_arrays))
            if value is None:     # an out-of-range index reads 0
                args += (ir.Arg("out", v.ir, nd, True),)
                got = ir.Load(0, ir.Strided(tuple(vc)), v.ir)
                st = ir.Store(len(args) - 1, ir.Strided(),
                              got if ok is None else ir.select(ok, got, ir.Const(0, v.ir)))
            else:                 # and its write is dropped
                args += (ir.Arg("val", v.ir, nd),)
                st = ir.Store(0, ir.Strided(tuple(vc)), ir.Load(len(args) - 1, ir.Strided(), v.ir), when=ok)
            params = (I,) * len(adv) + (I,) * len(adv)
            k = _K[kkey] = ir.Kernel("gather" if value is None else "scatter", args, params, nd, ir.Map((st,)))
        pvals = tuple(0 if isinstance(kk, WArray) else int(kk) for _, kk in adv) + \
            tuple(v.shape[d] for d, _ in adv)
        return k, iviews, pvals

    def _advanced_getitem(self, x, key):
        v, adv, rest, out_shape, B, bpos = self._advanced_plan(x, key)
        out = self._new(out_shape, x.dtype)
        if out.size == 0:
            return out
        k, iviews, pvals = self._adv_kernel(v, adv, rest, out_shape, B, bpos)
        arrays = [v] + iviews + [out]
        self._launch(k, arrays, [a.strides for a in arrays], out_shape, pvals)
        return out

    def _advanced_setitem(self, x, key, value):
        if value.dtype != x.dtype:
            value = self.astype(value, x.dtype)
        if value.st is x.st:
            value = self.copy(value)
        # an index array or mask that views x's own buffer (x[x[:2]] = 9): a copy, since one
        # kernel cannot bind a buffer for reading and writing at once
        key = tuple(self.copy(k) if isinstance(k, WArray) and k.st is x.st else k for k in key)
        if len(key) == 1 and isinstance(key[0], WArray) and key[0].dtype.kind == "b" and \
                key[0].shape == x.shape and value.size == 1:
            mask = key[0]
            val = value.view(x.shape, (0,) * x.ndim, value.offset)
            kkey = ("mask_fill", x.ir, x.ndim)
            k = _K.get(kkey)
            nd = x.ndim
            if k is None:
                st = ir.Store(0, ir.Strided(), ir.load(2, x.ir), when=ir.load(1, "bool"))
                k = _K[kkey] = ir.Kernel("mask_fill", (ir.Arg("x", x.ir, nd, True), ir.Arg("m", "bool", nd),
                                                       ir.Arg("v", x.ir, nd)), (), nd, ir.Map((st,)))
            if x.size:
                self._launch(k, [x, mask, val], [x.strides, mask.strides, val.strides], x.shape)
            return
        v, adv, rest, out_shape, B, bpos = self._advanced_plan(x, key)
        value = _fitted(value, out_shape)
        if math.prod(out_shape) == 0:
            return
        val = self.broadcast_to(value, out_shape)
        k, iviews, pvals = self._adv_kernel(v, adv, rest, out_shape, B, bpos, value=val)
        arrays = [v] + iviews + [val]
        self._launch(k, arrays, [a.strides for a in arrays], out_shape, pvals)

    def take(self, x, indices, axis=0):
        key = (slice(None),) * axis + (indices,)
        return self._advanced_getitem(x, key)

    def take_along_axis(self, x, indices, axis=-1):
        nd = x.ndim
        axis %= nd
        shape = list(broadcast_shape(tuple(1 if d == axis else n for d, n in enumerate(x.shape)),
                             tuple(1 if d == axis else n for d, n in enumerate(indices.shape))))
        shape[axis] = indices.shape[axis]
        shape = tuple(shape)
        iv = indices.view(shape, broadcast_strides(indices, shape), indices.offset)
        n = x.shape[axis]
        xs = list(broadcast_strides(x.view(tuple(1 if d == axis else s for d, s in enumerate(x.shape)),
                                           x.strides, x.offset), tuple(1 if d == axis else s for d, s in enumerate(shape))))
        xs[axis] = x.strides[axis]
        xv = x.view(tuple(shape[d] if d != axis else n for d in range(nd)), xs, x.offset)

        def coords(c, loads, ps):
            cc = list(c)
            cc[axis], ok = _in_range(loads[0], ps[0])
            return cc, ok
        return self._gather_coords(xv, shape, coords, ("tal", axis), extra=[iv], params=(n,),
                                   param_dtypes=(I,), masked=True)

    def _positions(self, mask_flat):
        """Inclusive prefix count (i32) of a contiguous 1-D bool/numeric array, and the total."""
        n = mask_flat.shape[0]
        if n > _reductions.SCAN_ROW:        # blocked (see SCAN_ROW)
            ones = self._map(("posv",), lambda m: ir.cast(ir.cast(m, "bool"), "i32"), [mask_flat])
            pos = self._scan(ones, 0, "add", np.int32, False)
            return pos, int(self.to_host(basic_index(pos, (n - 1,))))   # size readback
        pos = self._new((n,), np.int32)
        kkey = ("posscan", mask_flat.ir)
        k = _K.get(kkey)
        if k is None:
            v = ir.cast(ir.cast(ir.load(0, mask_flat.ir), "bool"), "i32")
            k = _K[kkey] = ir.Kernel("posscan", (ir.Arg("m", mask_flat.ir, 1), ir.Arg("p", "i32", 1, True)), (), 1,
                                     ir.Scan("add", v, 1))
        self._launch(k, [mask_flat, pos], [mask_flat.strides, pos.strides], (n,))
        total = int(self.to_host(basic_index(pos, (n - 1,)))) if n else 0   # size readback
        return pos, total

    def nonzero(self, x):
        idt = self._index_dtype()
        nd = x.ndim
        if x.size == 0:
            return tuple(self._new((0,), idt) for _ in range(nd))
        xc = self._contig(x)
        flat = xc.view((x.size,), (1,), xc.offset)
        if nd + 2 > _DEFAULT_STORAGE_BUFFERS:
            # one output per axis would pass the bindings every adapter allows: the flat
            # positions, then each axis' coordinate from them
            (f,) = self.nonzero(flat)
            return tuple(self.remainder(self.floor_divide(f, self.scalar(math.prod(x.shape[d + 1:]), idt)),
                                        self.scalar(x.shape[d], idt)) for d in range(nd))
        pos, total = self._positions(flat)
        outs = [self._new((total,), idt) for _ in range(nd)]
        if total == 0:
            return tuple(outs)
        kkey = ("compact_nz", x.ir, nd, IR[idt])
        k = _K.get(kkey)
        if k is None:
            m = ir.cast(ir.load(0, x.ir), "bool")
            p = ir.op("sub", ir.load(1, "i32"), ir.Const(1, "i32"))
            stores = tuple(ir.Store(2 + d, ir.Flat(p), ir.cast(ir.Coord(d), IR[idt]), when=m) for d in range(nd))
            args = (ir.Arg("x", x.ir, nd), ir.Arg("p", "i32", nd)) + \
                tuple(ir.Arg(f"o{d}", IR[idt], 0, True) for d in range(nd))
            k = _K[kkey] = ir.Kernel("nonzero", args, (), nd, ir.Map(stores))
        self._launch(k, [xc, pos.view(x.shape, contiguous_strides(x.shape), 0)] + outs,
                     [xc.strides, contiguous_strides(x.shape)] + [()] * nd, x.shape)
        return tuple(outs)

