"""interpolate as torch.nn.functional.interpolate: modes nearest, nearest-exact, linear, bilinear,
bicubic (A = -0.75), trilinear and area, with align_corners, on x ``(N, C, *spatial)``.

Separable: one pass per spatial axis, last axis first (torch's order of accumulation), each a
``take`` of the source rows at indices computed once on the host (in the compute dtype's
precision, as torch computes them: float32 for float32 input) and, for the linear and cubic
modes, a weighted sum of the 2 or 4 taps. Where the device has an ``interpolate`` kernel
(ruda/nn/README.md; the host's runs 1 and 2 spatial axes) it takes the same indices and
weights instead. ``antialias`` is not supported.
"""
import numbers

import numpy as np

import ruda as xp
from ruda.nn import _check as c
from ruda.nn._pool import _adaptive_avg

# mode -> the number of spatial axes it takes (None: any of 1 to 3), as torch's rules
_MODES = {"nearest": None, "nearest-exact": None, "area": None, "linear": 1, "bilinear": 2,
          "bicubic": 2, "trilinear": 3}
_A = -0.75                                     # torch's cubic convolution coefficient


def _sizes(fn, x, n, size, scale_factor, recompute):
    if (size is None) == (scale_factor is None):
        raise c.err(ValueError, fn, "size", "exactly one of size and scale_factor",
                    f"size={size!r}, scale_factor={scale_factor!r}")
    L = tuple(x.shape[2:])
    if size is not None:
        vals = (size,) * n if isinstance(size, numbers.Integral) else size
        try:
            vals = tuple(vals)
        except TypeError:
            vals = None
        if vals is None or len(vals) != n or any(
                isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1 for v in vals):
            raise c.err(ValueError, fn, "size", f"a positive int or {n} positive ints", repr(size))
        return tuple(int(v) for v in vals), (None,) * n
    vals = (scale_factor,) * n if isinstance(scale_factor, numbers.Real) else scale_factor
    try:
        vals = tuple(vals)
    except TypeError:
        vals = None
    if vals is None or len(vals) != n or any(
            isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0 for v in vals):
        raise c.err(ValueError, fn, "scale_factor", f"a positive number or {n} positive numbers",
                    repr(scale_factor))
    out = tuple(int(np.floor(Li * float(v))) for Li, v in zip(L, vals))
    if any(o < 1 for o in out):
        raise c.err(ValueError, fn, "scale_factor", f"factors giving a non-empty output of {L}",
                    repr(scale_factor))
    # the kernel's scale is 1 / scale_factor, unless recomputed from the sizes (torch's rule)
    return out, ((None,) * n if recompute else tuple(float(v) for v in vals))


def _scale(L, o, align, sf, ft):
    """torch's area_pixel_compute_scale in the float type ``ft``."""
    if align:
        return ft(L - 1) / ft(o - 1) if o > 1 else ft(0)
    return ft(1.0 / sf) if sf is not None and sf > 0 else ft(L) / ft(o)


def _source(L, o, align, sf, ft, cubic):
    """torch's area_pixel_compute_source_index for every output index, in ``ft``."""
    sc = _scale(L, o, align, sf, ft)
    d = np.arange(o).astype(ft)
    if align:
        return sc * d
    src = sc * (d + ft(0.5)) - ft(0.5)
    return src if cubic else np.maximum(src, ft(0))


def _taps(mode, n, L, o, align, sf, ft):
    """(indices (k, o), weights (k, o) or None) of one axis of n: k = 1, 2 or 4 taps."""
    if mode == "nearest" and n == 2 and o == 2 * L:  # torch's 2-D shortcut, whatever the scale
        return (np.arange(o) // 2)[None], None
    if mode in ("nearest", "nearest-exact"):
        sc = np.float32(1.0 / sf) if sf is not None and sf > 0 else np.float32(L) / np.float32(o)
        d = np.arange(o).astype(np.float32)     # torch computes nearest indices in float32
        if mode == "nearest-exact":
            d = d + np.float32(0.5)
        return np.minimum(np.floor(d * sc).astype(np.int64), L - 1)[None], None
    src = _source(L, o, align, sf, ft, mode == "bicubic")
    i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
    t = np.clip(src - i0.astype(ft), ft(0), ft(1))
    if mode != "bicubic":
        i1 = i0 + (i0 < L - 1)
        return np.stack([i0, i1]), np.stack([ft(1) - t, t])
    idx = np.clip(i0[None] + np.arange(-1, 3)[:, None], 0, L - 1)
    a = ft(_A)

    def near(u):                               # |u| <= 1
        return ((a + 2) * u - (a + 3)) * u * u + 1

    def far(u):                                # 1 < |u| < 2
        return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    return idx, np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)]).astype(ft)


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial axes of x ``(N, C, *spatial)`` to ``size`` or by ``scale_factor``
    (output ``floor(L * scale_factor)``), as torch: ``linear`` takes 3-D x, ``bilinear`` and
    ``bicubic`` 4-D, ``trilinear`` 5-D; ``nearest``, ``nearest-exact`` and ``area`` any of them.
    ``align_corners`` (linear modes only) maps the corner pixels' centres onto each other.
    The nearest modes also take integers (a gather, as torch resizes uint8 images); the others
    need floating x (no silent promotion)."""
    fn = "interpolate"
    if mode not in _MODES:
        raise c.err(ValueError, fn, "mode", " or ".join(map(repr, _MODES)), repr(mode))
    if mode in ("nearest", "nearest-exact"):
        c.real(fn, "x", x)
    else:
        c.floating(fn, "x", x)
    n = x.ndim - 2
    want = _MODES[mode]
    if not 1 <= n <= 3 or want is not None and n != want:
        exp = f"{want + 2} dimensions for mode {mode!r}" if want else "3 to 5 dimensions"
        raise c.err(ValueError, fn, "x", exp, f"shape {x.shape}")
    if any(s == 0 for s in x.shape[1:]):
        raise c.err(ValueError, fn, "x", "non-empty channel and spatial axes", f"shape {x.shape}")
    linear = mode in ("linear", "bilinear", "bicubic", "trilinear")
    if align_corners is not None:
        if not linear:
            raise c.err(ValueError, fn, "align_corners",
                        "None for mode " + repr(mode) + " (only the linear and cubic modes align)",
                        align_corners)
        if not isinstance(align_corners, bool):
            raise c.err(TypeError, fn, "align_corners", "a bool or None",
                        type(align_corners).__name__)
    if antialias is not False:
        raise c.err(ValueError, fn, "antialias", "False (antialiasing is not supported)",
                    antialias)
    if recompute_scale_factor is not None and not isinstance(recompute_scale_factor, bool):
        raise c.err(TypeError, fn, "recompute_scale_factor", "a bool or None",
                    type(recompute_scale_factor).__name__)
    align = bool(align_corners)
    out, sfs = _sizes(fn, x, n, size, scale_factor, bool(recompute_scale_factor))
    if mode == "area":
        return _adaptive_avg(fn, n, x, out)
    L = tuple(x.shape[2:])
    y = c.up(x)
    ft = np.float64 if y.dtype == xp.float64 else np.float32
    taps = [_taps(mode, n, *a, align, sf, ft) for a, sf in zip(zip(L, out), sfs)]
    # an axis keeping its length is the identity; torch's CPU kernels also skip it for any
    # scale_factor in the linear modes and in 2-D nearest (not bicubic, nor 1-D/3-D nearest)
    keep = [out[i] == L[i] and (align or sfs[i] in (None, 1.0) or mode in (
        "linear", "bilinear", "trilinear") or mode == "nearest" and n == 2) for i in range(n)]
    if x.size:
        r = c.call(x, "interpolate", x,
                   [np.arange(L[i])[None] if keep[i] else taps[i][0] for i in range(n)],
                   [np.ones((1, out[i]), ft) if keep[i] or taps[i][1] is None else taps[i][1]
                    for i in range(n)])
        if r is not None:
            return r
    idt = xp.__array_namespace_info__().default_dtypes(device=x.device)["indexing"]
    for i in reversed(range(n)):
        if keep[i]:
            continue
        ax = 2 + i
        idx, w = taps[i]
        if w is None:
            y = xp.take(y, xp.asarray(idx[0], dtype=idt, device=x.device), axis=ax)
            continue
        bshape = (-1,) + (1,) * (n - 1 - i)
        acc = None
        for j in range(idx.shape[0]):
            v = xp.take(y, xp.asarray(idx[j], dtype=idt, device=x.device), axis=ax)
            v = v * xp.asarray(w[j].reshape(bshape), dtype=y.dtype, device=x.device)
            acc = v if acc is None else acc + v
        y = acc
    return c.fresh(c.down(y, x.dtype), x)
