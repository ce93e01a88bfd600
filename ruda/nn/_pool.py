"""Pooling as torch.nn.functional: max_pool1d/2d/3d, avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d,
adaptive_max_pool1d/2d/3d. Input ``(N, C, *spatial)`` or unbatched ``(C, *spatial)``.

Composed on every device from strided slices: one slice of the padded input per kernel offset
(``prod(kernel_size)`` of them), combined with ``maximum`` or summed, so no loop runs over
output positions. On the host this already beats torch CPU (NumPy's ufuncs over strided views),
so no device has a ``pool`` kernel yet.
Deviations from torch: ``avg_pool`` of integer input is a TypeError (a float op; torch truncates);
indices (``return_indices``) have the device's default index dtype (int64 where it has it).
"""
import math
import numbers

import numpy as np

import ruda as xp
from ruda.nn import _check as c
from ruda.nn._conv import _ints
from ruda.nn._layers import pad as _pad


def ntuple(fn, arg, v, n, least):
    """An int, a 1-tuple (as torch's pooling takes) or a tuple of ``n`` ints, each >= least."""
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    return _ints(fn, arg, v, n, least)


def spatial_input(fn, x, n, kinds="real floating"):
    """x of dtype ``kinds`` with ``n`` spatial axes, batched or not; (x batched, was_unbatched)."""
    c.array(fn, "x", x)
    if not xp.isdtype(x.dtype, kinds):
        what = "a real floating dtype" if kinds == "real floating" else "a real numeric dtype"
        raise c.err(TypeError, fn, "x", what, x.dtype)
    if x.ndim not in (n + 1, n + 2):
        raise c.err(ValueError, fn, "x", f"{n + 1} or {n + 2} dimensions ((N,) C, "
                    f"{', '.join('DHW'[3 - n:])})", f"shape {x.shape}")
    if any(s == 0 for s in x.shape[-n - 1:]):
        raise c.err(ValueError, fn, "x", "non-empty channel and spatial axes", f"shape {x.shape}")
    return (x[None] if x.ndim == n + 1 else x), x.ndim == n + 1


def _out_len(fn, i, L, k, s, p, d, ceil):
    """torch's output length; at least one window must fit (in ceil mode the last window may
    overhang the padded input by up to stride - 1)."""
    eff = d * (k - 1) + 1
    o = (L + 2 * p - eff + (s - 1 if ceil else 0)) // s + 1
    if o < 1:
        lim = f"{L + 2 * p} + stride - 1 = {L + 2 * p + s - 1}" if ceil else f"{L + 2 * p}"
        raise c.err(ValueError, fn, "kernel_size", f"a dilated kernel of at most the padded "
                    f"input's {lim} on spatial axis {i}", f"{eff} (kernel_size {k}, dilation {d})")
    if ceil and (o - 1) * s >= L + p:          # the last window must start inside x or its left pad
        o -= 1
    return o


def _args(fn, x, n, kernel_size, stride, padding, dilation, ceil_mode, kinds):
    xb, unb = spatial_input(fn, x, n, kinds)
    k = ntuple(fn, "kernel_size", kernel_size, n, 1)
    s = k if stride is None or (not isinstance(stride, numbers.Integral) and len(stride) == 0) \
        else ntuple(fn, "stride", stride, n, 1)
    p = ntuple(fn, "padding", padding, n, 0)
    d = ntuple(fn, "dilation", dilation, n, 1)
    half = tuple(ki // 2 for ki in k)
    if any(pi > hi for pi, hi in zip(p, half)):
        raise c.err(ValueError, fn, "padding", f"at most {half} (half the kernel size {k})", p)
    if not isinstance(ceil_mode, bool):
        raise c.err(TypeError, fn, "ceil_mode", "a bool", type(ceil_mode).__name__)
    L = tuple(xb.shape[2:])
    o = tuple(_out_len(fn, *a, ceil_mode) for a in zip(range(n), L, k, s, p, d))
    return xb, unb, k, s, p, d, L, o


def _windows(x, k, s, p, d, o, fill):
    """(offset, slice) per kernel offset: slice ``[..., j]`` is the padded input at window j's
    element ``offset``. The input is padded by p on the left and as much as the last window needs
    on the right, with ``fill``."""
    n = len(k)
    L = x.shape[2:]
    pads = []
    for i in reversed(range(n)):               # torch's pad order: last axis first
        need = (o[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1
        pads += [p[i], max(0, need - L[i] - p[i])]
    if any(pads):
        x = _pad(x, pads, value=fill)
    for off in np.ndindex(*k):
        sl = tuple(slice(j * di, j * di + (oi - 1) * si + 1, si)
                   for j, di, oi, si in zip(off, d, o, s))
        yield off, x[(..., *sl)]


def _index_dtype(x):
    return xp.__array_namespace_info__().default_dtypes(device=x.device)["indexing"]


def _flat_index(L, o, positions, x):
    """The flat indices over spatial axes ``L`` of the grid (shape ``o``) whose axis-i
    positions are ``positions[i]``, as an array of x's device's index dtype."""
    n = len(L)
    flat = np.zeros(o, dtype=np.int64)
    for i, pos in enumerate(positions):
        flat = flat + (pos * math.prod(L[i + 1:])).reshape((-1,) + (1,) * (n - 1 - i))
    return xp.asarray(flat, dtype=_index_dtype(x), device=x.device)


def _first_index(L, s, p, d, o, x):
    """Each window's first position past the left padding, as a flat index over the spatial
    axes (torch's initial index of max pooling)."""
    starts = [np.arange(o[i]) * s[i] - p[i] for i in range(len(L))]
    return _flat_index(L, o, [t - np.minimum(t, 0) // di * di       # ceil to the first tap >= 0
                              for t, di in zip(starts, d)], x)


def _finish(y, unb):
    return y[0] if unb else y


def _max_pool(fn, n, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    xb, unb, k, s, p, d, L, o = _args(fn, x, n, kernel_size, stride, padding, dilation,
                                      ceil_mode, ("integral", "real floating"))
    if not isinstance(return_indices, bool):
        raise c.err(TypeError, fn, "return_indices", "a bool", type(return_indices).__name__)
    if xp.isdtype(x.dtype, "integral"):
        fill = int(xp.iinfo(x.dtype).min)
    else:
        fill, xb = -math.inf, c.up(xb)
    acc = idx = None
    for off, v in _windows(xb, k, s, p, d, o, fill):
        if not return_indices:
            acc = v if acc is None else xp.maximum(acc, v)
            continue
        if acc is None:
            # torch starts each window at its first in-bounds position (past the left padding,
            # unclamped on the right): the index where no element beats -inf
            acc, idx = v, xp.broadcast_to(_first_index(L, s, p, d, o, x), v.shape)
            continue
        # the flat input index (over the spatial axes) of each window's element ``off``
        cur = _flat_index(L, o, [np.arange(o[i]) * s[i] - p[i] + off[i] * d[i]
                                 for i in range(n)], x)
        # torch's rule: a larger value, or a NaN, replaces the current one (first max wins)
        upd = (v > acc) | (v != v) if xp.isdtype(v.dtype, "real floating") else v > acc
        acc, idx = xp.where(upd, v, acc), xp.where(upd, cur, idx)
    if math.prod(k) == 1 and acc.dtype == x.dtype:
        acc = xp.asarray(acc, copy=True)       # a 1-element window: acc is a view of x
    acc = c.down(acc, x.dtype)
    return (_finish(acc, unb), _finish(idx, unb)) if return_indices else _finish(acc, unb)


def _avg_pool(fn, n, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    xb, unb, k, s, p, d, L, o = _args(fn, x, n, kernel_size, stride, padding, 1, ceil_mode,
                                      "real floating")
    if n == 3 and any(ki > Li for ki, Li in zip(k, L)):
        # torch's avg_pool3d also requires the kernel within the unpadded input
        raise c.err(ValueError, fn, "kernel_size", f"a kernel no larger than x's spatial sizes "
                    f"{L}", k)
    if not isinstance(count_include_pad, bool):
        raise c.err(TypeError, fn, "count_include_pad", "a bool",
                    type(count_include_pad).__name__)
    if divisor_override is not None and (isinstance(divisor_override, bool) or not isinstance(
            divisor_override, numbers.Integral) or divisor_override == 0):
        raise c.err(ValueError, fn, "divisor_override", "None or a non-zero int",
                    repr(divisor_override))
    if divisor_override is not None:
        div = float(divisor_override)
    else:
        # per axis: the window's length within the padded input (count_include_pad) or within x
        div = np.ones(o)
        for i in range(n):
            start = np.arange(o[i]) * s[i] - p[i]
            end = np.minimum(start + k[i], L[i] + p[i])
            cnt = end - start if count_include_pad else \
                np.minimum(end, L[i]) - np.maximum(start, 0)
            div = div * cnt.reshape((-1,) + (1,) * (n - 1 - i))
    y = c.up(xb)
    acc = None
    for _, v in _windows(y, k, s, p, d, o, 0.0):
        acc = v if acc is None else acc + v
    if not isinstance(div, float):
        div = xp.asarray(div, dtype=y.dtype, device=x.device)
    return _finish(c.down(acc / div, x.dtype), unb)


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum over each window of x ``(N, C, L)`` (or ``(C, L)``); padding counts as -inf.
    ``return_indices``: also each maximum's flat index into the spatial axes (torch's; where no
    element beats -inf, the window's first position past the left padding, as torch, which
    can lie beyond x for a window of padding only)."""
    return _max_pool("max_pool1d", 1, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """max_pool1d over x ``(N, C, H, W)`` (or ``(C, H, W)``); ints or pairs per axis."""
    return _max_pool("max_pool2d", 2, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """max_pool1d over x ``(N, C, D, H, W)`` (or ``(C, D, H, W)``)."""
    return _max_pool("max_pool3d", 3, x, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean over each window of x ``(N, C, L)``: the sum divided by the window's length
    within the padded input (``count_include_pad``) or within x."""
    return _avg_pool("avg_pool1d", 1, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """avg_pool1d over x ``(N, C, H, W)``; ``divisor_override`` replaces the window size."""
    return _avg_pool("avg_pool2d", 2, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """avg_pool1d over x ``(N, C, D, H, W)``."""
    return _avg_pool("avg_pool3d", 3, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ---------------------------------------------------------------------------------------------
# adaptive pooling: output cell i of an axis of length L covers [floor(i L / o), ceil((i+1) L / o))
def _adaptive_args(fn, x, n, output_size, kinds):
    xb, unb = spatial_input(fn, x, n, kinds)
    L = tuple(xb.shape[2:])
    osz = output_size
    if osz is None or isinstance(osz, numbers.Integral):
        osz = (osz,) * n
    try:
        osz = tuple(osz)
    except TypeError:
        raise c.err(TypeError, fn, "output_size", f"an int or a tuple of {n} ints or None",
                    repr(output_size)) from None
    if len(osz) != n or any(v is not None and (isinstance(v, bool) or not isinstance(
            v, numbers.Integral) or v < 1) for v in osz):
        raise c.err(ValueError, fn, "output_size", f"{n} positive ints (or None: keep the axis)",
                    repr(output_size))
    o = tuple(Li if v is None else int(v) for Li, v in zip(L, osz))
    return xb, unb, L, o


def _bounds(L, o):
    i = np.arange(o)
    return (i * L) // o, -((-(i + 1) * L) // o)


def _adaptive_avg(fn, n, x, output_size):
    xb, unb, L, o = _adaptive_args(fn, x, n, output_size, "real floating")
    y = c.up(xb)
    if all(v == 1 for v in o) and xb.size:     # global pooling: one mean over each whole plane
        y = xp.mean(xp.reshape(y, tuple(y.shape[:2]) + (-1,)), axis=-1)
        return _finish(c.down(xp.reshape(y, tuple(y.shape) + o), x.dtype), unb)
    for i in range(n):
        ax = 2 + i
        if o[i] == L[i]:
            continue
        if L[i] % o[i] == 0:                   # equal windows: a reshape and a mean
            sh = y.shape[:ax] + (o[i], L[i] // o[i]) + y.shape[ax + 1:]
            y = xp.mean(xp.reshape(y, sh), axis=ax + 1)
            continue
        # unequal windows: a (L, o) averaging matrix applied along the axis
        start, end = _bounds(L[i], o[i])
        pos = np.arange(L[i])[:, None]
        m = ((pos >= start) & (pos < end)) / (end - start)
        m = xp.asarray(m, dtype=y.dtype, device=x.device)
        y = xp.moveaxis(xp.matmul(xp.moveaxis(y, ax, -1), m), -1, ax)
    return _finish(c.down(c.fresh(y, xb), x.dtype), unb)


def _adaptive_max(fn, n, x, output_size, return_indices):
    xb, unb, L, o = _adaptive_args(fn, x, n, output_size, ("integral", "real floating"))
    if not isinstance(return_indices, bool):
        raise c.err(TypeError, fn, "return_indices", "a bool", type(return_indices).__name__)
    y = xb
    K, starts, lens = [], [], []
    for i in range(n):                         # gather each axis into (o_i, K_i) windows
        ax = 2 + 2 * i
        start, end = _bounds(L[i], o[i])
        Ki = int((end - start).max())
        K.append(Ki)
        starts.append(start)
        lens.append(end - start)
        if L[i] % o[i]:                        # unequal windows: repeat each window's last element
            take = np.minimum(start[:, None] + np.arange(Ki), end[:, None] - 1).reshape(-1)
            y = xp.take(y, xp.asarray(take, dtype=_index_dtype(x), device=x.device), axis=ax)
        y = xp.reshape(y, y.shape[:ax] + (o[i], Ki) + y.shape[ax + 1:])
    perm = (0, 1) + tuple(2 + 2 * i for i in range(n)) + tuple(3 + 2 * i for i in range(n))
    y = xp.reshape(xp.permute_dims(y, perm), y.shape[:2] + o + (math.prod(K),))
    vals = xp.max(y, axis=-1)
    if not return_indices:
        return _finish(vals, unb)
    a = xp.argmax(y, axis=-1)                  # first maximum in window order, as torch
    if xp.isdtype(y.dtype, "real floating"):   # and torch's last NaN where a window has NaNs
        nan = xp.isnan(y)
        last = (y.shape[-1] - 1) - xp.argmax(xp.astype(xp.flip(nan, axis=-1), xp.int8), axis=-1)
        a = xp.where(xp.any(nan, axis=-1), last, a)
    idt = _index_dtype(x)
    if a.dtype != idt:
        a = xp.astype(a, idt)
    flat = None
    for i in reversed(range(n)):               # window position -> input position, axis by axis
        inner = math.prod(K[i + 1:])
        shape = (-1,) + (1,) * (n - 1 - i)
        ki = (a // inner) % K[i]
        if L[i] % o[i]:                        # a repeated last element is that element
            ki = xp.minimum(ki, xp.asarray((lens[i] - 1).reshape(shape), dtype=idt,
                                           device=x.device))
        st = xp.asarray(starts[i].reshape(shape), dtype=idt, device=x.device)
        term = (st + ki) * math.prod(L[i + 1:])
        flat = term if flat is None else flat + term
    return _finish(vals, unb), _finish(flat, unb)


def adaptive_avg_pool1d(x, output_size):
    """The mean over ``output_size`` windows of x ``(N, C, L)``: window i covers
    ``[floor(i L / o), ceil((i + 1) L / o))`` (they overlap when o does not divide L)."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, x, output_size)


def adaptive_avg_pool2d(x, output_size):
    """adaptive_avg_pool1d over H and W of x ``(N, C, H, W)``; ``output_size`` an int or a pair
    (None keeps that axis)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, x, output_size)


def adaptive_avg_pool3d(x, output_size):
    """adaptive_avg_pool1d over D, H and W of x ``(N, C, D, H, W)``."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, x, output_size)


def adaptive_max_pool1d(x, output_size, return_indices=False):
    """The maximum over adaptive_avg_pool1d's windows (and, with ``return_indices``, its index)."""
    return _adaptive_max("adaptive_max_pool1d", 1, x, output_size, return_indices)


def adaptive_max_pool2d(x, output_size, return_indices=False):
    """adaptive_max_pool1d over H and W; indices are flat over ``H * W``, as torch's."""
    return _adaptive_max("adaptive_max_pool2d", 2, x, output_size, return_indices)


def adaptive_max_pool3d(x, output_size, return_indices=False):
    """adaptive_max_pool1d over D, H and W; indices are flat over ``D * H * W``."""
    return _adaptive_max("adaptive_max_pool3d", 3, x, output_size, return_indices)
