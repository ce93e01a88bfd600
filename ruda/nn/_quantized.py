"""Weight-only quantized matrices in GGML's block formats, kept quantized on the device.

A :class:`QuantizedWeight` holds an ``(out, in)`` matrix as blocks of 32 consecutive values of a
row: ``q8_0`` (value ``d * q``, q int8), ``q4_0`` (``d * (nibble - 8)``) and ``q4_1``
(``d * nibble + m``). ``ruda.nn.linear`` and ``ruda.nn.embedding`` accept one in place of a
float weight: linear calls the device's ``linear_quantized`` kernel (which dequantizes inside
the kernel), else composes namespace ops (dequantize a block of rows, matmul), on any device.
"""
import ruda as xp
from ruda.nn import _check as c

KINDS = ("q8_0", "q4_0", "q4_1")
BLOCK = 32
_COMPOSE_ELEMS = 1 << 22          # dequantized elements per step of the composed linear (16 MiB)


def _err(cls, arg, expected, got, fn="QuantizedWeight"):
    return c.err(cls, fn, arg, expected, got)


class QuantizedWeight:
    """An ``(out, in)`` weight in GGML's Q8_0, Q4_0 or Q4_1 blocks (``in % 32 == 0``).

    ``q``: int8 ``(out, in)`` for q8_0; uint8 ``(out, in // 2)`` for q4_0/q4_1, in GGML's nibble
    order (byte j of a block holds element j in its low nibble, element j + 16 in its high
    nibble). ``scales``: float32 ``(out, in // 32)``; ``mins``: float32 ``(out, in // 32)`` for
    q4_1, else None. All on one device."""

    ndim = 2

    def __init__(self, kind, q, scales, mins=None):
        if kind not in KINDS:
            raise _err(ValueError, "kind", " or ".join(map(repr, KINDS)), repr(kind))
        c.array("QuantizedWeight", "q", q)
        c.array("QuantizedWeight", "scales", scales)
        qdt = xp.int8 if kind == "q8_0" else xp.uint8
        if q.dtype != qdt or q.ndim != 2:
            raise _err(TypeError, "q", f"a 2-D {qdt} array for {kind}", f"{q.dtype} {q.shape}")
        out = q.shape[0]
        n_in = q.shape[1] * (1 if kind == "q8_0" else 2)
        if n_in % BLOCK:
            raise _err(ValueError, "q", f"in_features a multiple of {BLOCK}", n_in)
        nb = n_in // BLOCK
        for name, a, need in (("scales", scales, True), ("mins", mins, kind == "q4_1")):
            if a is None:
                if need:
                    raise _err(ValueError, name, f"an array for {kind}", None)
                continue
            if not need:
                raise _err(ValueError, name, f"None for {kind}", "an array")
            c.same("QuantizedWeight", name, a, q, "q", dtype=False)
            if a.dtype != xp.float32 or tuple(a.shape) != (out, nb):
                raise _err(TypeError if a.dtype != xp.float32 else ValueError, name,
                           f"float32 of shape {(out, nb)}", f"{a.dtype} {tuple(a.shape)}")
        self.kind, self.q, self.scales, self.mins = kind, q, scales, mins
        self.shape = (out, n_in)
        self.device = q.device
        self.dtype = xp.float32           # the dtype it dequantizes to by default

    def __repr__(self):
        return f"QuantizedWeight({self.kind!r}, shape={self.shape}, device={self.device})"

    @property
    def nbytes(self):
        n = self.q.size + 4 * self.scales.size                # q is one byte per element
        return n + (4 * self.mins.size if self.mins is not None else 0)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def quantize(cls, w, kind):
        """``w`` (out, in) float, in % 32 == 0, quantized as GGML's reference quantizers do
        (round to nearest; q4_0's scale from the first value of largest magnitude; scales kept
        in float32), with namespace ops on w's device."""
        c.floating("QuantizedWeight.quantize", "w", w)
        if kind not in KINDS:
            raise _err(ValueError, "kind", " or ".join(map(repr, KINDS)), repr(kind),
                       "QuantizedWeight.quantize")
        if w.ndim != 2 or w.shape[1] % BLOCK:
            raise _err(ValueError, "w", f"shape (out, in) with in a multiple of {BLOCK}",
                       f"shape {w.shape}", "QuantizedWeight.quantize")
        out, n = w.shape
        nb = n // BLOCK
        b = xp.reshape(xp.astype(w, xp.float32), (out, nb, BLOCK))
        if kind == "q8_0":
            d = xp.max(xp.abs(b), axis=2) / 127.0
            inv = xp.where(d == 0, 0.0, 1.0 / xp.where(d == 0, 1.0, d))
            # rounded half away from zero as roundf: |v|'s integer part, plus 1 where the
            # (exact) fraction is >= 0.5 (floor(|v| + 0.5) rounds 0.49999997 + 0.5 up to 1)
            v = b * inv[..., None]
            a = xp.abs(v)
            r = xp.floor(a)
            r = r + xp.floor(2.0 * (a - r))
            q = xp.astype(xp.clip(xp.where(v < 0, -r, r), -127, 127), xp.int8)
            return cls(kind, xp.reshape(q, (out, n)), d)
        if kind == "q4_0":
            # d = (the first value of largest magnitude, sign kept) / -8, as quantize_row_q4_0
            first = xp.argmax(xp.abs(b), axis=2, keepdims=True)
            d = xp.take_along_axis(b, first, axis=2)[..., 0] / -8.0
            inv = xp.where(d == 0, 0.0, 1.0 / xp.where(d == 0, 1.0, d))
            v = xp.floor(b * inv[..., None] + 8.5)
            mins = None
        else:
            lo, hi = xp.min(b, axis=2), xp.max(b, axis=2)
            d = (hi - lo) / 15.0
            inv = xp.where(d == 0, 0.0, 1.0 / xp.where(d == 0, 1.0, d))
            v = xp.floor((b - lo[..., None]) * inv[..., None] + 0.5)
            mins = lo
        nib = xp.astype(xp.clip(v, 0, 15), xp.uint8)
        packed = xp.bitwise_or(nib[..., :16], xp.bitwise_left_shift(nib[..., 16:], 4))
        return cls(kind, xp.reshape(packed, (out, n // 2)), d, mins)

    @classmethod
    def concat(cls, weights):
        """One weight of the rows of several of one kind and in_features, stacked in order."""
        ws = list(weights)
        if not ws or any(not isinstance(w, cls) for w in ws):
            raise _err(TypeError, "weights", "a non-empty list of QuantizedWeight",
                       [type(w).__name__ for w in ws], "QuantizedWeight.concat")
        k, n = ws[0].kind, ws[0].shape[1]
        if any(w.kind != k or w.shape[1] != n or w.device != ws[0].device for w in ws):
            raise _err(ValueError, "weights", f"one kind, in_features and device ({k}, {n})",
                       [(w.kind, w.shape[1], str(w.device)) for w in ws],
                       "QuantizedWeight.concat")
        mins = xp.concat([w.mins for w in ws]) if k == "q4_1" else None
        return cls(k, xp.concat([w.q for w in ws]), xp.concat([w.scales for w in ws]), mins)

    def rows(self, r0, r1):
        """Rows [r0, r1) as a QuantizedWeight (views, no copy)."""
        return QuantizedWeight(self.kind, self.q[r0:r1], self.scales[r0:r1],
                               None if self.mins is None else self.mins[r0:r1])

    def take(self, idx):
        """Rows at integer array ``idx`` (1-D, on this device) as a QuantizedWeight."""
        return QuantizedWeight(self.kind, xp.take(self.q, idx, axis=0),
                               xp.take(self.scales, idx, axis=0),
                               None if self.mins is None else xp.take(self.mins, idx, axis=0))

    # -- values ------------------------------------------------------------------------------
    def dequantize(self, dtype=None):
        """The float matrix ``(out, in)`` (float32 by default), composed with namespace ops."""
        dtype = xp.float32 if dtype is None else dtype
        if not xp.isdtype(dtype, "real floating"):
            raise _err(TypeError, "dtype", "a real floating dtype", dtype,
                       "QuantizedWeight.dequantize")
        return _dequantize(self.kind, self.q, self.scales, self.mins, dtype)


def _dequantize(kind, q, scales, mins, dtype):
    out, nb = scales.shape
    cdt = c.compute_dtype(dtype)
    d = xp.astype(scales, cdt)[..., None]
    if kind == "q8_0":
        v = xp.reshape(xp.astype(q, cdt), (out, nb, BLOCK)) * d
    else:
        b = xp.reshape(q, (out, nb, BLOCK // 2))
        nib = xp.concat([xp.bitwise_and(b, 15), xp.bitwise_right_shift(b, 4)], axis=2)
        f = xp.astype(nib, cdt)
        if kind == "q4_0":
            v = (f - 8.0) * d
        else:
            v = f * d + xp.astype(mins, cdt)[..., None]
    return c.down(xp.reshape(v, (out, nb * BLOCK)), dtype)


def linear(x, w, bias=None):
    """``x @ dequantize(w).T + bias`` for a QuantizedWeight ``w``: the device's
    ``linear_quantized`` kernel for float32 x, else dequantized blocks of rows and matmuls in
    x's compute dtype (float32 for bfloat16/float16, float64 for float64)."""
    if not (isinstance(x, xp.Array) and x.dtype == xp.float32):       # float32: no lookup
        c.floating("linear", "x", x)
    if x.device != w.device:
        raise c.err(ValueError, "linear", "weight", f"x's device {x.device}", w.device)
    out, n = w.shape
    if x.ndim == 0 or x.shape[-1] != n:
        raise c.err(ValueError, "linear", "x", f"last axis of length in_features={n}",
                    f"shape {x.shape}")
    if bias is not None:
        c.same("linear", "bias", bias, x)
        if tuple(bias.shape) != (out,):
            raise c.err(ValueError, "linear", "bias", f"shape ({out},)", f"shape {bias.shape}")
    lead = tuple(x.shape[:-1])
    rows = 1
    for s in lead:
        rows *= s
    x2 = xp.reshape(x, (rows, n))
    y = None
    if x.dtype == xp.float32 and rows:
        y = c.call(x2, "linear_quantized", x2, w.q, w.scales, w.mins, w.kind, bias)
    if y is None:
        xc = c.up(x2)
        step = max(1, _COMPOSE_ELEMS // n)
        parts = [xp.matmul(xc, xp.matrix_transpose(
                     _dequantize(w.kind, w.q[r0:r0 + step], w.scales[r0:r0 + step],
                                 None if w.mins is None else w.mins[r0:r0 + step], xc.dtype)))
                 for r0 in range(0, out, step)]
        y = parts[0] if len(parts) == 1 else xp.concat(parts, axis=1)
        if bias is not None:
            y = y + c.up(bias)
        y = c.down(y, x.dtype)
    return xp.reshape(y, lead + (out,))


def embedding(indices, w):
    """float32 rows of QuantizedWeight ``w`` at integer ``indices`` (range already checked)."""
    flat = xp.reshape(indices, (-1,))
    rows = w.take(flat).dequantize(xp.float32)
    return xp.reshape(rows, tuple(indices.shape) + (w.shape[1],))
