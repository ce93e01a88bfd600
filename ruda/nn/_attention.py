"""Scaled dot-product attention: the device's fused kernel where it has one, else tiled
namespace ops (flash-style online softmax over key blocks; split-K for decoding)."""
import math

import numpy as np

import ruda as xp
from ruda.nn._check import compute_dtype, count, err, kernel, native, number, wrap

_FN = "scaled_dot_product_attention"

# Composite path: the most score elements one tile holds (all batches and heads together) and
# the default block sizes along queries and keys.
_TILE_ELEMENTS = 1 << 21
_BLOCK_K = 256
_DECODE_ROWS = 16          # G * L at most this: split-K over key chunks, merged by log-sum-exp
_DECODE_CHUNK = 512


def _err(cls, arg, expected, got):
    return err(cls, _FN, arg, expected, got)


def _check(q, k, v, attn_mask, is_causal, scale, enable_gqa, sliding_window):
    for name, flag in (("is_causal", is_causal), ("enable_gqa", enable_gqa)):
        if not isinstance(flag, bool | np.bool_):
            # torch's fifth positional argument is dropout_p, which ruda.nn does not take
            raise _err(TypeError, name, "True or False (pass it by keyword: there is no "
                       "dropout_p)", repr(flag))
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not isinstance(a, xp.Array):
            raise _err(TypeError, name, "a ruda array", type(a).__name__)
        if a.ndim != 4:
            raise _err(ValueError, name, "4 dimensions (B, H, L or S, D)", f"shape {a.shape}")
        # k or v of q's dtype: q's check covers it (the lookup is slow per decode step)
        if (a is q or a.dtype != q.dtype) and not xp.isdtype(a.dtype, "real floating"):
            raise _err(TypeError, name, "a real floating dtype", a.dtype)
    for name, a in (("k", k), ("v", v)):
        if a.dtype != q.dtype:
            raise _err(TypeError, name, f"q's dtype {q.dtype}", a.dtype)
        if a.device != q.device:
            raise _err(ValueError, name, f"q's device {q.device}", a.device)
    B, Hq, L, D = q.shape
    _, Hkv, S, Dk = k.shape
    if Dk != D:
        raise _err(ValueError, "k", f"head size D={D} as q (last axis)", f"shape {k.shape}")
    if k.shape[0] != B or v.shape[0] != B:
        raise _err(ValueError, "k, v", f"batch {B} as q", f"k {k.shape}, v {v.shape}")
    if v.shape[1] != Hkv or v.shape[2] != S:
        raise _err(ValueError, "v", f"(B, H_kv, S) = {(B, Hkv, S)} as k", f"shape {v.shape}")
    if Hkv != Hq:
        if not enable_gqa:
            raise _err(ValueError, "k", f"{Hq} heads as q (enable_gqa=True for grouped-query "
                       "attention)", f"{Hkv}")
        if Hkv == 0 or Hq % Hkv:
            raise _err(ValueError, "k", f"a head count dividing q's {Hq} (GQA)", f"{Hkv}")
    if attn_mask is not None:
        if not isinstance(attn_mask, xp.Array):
            raise _err(TypeError, "attn_mask", "a ruda array or None", type(attn_mask).__name__)
        if attn_mask.device != q.device:
            raise _err(ValueError, "attn_mask", f"q's device {q.device}", attn_mask.device)
        if attn_mask.dtype != xp.bool and not xp.isdtype(attn_mask.dtype, "real floating"):
            raise _err(TypeError, "attn_mask", "bool or a real floating dtype", attn_mask.dtype)
        try:
            if xp.broadcast_shapes(attn_mask.shape, (B, Hq, L, S)) != (B, Hq, L, S):
                raise ValueError
        except ValueError:
            raise _err(ValueError, "attn_mask", f"a shape broadcastable to {(B, Hq, L, S)}",
                       attn_mask.shape) from None
    if scale is not None:                       # Python and NumPy reals, as other arguments
        scale = number(_FN, "scale", scale)
    if sliding_window is not None:
        sliding_window = count(_FN, "sliding_window", sliding_window, "a positive int or None")
    return scale, sliding_window


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None,
                                 enable_gqa=False, sliding_window=None):
    """``softmax(q @ k^T * scale + mask) @ v`` per head, as ``torch.nn.functional.
    scaled_dot_product_attention``.

    ``q`` (B, Hq, L, D), ``k`` (B, Hkv, S, D), ``v`` (B, Hkv, S, Dv); the result is
    (B, Hq, L, Dv) in q's dtype (bfloat16 accumulates in float32). ``scale`` defaults to
    ``1 / sqrt(D)``. Other leading axes, as torch: ``(..., H, L, D)`` (the same ``...`` in q,
    k and v; they do not broadcast) or ``(L, D)``.

    - ``enable_gqa``: Hq a multiple of Hkv; query head h reads kv head ``h // (Hq // Hkv)``.
      K and V are never repeated in memory (the query heads of one kv head are batched together).
    - ``attn_mask``: broadcastable to (B, Hq, L, S); bool keeps where True (as torch), a float
      mask is added to the scores.
    - ``is_causal``: query i attends keys ``j <= i + S - L``, i.e. aligned to the LOWER-RIGHT
      corner when L != S (the last query is the last key: what decoding against a cache needs).
      PyTorch aligns it to the upper left (``j <= i``); the two agree when L == S.
    - ``sliding_window=w``: query i attends only keys ``j > i + S - L - w`` (the last w
      positions, as Mistral; with ``is_causal`` a band of width w).
    - A query row with no key allowed gives 0, as PyTorch 2.5 and later (earlier releases gave
      NaN); 0 is what padding rows need.

    Deviations from PyTorch: no ``dropout_p`` (inference), so a torch-style positional call
    ``(q, k, v, mask, 0.0, True)`` raises (the flags must be bools); the causal alignment above.
    """
    try:
        nd4 = q.ndim == k.ndim == v.ndim == 4
    except AttributeError:
        nd4 = True                                 # _check names the argument
    if not nd4:
        return _leading(q, k, v, attn_mask, is_causal, scale, enable_gqa, sliding_window)
    scale, sliding_window = _check(q, k, v, attn_mask, is_causal, scale, enable_gqa,
                                   sliding_window)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    B, Hq, L, _ = q.shape
    S = k.shape[2]
    dev = q.device
    if B == 0 or Hq == 0 or L == 0 or S == 0:    # no output, or no key: rows of 0
        return xp.zeros((B, Hq, L, v.shape[3]), dtype=q.dtype, device=dev)
    kern = kernel(q, "sdpa")
    if kern is not None:
        mask = None if attn_mask is None else native(xp.broadcast_to(attn_mask, (B, Hq, L, S)))
        r = kern(native(q), native(k), native(v), mask, bool(is_causal), scale, sliding_window)
        if r is not NotImplemented:
            return wrap(r, dev)
    return _sdpa_composite(q, k, v, attn_mask, bool(is_causal), scale, sliding_window)


def _leading(q, k, v, attn_mask, is_causal, scale, enable_gqa, sliding_window):
    """Attention over inputs ``(..., H, L or S, D)`` or ``(L or S, D)``: the leading axes
    (equal in q, k and v) folded into one batch axis of the 4-D call, and unfolded after."""
    for name, a in (("q", q), ("k", k), ("v", v)):
        if not isinstance(a, xp.Array):
            raise _err(TypeError, name, "a ruda array", type(a).__name__)
        if a.ndim < 2:
            raise _err(ValueError, name, "at least 2 dimensions (..., H, L or S, D)",
                       f"shape {a.shape}")
        if a.ndim != q.ndim:
            raise _err(ValueError, name, f"q's {q.ndim} dimensions", f"shape {a.shape}")
    lead = tuple(q.shape[:-3])
    if tuple(k.shape[:-3]) != lead or tuple(v.shape[:-3]) != lead:
        raise _err(ValueError, "k, v", f"q's leading axes {lead}", f"k {k.shape}, v {v.shape}")
    B = math.prod(lead)

    def fold(a):
        return xp.reshape(a, (B,) + ((1,) + a.shape if a.ndim == 2 else a.shape[-3:]))
    q4, k4, v4 = fold(q), fold(k), fold(v)
    m = attn_mask
    if isinstance(m, xp.Array) and m.ndim > 2:
        full = lead + tuple(q4.shape[1:3]) + (k4.shape[2],)
        try:
            m = xp.reshape(xp.broadcast_to(m, full), (B,) + full[-3:])
        except ValueError:
            raise _err(ValueError, "attn_mask", f"a shape broadcastable to {full}",
                       m.shape) from None
    out = scaled_dot_product_attention(q4, k4, v4, m, is_causal, scale, enable_gqa,
                                       sliding_window)
    return xp.reshape(out, q.shape[:-1] + (v.shape[-1],))


def _keep(i0, i1, j0, j1, off, causal, window, dev):
    """Bool (i1-i0, j1-j0) tile of allowed (query, key) pairs, or None when all are allowed."""
    lo_ok = window is None or j0 > i1 - 1 + off - window     # every key above every row's floor
    hi_ok = not causal or j1 - 1 <= i0 + off                   # every key below every row's ceiling
    if lo_ok and hi_ok:
        return None
    i = xp.arange(i0, i1, dtype=xp.int32, device=dev)[:, None] + off
    j = xp.arange(j0, j1, dtype=xp.int32, device=dev)[None, :]
    keep = None
    if causal:
        keep = j <= i
    if window is not None:
        w = j > i - window
        keep = w if keep is None else xp.logical_and(keep, w)
    return keep


def _key_range(i0, i1, S, off, causal, window):
    """Keys [lo, hi) that rows [i0, i1) may attend at all."""
    hi = min(S, i1 + off) if causal else S
    lo = max(0, i0 + off - window + 1) if window is not None else 0
    return lo, max(lo, hi)


def _mask5(mask, B, Hkv, G, L, S, cdt):
    """The user's mask as 5 axes (B|1, Hkv|1, G|1, L|1, S|1), float masks in the compute dtype."""
    m = mask
    while m.ndim < 4:
        m = m[None]
    b, h, lm, sm = m.shape
    if h == 1:
        m = xp.reshape(m, (b, 1, 1, lm, sm))
    else:
        m = xp.reshape(m, (b, Hkv, G, lm, sm))
    if m.dtype != xp.bool and m.dtype != cdt:
        m = xp.astype(m, cdt)
    return m


def _tile_mask(m5, i0, i1, j0, j1):
    ls = slice(i0, i1) if m5.shape[3] != 1 else slice(None)
    ss = slice(j0, j1) if m5.shape[4] != 1 else slice(None)
    return m5[:, :, :, ls, ss]


def _scores(q2, kT, B, Hkv, G, rows, cols, m5, keep, i0, i1, j0, j1):
    """Masked scores (B, Hkv, G, rows, cols) of one tile (-inf where masked out)."""
    s = xp.reshape(xp.matmul(q2, kT), (B, Hkv, G, rows, cols))
    if m5 is not None:
        t = _tile_mask(m5, i0, i1, j0, j1)
        s = xp.where(t, s, -xp.inf) if t.dtype == xp.bool else s + t
    if keep is not None:
        s = xp.where(keep, s, -xp.inf)
    return s


def _sdpa_composite(q, k, v, attn_mask, causal, scale, window, *, block_q=None, block_k=None,
                    decode_chunk=None):
    """Namespace-op attention (any device). Never holds more than one tile of scores."""
    B, Hq, L, D = q.shape
    _, Hkv, S, Dv = v.shape
    G = Hq // Hkv
    odt = q.dtype
    cdt = compute_dtype(odt)
    off = S - L
    if L == 0 or S == 0:                         # no query, or no key: rows of 0
        return xp.zeros((B, Hq, L, Dv), dtype=odt, device=q.device)
    if odt != cdt:
        q, k, v = (xp.astype(a, cdt) for a in (q, k, v))
    q5 = xp.reshape(q * scale, (B, Hkv, G, L, D))
    kT = xp.matrix_transpose(k)
    m5 = None if attn_mask is None else _mask5(attn_mask, B, Hkv, G, L, S, cdt)
    if decode_chunk is not None or (G * L <= _DECODE_ROWS and block_q is None and block_k is None):
        out = _decode(q5, kT, v, m5, causal, window, off, decode_chunk or _DECODE_CHUNK)
    else:
        bk = block_k or min(S, _BLOCK_K) or 1
        bq = block_q or max(1, min(L, _TILE_ELEMENTS // max(1, B * Hq * bk)))
        parts = [_flash_rows(q5, kT, v, m5, causal, window, off, i0, min(L, i0 + bq), bk)
                 for i0 in range(0, L, bq)]
        out = parts[0] if len(parts) == 1 else xp.concat(parts, axis=3)
    out = xp.reshape(out, (B, Hq, L, Dv))
    return out if out.dtype == odt else xp.astype(out, odt)


def _flash_rows(q5, kT, v, m5, causal, window, off, i0, i1, bk):
    """Output rows [i0, i1) (B, Hkv, G, i1-i0, Dv) by an online softmax over key blocks."""
    B, Hkv, G, _, D = q5.shape
    S, Dv = v.shape[2], v.shape[3]
    rows = i1 - i0
    dev, cdt = q5.device, q5.dtype
    q2 = xp.reshape(q5[:, :, :, i0:i1, :], (B, Hkv, G * rows, D))
    lo, hi = _key_range(i0, i1, S, off, causal, window)
    m = xp.full((B, Hkv, G, rows, 1), -xp.inf, dtype=cdt, device=dev)
    den = xp.zeros((B, Hkv, G, rows, 1), dtype=cdt, device=dev)
    acc = xp.zeros((B, Hkv, G * rows, Dv), dtype=cdt, device=dev)
    for j0 in range(lo - lo % bk, hi, bk):       # blocks aligned to bk, only those in range
        j0, j1 = max(j0, lo), min(j0 + bk, hi)
        keep = _keep(i0, i1, j0, j1, off, causal, window, dev)
        s = _scores(q2, kT[:, :, :, j0:j1], B, Hkv, G, rows, j1 - j0, m5, keep, i0, i1, j0, j1)
        m_new = xp.maximum(m, xp.max(s, axis=-1, keepdims=True))
        m_use = xp.where(xp.isfinite(m_new), m_new, 0.0)        # all masked so far: no shift
        p = xp.exp(s - m_use)
        alpha = xp.exp(m - m_use)
        den = den * alpha + xp.sum(p, axis=-1, keepdims=True)
        pv = xp.matmul(xp.reshape(p, (B, Hkv, G * rows, j1 - j0)), v[:, :, j0:j1, :])
        acc = acc * xp.reshape(alpha, (B, Hkv, G * rows, 1)) + pv
        m = m_new
    den = xp.reshape(den, (B, Hkv, G * rows, 1))
    out = acc / xp.where(den > 0, den, 1.0)      # rows with no key: acc is 0, so 0
    return xp.reshape(out, (B, Hkv, G, rows, Dv))


def _partial(s, vblk, B, Hkv, G, L):
    """Max, denominator and unnormalized output of scores s (..., G, L, c) against vblk."""
    m = xp.max(s, axis=-1, keepdims=True)
    m_use = xp.where(xp.isfinite(m), m, 0.0)
    p = xp.exp(s - m_use)
    den = xp.sum(p, axis=-1, keepdims=True)
    sh = p.shape
    p2 = xp.reshape(p, sh[:-3] + (sh[-3] * sh[-2], sh[-1]))
    o = xp.matmul(p2, vblk)
    return m, den, xp.reshape(o, sh[:-1] + (vblk.shape[-1],))


def _decode(q5, kT, v, m5, causal, window, off, chunk):
    """Few query rows against many keys: split-K. The keys fall in chunks of ``chunk``; the
    partial softmax of every chunk of a segment runs in one batched matmul (a segment holds at
    most a tile of scores), then all partials merge by log-sum-exp."""
    B, Hkv, G, L, D = q5.shape
    S, Dv = v.shape[2], v.shape[3]
    dev = q5.device
    lo, hi = _key_range(0, L, S, off, causal, window)
    if hi <= lo:
        return xp.zeros((B, Hkv, G, L, Dv), dtype=q5.dtype, device=dev)
    q2 = xp.reshape(q5, (B, Hkv, G * L, D))
    seg = max(1, _TILE_ELEMENTS // (B * Hkv * G * L * chunk)) * chunk
    parts = []
    for s0 in range(lo, hi, seg):
        s1 = min(hi, s0 + seg)
        n, e = (s1 - s0) // chunk, s0 + (s1 - s0) // chunk * chunk
        if n:
            kc = xp.reshape(kT[:, :, :, s0:e], (B, Hkv, D, n, chunk))
            kc = xp.permute_dims(kc, (0, 1, 3, 2, 4))                  # (B, Hkv, n, D, c)
            s = xp.reshape(xp.matmul(q2[:, :, None], kc), (B, Hkv, n, G, L, chunk))
            keep = _keep(0, L, s0, e, off, causal, window, dev)
            if keep is not None:
                s = xp.where(_split(keep[None, None, None, None], n, chunk), s, -xp.inf)
            if m5 is not None:
                t = _split(_tile_mask(m5, 0, L, s0, e)[:, :, None], n, chunk)
                s = xp.where(t, s, -xp.inf) if t.dtype == xp.bool else s + t
            vc = xp.reshape(v[:, :, s0:e, :], (B, Hkv, n, chunk, Dv))
            parts.append(_partial(s, vc, B, Hkv, G, L))
        if e < s1:
            keep = _keep(0, L, e, s1, off, causal, window, dev)
            s = _scores(q2, kT[:, :, :, e:s1], B, Hkv, G, L, s1 - e, m5, keep, 0, L, e, s1)
            parts.append(tuple(a[:, :, None] for a in _partial(s, v[:, :, e:s1], B, Hkv, G, L)))
    m, den, o = (xp.concat(a, axis=2) if len(a) > 1 else a[0] for a in zip(*parts))
    M = xp.max(m, axis=2, keepdims=True)
    w = xp.exp(m - xp.where(xp.isfinite(M), M, 0.0))                  # each chunk's weight
    den = xp.sum(den * w, axis=2)
    o = xp.sum(o * w, axis=2)
    return o / xp.where(den > 0, den, 1.0)


def _split(t, n, chunk):
    """(a, b, 1, g, l, n*chunk | 1) -> (a, b, n, g, l, chunk | 1): key chunks on axis 2."""
    if t.shape[-1] == 1:
        return t
    sh = t.shape
    t = xp.moveaxis(xp.reshape(t, sh[:-1] + (n, chunk)), 5, 2)   # (a, b, n, 1, g, l, c)
    return xp.reshape(t, sh[:2] + (n,) + sh[3:5] + (chunk,))
