"""Convolution: conv1d/2d/3d, conv_transpose1d/2d, unfold/fold (torch.nn.functional's
signatures, NCHW layout).

One N-d core serves them all. The device's ``conv`` kernel runs when it has one (ruda/nn/README.md);
otherwise namespace ops compose it on any device: the input padded once, each kernel tap a
strided slice, the taps stacked into columns (im2col) and one matmul per group (a broadcast
batched matmul); depthwise convolution sums the taps' shifted slices times per-channel weights
(no columns). The transposed convolution and ``fold`` scatter-add columns back (col2im): each
tap's block added into a strided slice of the output.

Deviations from torch: the input must carry its batch axis (torch also takes an unbatched
``(C, *spatial)``: here that is an error, so a 3-D input to conv2d is caught); ``weight`` and
``bias`` must have x's dtype; integer input is an error. An empty batch, C_out = 0 or C_in = 0
gives the empty result (C_in = 0: the bias alone; torch refuses C_out = 0). conv_transpose's
output size below 1 is a ValueError, as torch's native path raises (its oneDNN path, float32
with a batch > 1 or bfloat16, returns an empty result instead).
"""
import itertools
import numbers

import ruda as xp
from ruda.nn import _check as c


def _ints(fn, arg, v, nd, lo=1):
    """An int or a tuple of ``nd`` ints, each >= lo, as a tuple."""
    if type(v) is int and v >= lo:          # the common cases first, without ABC checks
        return (v,) * nd
    if type(v) is tuple and len(v) == nd and all(type(a) is int and a >= lo for a in v):
        return v
    vals = (v,) * nd if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
    try:
        vals = tuple(vals)
        if len(vals) != nd or any(isinstance(a, bool) or not isinstance(a, numbers.Integral)
                                  for a in vals):
            raise TypeError
    except TypeError:
        raise c.err(TypeError, fn, arg, f"an int or a tuple of {nd} ints", repr(v)) from None
    vals = tuple(int(a) for a in vals)
    if any(a < lo for a in vals):
        what = "positive" if lo == 1 else "non-negative"
        raise c.err(ValueError, fn, arg, f"{what} values", vals)
    return vals


def _check_x(fn, x, nd, what):
    c.floating(fn, "x", x)
    if x.ndim != nd + 2:
        raise c.err(ValueError, fn, "x", f"{nd + 2} dimensions {what}", f"shape {x.shape}")


def _pads(fn, padding, nd, ks, dil, stride):
    """Per-side padding ((lo, hi) per spatial axis) from an int, a tuple, "valid" or "same"
    (torch: total d*(k-1), the smaller half before, so an even effective kernel pads one more
    after)."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise c.err(ValueError, fn, "padding", "an int or tuple with stride != 1",
                            f"'same' with stride {stride}")
            return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for k, d in zip(ks, dil))
        raise c.err(ValueError, fn, "padding", "an int, a tuple, 'same' or 'valid'",
                    repr(padding))
    return tuple((p, p) for p in _ints(fn, "padding", padding, nd, lo=0))


def _out_sizes(fn, sp, pads, ks, dil, stride):
    out = []
    for n, (lo, hi), k, d, s in zip(sp, pads, ks, dil, stride):
        span = d * (k - 1) + 1
        if n + lo + hi < span:
            raise c.err(ValueError, fn, "x", f"padded spatial sizes at least the dilated kernel's "
                        f"{tuple(d * (k - 1) + 1 for k, d in zip(ks, dil))}",
                        f"{tuple(m + a + b for m, (a, b) in zip(sp, pads))}")
        out.append((n + lo + hi - span) // s + 1)
    return tuple(out)


def _pad_sp(y, pads):
    """y padded with zeros on its trailing len(pads) axes (negative values crop)."""
    if not any(lo or hi for lo, hi in pads):
        return y
    nd = len(pads)
    crop = tuple(slice(max(0, -lo), y.shape[y.ndim - nd + i] - max(0, -hi))
                 for i, (lo, hi) in enumerate(pads))
    y = y[(Ellipsis,) + crop]
    shape = tuple(y.shape[:y.ndim - nd]) + tuple(
        n + max(0, lo) + max(0, hi) for n, (lo, hi) in zip(y.shape[y.ndim - nd:], pads))
    z = xp.zeros(shape, dtype=y.dtype, device=y.device)
    z[(Ellipsis,) + tuple(slice(max(0, lo), max(0, lo) + n)
                          for n, (lo, _) in zip(y.shape[y.ndim - nd:], pads))] = y
    return z


def _tap_slices(offs, dil, stride, out):
    return tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                 for o, d, s, n in zip(offs, dil, stride, out))


def _taps(ks):
    return list(itertools.product(*(range(k) for k in ks)))


def _im2col(y, ks, dil, stride, out):
    """Columns (N, C, K, *out) of padded y (N, C, *sp): one strided slice per kernel tap."""
    lead = (slice(None), slice(None))
    return xp.stack([y[lead + _tap_slices(o, dil, stride, out)] for o in _taps(ks)], axis=2)


def _col2im(cols, sp, ks, dil, stride):
    """The adjoint of _im2col: cols (N, C, K, *L) scattered and summed into (N, C, *sp)."""
    N, C = cols.shape[:2]
    L = tuple(cols.shape[3:])
    y = xp.zeros((N, C) + tuple(sp), dtype=cols.dtype, device=cols.device)
    lead = (slice(None), slice(None))
    for t, o in enumerate(_taps(ks)):
        sl = lead + _tap_slices(o, dil, stride, L)
        y[sl] = y[sl] + cols[:, :, t]
    return y


def _composed(y, w, pads, stride, dil, groups, out):
    """The convolution of y (N, Cin, *sp) in its compute dtype, by namespace ops."""
    N, cin = y.shape[:2]
    cout, nd = w.shape[0], y.ndim - 2
    ks = tuple(w.shape[2:])
    yp = _pad_sp(y, pads)
    if groups == cin and w.shape[1] == 1 and groups > 1:
        # depthwise: taps of shifted slices times per-channel weights (no columns)
        if cout != cin:
            yp = xp.repeat(yp, cout // cin, axis=1)
        w2 = xp.reshape(w, (cout, -1))
        lead = (slice(None), slice(None))
        acc = None
        for t, o in enumerate(_taps(ks)):
            term = yp[lead + _tap_slices(o, dil, stride, out)] * \
                xp.reshape(w2[:, t], (1, cout) + (1,) * nd)
            acc = term if acc is None else acc + term
        return acc
    cols = _im2col(yp, ks, dil, stride, out)
    L = 1
    for n in out:
        L *= n
    if groups == 1:
        r = xp.reshape(w, (cout, -1)) @ xp.reshape(cols, (N, -1, L))
    else:
        r = xp.reshape(w, (groups, cout // groups, -1)) @ xp.reshape(cols, (N, groups, -1, L))
    return xp.reshape(r, (N, cout) + out)


def _bias(fn, bias, x, cout):
    if bias is None:
        return None
    c.same(fn, "bias", bias, x)
    if tuple(bias.shape) != (cout,):
        raise c.err(ValueError, fn, "bias", f"shape ({cout},)", f"shape {bias.shape}")
    return bias


def _empty(x, cout, out, bias, nd):
    """The result (N, C_out, *out) of an empty batch, output or contraction: the bias alone."""
    y = xp.zeros((x.shape[0], cout) + tuple(out), dtype=x.dtype, device=x.device)
    return y if bias is None else y + xp.reshape(bias, (1, cout) + (1,) * nd)


def _common(fn, nd, x, weight, layout, groups, stride, dilation):
    """Checks shared by conv and conv_transpose: (groups, stride, dilation)."""
    _check_x(fn, x, nd, "(N, C_in, *spatial)")
    c.same(fn, "weight", weight, x)
    if weight.ndim != nd + 2:
        raise c.err(ValueError, fn, "weight", f"{nd + 2} dimensions {layout}",
                    f"shape {weight.shape}")
    return (c.count(fn, "groups", groups), _ints(fn, "stride", stride, nd),
            _ints(fn, "dilation", dilation, nd))


def _conv(fn, nd, x, weight, bias, stride, padding, dilation, groups):
    groups, stride, dil = _common(fn, nd, x, weight, "(C_out, C_in / groups, *kernel)", groups,
                                  stride, dilation)
    cout, cin = weight.shape[0], x.shape[1]
    if cout % groups:
        raise c.err(ValueError, fn, "weight", f"C_out divisible by groups={groups}",
                    f"shape {weight.shape}")
    if cin != weight.shape[1] * groups:
        raise c.err(ValueError, fn, "x", f"C_in = weight.shape[1] * groups = "
                    f"{weight.shape[1] * groups} channels", f"shape {x.shape}")
    ks = tuple(weight.shape[2:])
    if any(k < 1 for k in ks):
        raise c.err(ValueError, fn, "weight", "a non-empty kernel", f"shape {weight.shape}")
    bias = _bias(fn, bias, x, cout)
    pads = _pads(fn, padding, nd, ks, dil, stride)
    out = _out_sizes(fn, tuple(x.shape[2:]), pads, ks, dil, stride)
    if x.shape[0] == 0 or cout == 0 or cin == 0:        # nothing to sum or nothing to write
        return _empty(x, cout, out, bias, nd)
    if x.size and weight.size:
        r = c.call(x, "conv", x, weight, bias, stride, pads, dil, groups)
        if r is not None:
            return r
    y = _composed(c.up(x), c.up(weight), pads, stride, dil, groups, out)
    if bias is not None:
        y = y + xp.reshape(c.up(bias), (1, cout) + (1,) * nd)
    return c.down(y, x.dtype)


def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation, as torch): x ``(N, C_in, L)``, weight
    ``(C_out, C_in / groups, k)``, bias ``(C_out,)`` or None; padding an int, a tuple, "valid" or
    "same" (stride 1; an even effective kernel pads one more at the end, as torch)."""
    return _conv("conv1d", 1, x, weight, bias, stride, padding, dilation, groups)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution: x ``(N, C_in, H, W)``, weight ``(C_out, C_in / groups, kh, kw)``;
    ``groups = C_in`` with weight ``(m * C_in, 1, kh, kw)`` is depthwise. Otherwise as conv1d."""
    return _conv("conv2d", 2, x, weight, bias, stride, padding, dilation, groups)


def conv3d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution: x ``(N, C_in, D, H, W)``, weight ``(C_out, C_in / groups, kd, kh, kw)``.
    Otherwise as conv1d."""
    return _conv("conv3d", 3, x, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(fn, nd, x, weight, bias, stride, padding, output_padding, groups, dilation):
    groups, stride, dil = _common(fn, nd, x, weight, "(C_in, C_out / groups, *kernel)", groups,
                                  stride, dilation)
    if isinstance(padding, str):
        raise c.err(TypeError, fn, "padding", "an int or a tuple of ints", repr(padding))
    pad = _ints(fn, "padding", padding, nd, lo=0)
    opad = _ints(fn, "output_padding", output_padding, nd, lo=0)
    if any(op >= max(s, d) for op, s, d in zip(opad, stride, dil)):
        raise c.err(ValueError, fn, "output_padding", f"values smaller than stride {stride} or "
                    f"dilation {dil} (per axis)", opad)
    cin = x.shape[1]
    if weight.shape[0] != cin or cin % groups:
        raise c.err(ValueError, fn, "weight", f"shape[0] = x's C_in = {cin}, divisible by "
                    f"groups={groups}", f"shape {weight.shape}")
    ks = tuple(weight.shape[2:])
    cout = weight.shape[1] * groups
    bias = _bias(fn, bias, x, cout)
    sp = tuple(x.shape[2:])
    full = tuple((n - 1) * s + d * (k - 1) + 1 + op
                 for n, s, d, k, op in zip(sp, stride, dil, ks, opad))
    out = tuple(f - 2 * p for f, p in zip(full, pad))
    if any(o < 1 for o in out):
        raise c.err(ValueError, fn, "padding", f"output sizes >= 1 (x's spatial sizes {sp} give "
                    f"{full} without padding)", f"padding {pad}: output sizes {out}")
    if x.shape[0] == 0 or cout == 0 or cin == 0:
        return _empty(x, cout, out, bias, nd)
    r = None
    if x.size and weight.size:
        r = c.call(x, "conv_transpose", x, weight, bias, stride, pad, opad, groups, dil)
    if r is not None:
        return r
    y, w = c.up(x), c.up(weight)
    N, L = x.shape[0], 1
    for n in sp:
        L *= n
    # columns = W^T x per group: (G, C_out/G * K, C_in/G) @ (N, G, C_in/G, L)
    K = 1
    for k in ks:
        K *= k
    wt = xp.matrix_transpose(xp.reshape(w, (groups, cin // groups, -1)))
    cols = wt @ xp.reshape(y, (N, groups, cin // groups, L))
    cols = xp.reshape(cols, (N, cout, K) + sp)
    z = _col2im(cols, full, ks, dil, stride)
    z = z[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(pad, out))]
    if bias is not None:
        z = z + xp.reshape(c.up(bias), (1, cout) + (1,) * nd)
    return c.down(z, x.dtype)


def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 1-d convolution (the gradient of conv1d with respect to its input): x
    ``(N, C_in, L)``, weight ``(C_in, C_out / groups, k)``; output length ``(L - 1) * stride -
    2 * padding + dilation * (k - 1) + output_padding + 1``. Each ``output_padding`` must be
    smaller than its stride or its dilation (torch's rule)."""
    return _conv_transpose("conv_transpose1d", 1, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """Transposed 2-d convolution: x ``(N, C_in, H, W)``, weight ``(C_in, C_out / groups, kh,
    kw)``. Otherwise as conv_transpose1d."""
    return _conv_transpose("conv_transpose2d", 2, x, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def _fold_args(fn, kernel_size, dilation, padding, stride):
    ks = _ints(fn, "kernel_size", kernel_size, 2)
    dil = _ints(fn, "dilation", dilation, 2)
    pad = _ints(fn, "padding", padding, 2, lo=0)
    st = _ints(fn, "stride", stride, 2)
    return ks, dil, pad, st


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a 4-D x ``(N, C, H, W)`` as columns ``(N, C * kh * kw, L)`` (torch's
    F.unfold: channel-major, then kernel taps in row-major order; L the output positions)."""
    _check_x("unfold", x, 2, "(N, C, H, W)")
    ks, dil, pad, st = _fold_args("unfold", kernel_size, dilation, padding, stride)
    pads = tuple((p, p) for p in pad)
    out = _out_sizes("unfold", tuple(x.shape[2:]), pads, ks, dil, st)
    cols = _im2col(_pad_sp(x, pads), ks, dil, st, out)
    return xp.reshape(cols, (x.shape[0], x.shape[1] * ks[0] * ks[1], out[0] * out[1]))


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of unfold: columns x ``(N, C * kh * kw, L)`` summed into ``(N, C, *output_size)``
    (overlapping blocks add up), as torch's F.fold."""
    fn = "fold"
    c.floating(fn, "x", x)
    if x.ndim != 3:
        raise c.err(ValueError, fn, "x", "3 dimensions (N, C * kh * kw, L)", f"shape {x.shape}")
    size = _ints(fn, "output_size", output_size, 2)
    ks, dil, pad, st = _fold_args(fn, kernel_size, dilation, padding, stride)
    K = ks[0] * ks[1]
    if x.shape[1] % K:
        raise c.err(ValueError, fn, "x", f"shape[1] divisible by kh * kw = {K}",
                    f"shape {x.shape}")
    pads = tuple((p, p) for p in pad)
    out = _out_sizes(fn, size, pads, ks, dil, st)
    if x.shape[2] != out[0] * out[1]:
        raise c.err(ValueError, fn, "x", f"shape[2] = {out[0] * out[1]} blocks ({out[0]} x "
                    f"{out[1]}) for output_size {size}", f"shape {x.shape}")
    N, C = x.shape[0], x.shape[1] // K
    y = c.up(x)
    cols = xp.reshape(y, (N, C, K) + out)
    full = tuple(n + 2 * p for n, p in zip(size, pad))
    z = _col2im(cols, full, ks, dil, st)
    z = z[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(pad, size))]
    return c.down(z, x.dtype)
