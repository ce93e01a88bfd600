"""Kernel-argument packing: one metadata block of 32-bit words per launch.

Layout (word indices; every renderer reads the same layout, see :class:`Layout`):

====================  =========================================================
``0``                 ``n``: iteration points (Map, Scan) or outputs (Reduce)
``1 .. ndim``         iteration shape
per arg ``i``         ``offset`` then ``Arg.ndim`` strides (elements, int32 bits)
per param ``j``       1 word (<= 32-bit types), 2 words (64-bit, c64: lo/hi or
                      re/im), 4 words (c128: re lo/hi, im lo/hi)
extras                Reduce: ``red_n`` (reduced points), ``nsplit``, ``chunk``;
                      Scan: ``scan_n`` (length of the scanned dimension)
====================  =========================================================

Buffers themselves are bound separately, in ``Kernel.args`` order.
"""
import math
import struct

import numpy as np

from ruda.runtime import ir

_PARAM_WORDS = {"c128": 4, "c64": 2, "i64": 2, "u64": 2, "f64": 2}


class Layout:
    """Word offsets of every metadata field of a kernel."""

    __slots__ = ("n_at", "shape_at", "arg_at", "param_at", "extra_at", "words")

    def __init__(self, kernel):
        self.n_at = 0
        self.shape_at = 1
        w = 1 + kernel.ndim
        self.arg_at = []
        for a in kernel.args:
            self.arg_at.append(w)
            w += 1 + a.ndim
        self.param_at = []
        for p in kernel.params:
            self.param_at.append(w)
            w += _PARAM_WORDS.get(p, 1)
        self.extra_at = {}
        body = kernel.body
        extras = ("red_n", "nsplit", "chunk") if isinstance(body, ir.Reduce) else \
            ("scan_n",) if isinstance(body, ir.Scan) else ()
        for e in extras:
            self.extra_at[e] = w
            w += 1
        self.words = w


_layouts = {}


def layout(kernel):
    lay = _layouts.get(kernel)
    if lay is None:
        lay = _layouts[kernel] = Layout(kernel)
    return lay


def _f32_word(value):
    """float32 bits of a Python float; past float32's range, inf as a NumPy cast gives (struct
    refuses those)."""
    try:
        return struct.unpack("<I", struct.pack("<f", value))[0]
    except OverflowError:
        return 0xFF800000 if value < 0 else 0x7F800000


def _param_words(dtype, value):
    if dtype == "bool":
        return [1 if value else 0]
    if dtype in ("i8", "i16", "i32", "u8", "u16", "u32"):
        return [int(value) & 0xFFFFFFFF]
    if dtype in ("i64", "u64"):
        v = int(value) & 0xFFFFFFFFFFFFFFFF
        return [v & 0xFFFFFFFF, v >> 32]
    if dtype == "f32":
        return [_f32_word(float(value))]
    if dtype == "f16":
        return [int(np.array(value, np.float16).view(np.uint16))]
    if dtype == "f64":
        return list(struct.unpack("<2I", struct.pack("<d", float(value))))
    if dtype == "c64":
        v = complex(value)
        return [_f32_word(v.real), _f32_word(v.imag)]
    if dtype == "c128":
        v = complex(value)
        return list(struct.unpack("<4I", struct.pack("<2d", v.real, v.imag)))
    raise ValueError(f"packing: unknown param dtype {dtype!r}")


def pack(kernel, shape, views, params=(), extras=None, out=None, lay=None):
    """The metadata words of one launch as a uint32 array.

    ``shape``: iteration shape (``len == kernel.ndim``); for a Reduce, the outer
    dims followed by the reduced dims.  ``views``: per arg ``(offset, strides)``
    with ``len(strides) == arg.ndim``.  ``params``: Python values of
    ``kernel.params``.  ``extras``: overrides of the extra words (e.g. ``nsplit``).
    """
    if lay is None:
        lay = layout(kernel)
    words = [0] * lay.words
    body = kernel.body
    if isinstance(body, ir.Reduce):
        k = body.outer_ndim
        words[0] = math.prod(shape[:k])
        red_n = math.prod(shape[k:])
        ex = {"red_n": red_n, "nsplit": 1, "chunk": red_n}
    elif isinstance(body, ir.Scan):
        words[0] = math.prod(shape)
        ex = {"scan_n": shape[-1] if shape else 1}
    else:
        words[0] = math.prod(shape)
        ex = {}
    if extras:
        ex.update(extras)
    if words[0] > 0xFFFFFFFF or ex.get("red_n", 0) > 0xFFFFFFFF:      # only a broadcast view is this large: no buffer binds 2**32 elements
        raise ValueError(f"ruda: kernel {kernel.name!r} over {math.prod(shape)} elements: kernels "
                         f"index at most 2**32 - 1 (a broadcast view this large: work on its parts)")
    words[1:1 + len(shape)] = shape
    for at, arg, (off, strides) in zip(lay.arg_at, kernel.args, views):
        if len(strides) != arg.ndim:
            raise ValueError(f"packing: arg {arg.name!r} of kernel {kernel.name!r} needs {arg.ndim} "
                             f"strides; got {len(strides)}")
        words[at] = off & 0xFFFFFFFF
        for d, s in enumerate(strides):
            words[at + 1 + d] = s & 0xFFFFFFFF
    for at, dt, v in zip(lay.param_at, kernel.params, params):
        w = _param_words(dt, v)
        words[at:at + len(w)] = w
    for name, at in lay.extra_at.items():
        words[at] = ex[name] & 0xFFFFFFFF
    if out is not None:
        out[:lay.words] = words
        return out
    return np.array(words, dtype=np.uint32)
