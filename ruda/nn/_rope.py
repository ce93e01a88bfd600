"""Rotary position embeddings: frequency tables (with transformers' ``rope_scaling`` variants)
and their application to queries and keys."""
import math
import operator

import ruda as xp
from ruda.nn._check import call, compute_dtype, err, number


def _err(fn, cls, arg, expected, got):
    return err(cls, fn, arg, expected, repr(got) if isinstance(got, (str, dict)) else got)


def _int(fn, arg, value, least):
    try:
        if isinstance(value, bool):
            raise TypeError
        n = operator.index(value)
    except TypeError:
        raise _err(fn, TypeError, arg, "an int", type(value).__name__) from None
    if n < least:
        raise _err(fn, ValueError, arg, f"an int >= {least}", n)
    return n


def _device(d):
    return d if isinstance(d, xp.Device) else xp.device(d)


# ---------------------------------------------------------------------------------------------
# inverse frequencies, in Python floats (float64), as transformers' modeling_rope_utils
def _inv_freq(dim, base):
    return [1.0 / base ** (i / dim) for i in range(0, dim, 2)]


def _param(scaling, key, default=None, *, required=False):
    v = scaling.get(key)
    if v is None:
        if required:
            kind = scaling.get("rope_type", scaling.get("type"))
            raise _err("rope_frequencies", ValueError, "scaling",
                       f"a {key!r} entry for rope_type {kind!r}", scaling)
        return default
    return number("rope_frequencies", f"scaling[{key!r}]", v)


def _yarn_mscale(scale, mscale=1.0):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _scaled(dim, base, scaling, seq_len):
    """(inverse frequencies, attention factor, position divisor) for one rope_scaling dict."""
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return _inv_freq(dim, base), 1.0
    if kind == "linear":
        factor = _param(scaling, "factor", required=True)
        return [f / factor for f in _inv_freq(dim, base)], 1.0
    if kind == "dynamic":
        # dynamic NTK: the base grows with the sequence length past the original context
        factor = _param(scaling, "factor", required=True)
        orig = _param(scaling, "original_max_position_embeddings", required=True)
        n = max(seq_len, orig)
        base = base * ((factor * n / orig) - (factor - 1)) ** (dim / (dim - 2))
        return _inv_freq(dim, base), 1.0
    if kind == "llama3":
        factor = _param(scaling, "factor", required=True)
        low = _param(scaling, "low_freq_factor", required=True)
        high = _param(scaling, "high_freq_factor", required=True)
        orig = _param(scaling, "original_max_position_embeddings", required=True)
        low_wl, high_wl = orig / low, orig / high
        out = []
        for f in _inv_freq(dim, base):
            wl = 2 * math.pi / f
            if wl < high_wl:                      # high frequencies: unchanged
                out.append(f)
            elif wl > low_wl:                     # low frequencies: interpolated by factor
                out.append(f / factor)
            else:                                 # between: a smooth blend of the two
                smooth = (orig / wl - low) / (high - low)
                out.append((1 - smooth) * f / factor + smooth * f)
        return out, 1.0
    if kind == "yarn":
        factor = _param(scaling, "factor", required=True)
        orig = _param(scaling, "original_max_position_embeddings", required=True)
        if scaling.get("max_position_embeddings") is not None:      # as DeepSeek-V3 configs
            factor = _param(scaling, "max_position_embeddings") / orig
        mscale = _param(scaling, "mscale")
        mscale_all = _param(scaling, "mscale_all_dim")
        attn = _param(scaling, "attention_factor")
        if attn is None:
            attn = (_yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all)
                    if mscale and mscale_all else _yarn_mscale(factor))
        beta_fast = _param(scaling, "beta_fast") or 32.0
        beta_slow = _param(scaling, "beta_slow") or 1.0

        def corr_dim(rot):
            return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
        lo, hi = corr_dim(beta_fast), corr_dim(beta_slow)
        if scaling.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, dim - 1)
        if lo == hi:
            hi += 0.001                            # as transformers: no division by zero
        out = []
        for i, f in enumerate(_inv_freq(dim, base)):
            ramp = min(max((i - lo) / (hi - lo), 0.0), 1.0)
            extra = 1.0 - ramp                     # share of the unscaled (extrapolated) freq
            out.append(f / factor * (1 - extra) + f * extra)
        return out, attn
    raise _err("rope_frequencies", ValueError, "scaling['rope_type']",
               "one of 'default', 'linear', 'dynamic', 'llama3', 'yarn'", kind)


def rope_frequencies(head_dim, base=10000.0, positions=None, scaling=None, *, device=None,
                     dtype=None):
    """``(cos, sin)``, each of shape (T, head_dim // 2), of the rotary angles
    ``positions[t] * inv_freq[i]`` with ``inv_freq[i] = base ** (-2 i / head_dim)``.

    ``head_dim``: the rotated size (for partial rotary, the rotary dimension); even.
    ``positions``: an int T (positions 0..T-1) or a 1-D array of positions (its device is used);
    it is required (None is an error: the table has no default length).
    ``scaling``: None or a dict as transformers' ``rope_scaling`` / ``rope_parameters``:

    - ``{"rope_type": "linear", "factor"}``: frequencies divided by ``factor``;
    - ``{"rope_type": "dynamic", "factor", "original_max_position_embeddings"}``: dynamic NTK,
      ``base * (factor * n / orig - (factor - 1)) ** (d / (d - 2))`` with ``n`` the larger of the
      sequence length (max position + 1) and ``orig``. Stateless: transformers keeps the
      longest length seen so far instead;
    - ``{"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
      "original_max_position_embeddings"}``;
    - ``{"rope_type": "yarn", "factor", "original_max_position_embeddings", "beta_fast" (32),
      "beta_slow" (1), "mscale", "mscale_all_dim", "attention_factor", "truncate" (True)}``;
      the attention factor multiplies cos and sin, as transformers does. A
      ``"max_position_embeddings"`` entry sets the factor to its ratio to the original length.

    Angles are computed in float64 (for an array of positions on a device without float64, in
    float32), then cos/sin are cast to ``dtype`` (default float32).
    """
    fn = "rope_frequencies"
    head_dim = _int(fn, "head_dim", head_dim, 2)
    if head_dim % 2:
        raise _err(fn, ValueError, "head_dim", "an even int", head_dim)
    base = number(fn, "base", base, 1.0, lo_open=True)
    if scaling is not None and not isinstance(scaling, dict):
        raise _err(fn, TypeError, "scaling", "None or a dict", type(scaling).__name__)
    if isinstance(positions, xp.Array):
        if positions.ndim != 1:
            raise _err(fn, ValueError, "positions", "a 1-D array", f"shape {positions.shape}")
        if not xp.isdtype(positions.dtype, ("integral", "real floating")):
            raise _err(fn, TypeError, "positions", "an integer or real dtype", positions.dtype)
        if device is not None and _device(device) != positions.device:
            raise _err(fn, ValueError, "device", f"positions' device {positions.device}", device)
        dev = positions.device
        seq_len = int(xp.max(positions)) + 1 if positions.shape[0] else 0
    elif positions is None:
        raise _err(fn, TypeError, "positions", "an int (the length) or a 1-D array", None)
    else:
        seq_len = _int(fn, "positions", positions, 0)
        dev = None if device is None else _device(device)
    wide = "float64" in xp.__array_namespace_info__().dtypes(device=dev)
    cdt = xp.float64 if wide else xp.float32
    out_dt = xp.float32 if dtype is None else dtype
    if not xp.isdtype(out_dt, "real floating"):
        raise _err(fn, TypeError, "dtype", "a real floating dtype", out_dt)
    inv, attn = _scaled(head_dim, base, scaling or {}, seq_len)
    if not wide and not isinstance(positions, xp.Array):   # angles of float32 positions lose
        host = rope_frequencies(head_dim, base, seq_len, scaling, device="cpu",  # 1e-3 at 32k:
                                dtype=out_dt)                     # the table is made in float64
        return tuple(xp.asarray(t, device=dev) for t in host)
    if isinstance(positions, xp.Array):
        pos = xp.astype(positions, cdt)
    else:
        pos = xp.arange(seq_len, dtype=cdt, device=dev)
    ang = pos[:, None] * xp.asarray(inv, dtype=cdt, device=dev)[None, :]
    cos, sin = xp.cos(ang), xp.sin(ang)
    if attn != 1.0:
        cos, sin = cos * attn, sin * attn
    return xp.astype(cos, out_dt), xp.astype(sin, out_dt)


def apply_rope(x, cos, sin, interleaved=False, rotary_dim=None):
    """Rotates the first ``rotary_dim`` features (default: all) of ``x`` (..., T, D) by the
    angles whose ``cos`` and ``sin`` (T, rotary_dim // 2) come from :func:`rope_frequencies`.

    Half-split pairs (feature i with i + rotary_dim/2: GPT-NeoX / Llama's ``rotate_half``) by
    default; ``interleaved=True`` pairs features 2i and 2i+1 (GPT-J). The other features pass
    through unchanged. The result has x's dtype (bfloat16 computes in float32)."""
    fn = "apply_rope"
    for name, a in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(a, xp.Array):
            raise _err(fn, TypeError, name, "a ruda array", type(a).__name__)
        if not xp.isdtype(a.dtype, "real floating"):
            raise _err(fn, TypeError, name, "a real floating dtype", a.dtype)
        if a.device != x.device:
            raise _err(fn, ValueError, name, f"x's device {x.device}", a.device)
    if x.ndim < 2:
        raise _err(fn, ValueError, "x", "at least 2 dimensions (..., T, D)", f"shape {x.shape}")
    T, D = x.shape[-2:]
    r = D if rotary_dim is None else _int(fn, "rotary_dim", rotary_dim, 2)
    if r % 2:
        raise _err(fn, ValueError, "rotary_dim" if rotary_dim is not None else "x",
                   "an even rotary dimension", f"{r}" + ("" if rotary_dim else f" (shape {x.shape})"))
    if r > D:
        raise _err(fn, ValueError, "rotary_dim", f"at most x's last dimension {D}", r)
    for name, a in (("cos", cos), ("sin", sin)):
        if a.shape != (T, r // 2):
            raise _err(fn, ValueError, name, f"shape (T, rotary_dim // 2) = {(T, r // 2)}",
                       a.shape)
    res = call(x, "apply_rope", x, cos, sin, bool(interleaved), r) if x.size else None
    if res is not None:
        return res
    return _rope_composite(x, cos, sin, bool(interleaved), r)


def _rope_composite(x, cos, sin, interleaved, r):
    odt = x.dtype
    cdt = compute_dtype(odt)
    xw = x if odt == cdt else xp.astype(x, cdt)
    c = cos if cos.dtype == cdt else xp.astype(cos, cdt)
    s = sin if sin.dtype == cdt else xp.astype(sin, cdt)
    D, h = x.shape[-1], r // 2
    if interleaved:
        pairs = xp.reshape(xw[..., :r], xw.shape[:-1] + (h, 2))
        a, b = pairs[..., 0], pairs[..., 1]
        rot = xp.reshape(xp.stack((a * c - b * s, b * c + a * s), axis=-1), xw.shape[:-1] + (r,))
    else:
        a, b = xw[..., :h], xw[..., h:r]
        rot = xp.concat((a * c - b * s, b * c + a * s), axis=-1)
    out = rot if r == D else xp.concat((rot, xw[..., r:]), axis=-1)
    return out if out.dtype == odt else xp.astype(out, odt)
