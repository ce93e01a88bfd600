"""The wgpu native array: a pooled buffer + shape + element strides + element offset + dtype.

Views (reshape of contiguous data, transpose, basic slicing, broadcasting, flip,
expand/squeeze, diagonal) share the buffer; nothing is copied.
"""
import math

import numpy as np

from ruda import _dtypes

# NumPy dtype -> IR type name, and the NumPy type of the stored words (see ruda.runtime.wgsl.STORAGE).
IR = {np.dtype(k): v for k, v in {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
    "float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128"}.items()}
if _dtypes.bfloat16 is not None:
    IR[_dtypes.bfloat16] = "bf16"   # float32 words; only _bf16's relabeled float32 views reach kernels
HOST_STORAGE = {"bool": np.dtype(np.uint32), "i8": np.dtype(np.int32), "i16": np.dtype(np.int32),
                "u8": np.dtype(np.uint32), "u16": np.dtype(np.uint32)}


def contiguous_strides(shape):
    st = [0] * len(shape)
    acc = 1
    for d in range(len(shape) - 1, -1, -1):
        st[d] = acc
        acc *= shape[d]
    return tuple(st)


class WArray:
    """A strided view of a device buffer (the wgpu backend's native array)."""

    __slots__ = ("st", "shape", "strides", "offset", "dtype", "ir", "__weakref__")

    def __init__(self, st, shape, strides, offset, dtype):
        self.st = st
        self.shape = shape
        self.strides = strides
        self.offset = offset
        self.dtype = dtype
        self.ir = IR[dtype]

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def device(self):
        return "wgpu"

    def is_contiguous(self):
        acc = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != acc:
                return False
            acc *= n
        return True

    def view(self, shape, strides, offset):
        return WArray(self.st, tuple(shape), tuple(strides), offset, self.dtype)

    def __repr__(self):
        return f"WArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, offset={self.offset})"


# ---------------------------------------------------------------------- view arithmetic
def broadcast_shape(*shapes):
    """The shape ``shapes`` broadcast to (NumPy's rule).  The frontend has validated them; this
    is the backend's own (a backend may not import the namespace's ``_validation``)."""
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


def broadcast_strides(a, shape):
    """Strides of ``a`` broadcast to ``shape`` (0 on broadcast dimensions)."""
    nd = len(shape)
    off = nd - a.ndim
    out = [0] * nd
    for i, (n, s) in enumerate(zip(a.shape, a.strides)):
        out[off + i] = 0 if n == 1 and shape[off + i] != 1 else s
    return out


def collapse(shape, strides_list):
    """Merge adjacent dimensions that every operand walks contiguously; drop size-1 dims."""
    keep = [d for d, n in enumerate(shape) if n != 1]
    shape = [shape[d] for d in keep]
    sts = [[s[d] for d in keep] for s in strides_list]
    if not shape:
        return (), [() for _ in strides_list]
    out_shape = [shape[0]]
    out_sts = [[s[0]] for s in sts]
    for d in range(1, len(shape)):
        n = shape[d]
        if all(s[d - 1] == s[d] * n for s in sts):
            out_shape[-1] *= n
            for o, s in zip(out_sts, sts):
                o[-1] = s[d]
        else:
            out_shape.append(n)
            for o, s in zip(out_sts, sts):
                o.append(s[d])
    return tuple(out_shape), [tuple(o) for o in out_sts]


def basic_index(x, key):
    """View of ``x`` for a key of ints, slices, None and one Ellipsis (already validated)."""
    n_used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (x.ndim - n_used) + key[i + 1:]
    else:
        key = key + (slice(None),) * (x.ndim - n_used)
    shape, strides, off = [], [], x.offset
    d = 0
    for k in key:
        if k is None:
            shape.append(1)
            strides.append(0)
            continue
        n, s = x.shape[d], x.strides[d]
        d += 1
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            m = len(range(start, stop, step))
            if m:
                off += start * s
            shape.append(m)
            strides.append(s * step)
        else:
            i = int(k)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {k} is out of bounds for axis {d - 1} with size {n}")
            off += i * s
    return x.view(shape, strides, off)


def permute(x, axes):
    return x.view([x.shape[a] for a in axes], [x.strides[a] for a in axes], x.offset)


def reshape_view(x, shape):
    """A view of ``x`` with ``shape`` when the strides allow it, else None."""
    if x.is_contiguous():
        return x.view(shape, contiguous_strides(shape), x.offset)
    # merge non-broadcast runs (NumPy's attempt_nocopy_reshape, simplified)
    old = [(n, s) for n, s in zip(x.shape, x.strides) if n != 1]
    new_strides = []
    oi = 0
    ni = 0
    shape = list(shape)
    res = [0] * len(shape)
    while ni < len(shape) and oi < len(old):
        if shape[ni] == 1:
            res[ni] = 0
            ni += 1
            continue
        np_, op = shape[ni], old[oi][0]
        nj, oj = ni + 1, oi + 1
        while np_ != op:
            if np_ < op:
                if nj >= len(shape):
                    return None
                np_ *= shape[nj]
                nj += 1
            else:
                if oj >= len(old):
                    return None
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        st = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            res[k] = st
            st *= shape[k]
        ni, oi = nj, oj
    for k in range(ni, len(shape)):
        res[k] = 0
    if oi != len(old):
        return None
    del new_strides
    return x.view(shape, res, x.offset)
