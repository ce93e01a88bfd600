"""A preallocated key/value cache for autoregressive decoding."""
import operator

import ruda as xp
from ruda.nn._check import err, kernel, wrap
from ruda.nn._rope import apply_rope


def _err(cls, arg, expected, got):
    return err(cls, "KVCache", arg, expected, got)


class KVCache:
    """Keys and values of shape ``[batch, kv_heads, max_len, head_dim]``, allocated once.

    ``update(k_new, v_new)`` writes the new steps (``[batch, kv_heads, t, head_dim]``) after the
    ``length`` already held, in place, and returns the keys and values up to the new length
    (slices of the buffers), ready for :func:`scaled_dot_product_attention` with
    ``is_causal=True`` (lower-right aligned). ``reset()`` empties it. ``v_head_dim`` sets a
    value size different from the key size."""

    def __init__(self, batch, kv_heads, max_len, head_dim, *, dtype=None, device=None,
                 v_head_dim=None):
        dims = []
        for name, n in (("batch", batch), ("kv_heads", kv_heads), ("max_len", max_len),
                        ("head_dim", head_dim),
                        ("v_head_dim", head_dim if v_head_dim is None else v_head_dim)):
            try:
                if isinstance(n, bool):
                    raise TypeError
                n = operator.index(n)
            except TypeError:
                raise _err(TypeError, name, "an int", type(n).__name__) from None
            if n < 1:
                raise _err(ValueError, name, "an int >= 1", n)
            dims.append(n)
        B, H, T, D, Dv = dims
        dt = xp.float32 if dtype is None else dtype
        if not xp.isdtype(dt, "real floating"):
            raise _err(TypeError, "dtype", "a real floating dtype", dt)
        self.k = xp.zeros((B, H, T, D), dtype=dt, device=device)
        self.v = xp.zeros((B, H, T, Dv), dtype=dt, device=device)
        self.max_len = T
        self.length = 0

    @property
    def dtype(self):
        return self.k.dtype

    @property
    def device(self):
        return self.k.device

    def __repr__(self):
        return (f"ruda.nn.KVCache(shape={self.k.shape}, length={self.length}, "
                f"dtype={self.k.dtype}, device={self.k.device})")

    def update(self, k_new, v_new):
        """Appends ``k_new``, ``v_new`` (B, H_kv, t, D); returns ``(k, v)`` up to the new
        length."""
        T = self.max_len
        t = self._steps(k_new, v_new)
        end = self.length + t
        if end > T:
            raise _err(ValueError, "k_new", f"at most {T - self.length} more steps (the cache "
                       f"holds {self.length} of max_len={T}; reset() or a longer cache)", t)
        self.k[:, :, self.length:end, :] = k_new
        self.v[:, :, self.length:end, :] = v_new
        self.length = end
        return self.k[:, :, :end, :], self.v[:, :, :end, :]

    def _steps(self, k_new, v_new):
        """The number of steps t of ``k_new``, ``v_new`` (B, H_kv, t, D), checked against the
        cache's device, dtype and shape."""
        B, H, _, D = self.k.shape
        t = None
        for name, a, d in (("k_new", k_new, D), ("v_new", v_new, self.v.shape[3])):
            if not isinstance(a, xp.Array):
                raise _err(TypeError, name, "a ruda array", type(a).__name__)
            if a.device != self.k.device:
                raise _err(ValueError, name, f"the cache's device {self.k.device}", a.device)
            if a.dtype != self.k.dtype:
                raise _err(TypeError, name, f"the cache's dtype {self.k.dtype}", a.dtype)
            want = (B, H, a.shape[2] if a.ndim == 4 else "t", d)
            if a.ndim != 4 or a.shape != want:
                raise _err(ValueError, name, f"shape (B, H_kv, t, D) = {(B, H, 't', d)}",
                           a.shape)
            if t is not None and a.shape[2] != t:
                raise _err(ValueError, "v_new", f"as many steps as k_new ({t})", a.shape[2])
            t = a.shape[2]
        return t

    def put(self, pos, k_new, v_new):
        """Writes one step (B, H_kv, 1, D) at position ``pos``, a 1-element int32 array on the
        cache's device, and returns the whole buffers: a decode step that takes its position
        from device memory (recorded once, replayed) calls this; ``length`` is the caller's to
        keep (:meth:`advance`). Shapes and dtypes are those of :meth:`update`; ``pos`` is not
        read on the host, so it must lie in ``[0, max_len)``."""
        t = self._steps(k_new, v_new)
        if t != 1:
            raise _err(ValueError, "k_new", "one step (B, H_kv, 1, D)", f"{t} steps")
        if not isinstance(pos, xp.Array) or pos.shape != (1,) or pos.dtype != xp.int32 \
                or pos.device != self.k.device:
            got = f"{pos.dtype} of shape {pos.shape} on {pos.device}" \
                if isinstance(pos, xp.Array) else type(pos).__name__
            raise _err(ValueError, "pos", f"an int32 array of shape (1,) on {self.k.device}", got)
        self.k[:, :, pos, :] = k_new
        self.v[:, :, pos, :] = v_new
        return self.k, self.v

    def put_rotated(self, pos, qkv, q_heads, cos, sin):
        """One decode step from a fused q/k/v projection ``qkv`` (B, 1, (q_heads + 2 H_kv) * D):
        q and k rotated by ``cos``, ``sin`` (1, D // 2) as :func:`apply_rope` rotates them
        (half-split pairs, every feature), k and v written at ``pos`` as :meth:`put` writes
        them. Returns ``(q, k, v)``: q (B, q_heads, 1, D) and the whole buffers. One kernel
        where the device has it (cuda), else apply_rope and put; the same values."""
        B, H, _, D = self.k.shape
        if isinstance(q_heads, bool) or not isinstance(q_heads, int) or q_heads < 1:
            raise _err(ValueError, "q_heads", "an int >= 1", q_heads)
        width = (q_heads + 2 * H) * D
        if not isinstance(qkv, xp.Array) or qkv.shape != (B, 1, width) or \
                qkv.dtype != self.k.dtype or qkv.device != self.k.device or self.v.shape[3] != D:
            got = f"{qkv.dtype} of shape {qkv.shape} on {qkv.device}" \
                if isinstance(qkv, xp.Array) else type(qkv).__name__
            raise _err(ValueError, "qkv", f"{self.k.dtype} of shape {(B, 1, width)} on "
                       f"{self.k.device} (equal key and value sizes)", got)
        k = kernel(qkv, "rope_kv_put")
        if k is not None and isinstance(cos, xp.Array) and isinstance(sin, xp.Array) and \
                cos.shape == sin.shape == (1, D // 2) and isinstance(pos, xp.Array) and \
                pos.shape == (1,) and pos.dtype == xp.int32 and pos.device == qkv.device:
            q = k(xp.reshape(qkv, (B, width)).native, cos.native, sin.native, pos.native,
                  self.k.native, self.v.native, q_heads)
            if q is not NotImplemented:
                return wrap(q, qkv.device), self.k, self.v
        qk = xp.permute_dims(xp.reshape(qkv[..., :(q_heads + H) * D], (B, 1, q_heads + H, D)),
                             (0, 2, 1, 3))
        qk = apply_rope(qk, cos, sin)
        v = xp.permute_dims(xp.reshape(qkv[..., (q_heads + H) * D:], (B, 1, H, D)), (0, 2, 1, 3))
        k, v = self.put(pos, qk[:, q_heads:], v)
        return qk[:, :q_heads], k, v

    def append_rotated(self, qkv, q_heads, cos, sin):
        """:meth:`put_rotated` at position ``length``, then ``length`` one more: ``(q, k, v)``
        with k and v up to the new length, as :meth:`update` returns them (an eager decode
        step from a fused projection)."""
        if self.length >= self.max_len:
            raise _err(ValueError, "qkv", f"at most {self.max_len - self.length} more steps (the "
                       f"cache holds {self.length} of max_len={self.max_len}; reset() or a "
                       f"longer cache)", 1)
        pos = xp.asarray([self.length], dtype=xp.int32, device=self.k.device)
        q, _, _ = self.put_rotated(pos, qkv, q_heads, cos, sin)
        self.length += 1
        end = self.length
        return q, self.k[:, :, :end, :], self.v[:, :, :end, :]

    def advance(self, n):
        """Counts ``n`` more steps as held (after :meth:`put`)."""
        if not 0 <= self.length + n <= self.max_len:
            raise _err(ValueError, "n", f"at most {self.max_len - self.length} more steps", n)
        self.length += n

    def reset(self):
        """Forgets the steps held (the buffers stay allocated)."""
        self.length = 0
