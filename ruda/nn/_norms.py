"""Normalizations: layer_norm, rms_norm, group_norm, batch_norm, as torch.nn.functional, and
add_rms_norm (a residual add fused with the rms_norm after it).

Statistics accumulate in float32 for bfloat16 and float16 input (in the input dtype otherwise)
and the result is in the input dtype. Affine parameters have x's dtype (float32 also allowed for
bfloat16 and float16 x). Variances are biased (divided by n), as torch normalizes.
"""
import math

import ruda as xp
from ruda.nn import _check as c


def _rows(x, n):
    return xp.reshape(x, (-1, n)) if x.ndim != 2 or x.shape[1] != n else x


def _empty(x):
    """The (empty) result of a norm of empty x: no statistics of empty axes computed."""
    return xp.empty_like(x)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing axes
    ``normalized_shape`` (an int or a tuple matching x's last axes)."""
    fn = "layer_norm"
    c.floating(fn, "x", x)
    shape = c.normalized_shape(fn, x, normalized_shape)
    c.param(fn, "weight", weight, x, shape)
    c.param(fn, "bias", bias, x, shape)
    eps = c.number(fn, "eps", eps, 0.0)
    if not x.size:
        return _empty(x)
    n = math.prod(shape)
    w = None if weight is None else xp.reshape(weight, (n,))
    b = None if bias is None else xp.reshape(bias, (n,))
    r = c.call(x, "layer_norm", _rows(x, n), w, b, eps)
    if r is not None:
        return xp.reshape(r, x.shape)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    y = c.up(x)
    mean = xp.mean(y, axis=axes, keepdims=True)
    d = y - mean
    var = xp.mean(d * d, axis=axes, keepdims=True)
    out = d / xp.sqrt(var + eps)
    return c.down(_affine(out, weight, bias), x.dtype)


def _affine(out, weight, bias):
    if weight is not None:
        out = out * c.up(weight)
    if bias is not None:
        out = out + c.up(bias)
    return out


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing axes ``normalized_shape``;
    ``eps=None``: the machine epsilon of the compute dtype (float32's for bfloat16), as torch."""
    fn = "rms_norm"
    c.floating(fn, "x", x)
    shape = c.normalized_shape(fn, x, normalized_shape)
    c.param(fn, "weight", weight, x, shape)
    eps = c.norm_eps(fn, x.dtype, eps)
    if not x.size:
        return _empty(x)
    n = math.prod(shape)
    w = None if weight is None else xp.reshape(weight, (n,))
    r = c.call(x, "rms_norm", _rows(x, n), w, eps)
    if r is not None:
        return xp.reshape(r, x.shape)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    y = c.up(x)
    ms = xp.mean(y * y, axis=axes, keepdims=True)
    return c.down(_affine(y / xp.sqrt(ms + eps), weight, None), x.dtype)


def add_rms_norm(x, residual, normalized_shape, weight=None, eps=None):
    """``(h, rms_norm(h, normalized_shape, weight, eps))`` with ``h = x + residual`` in x's
    dtype: a pre-norm block's residual add and the norm after it, one kernel where the device
    has it, the two calls elsewhere; the same values either way."""
    fn = "add_rms_norm"
    c.floating(fn, "x", x)
    if not (residual.__class__ is xp.Array and residual.dtype == x.dtype and
            residual.shape == x.shape and residual.device == x.device):
        c.same(fn, "residual", residual, x)
        if residual.shape != x.shape:
            raise c.err(ValueError, fn, "residual", f"x's shape {x.shape}", residual.shape)
    k = c.kernel(x, fn) if x.size else None
    if k is not None:
        shape = c.normalized_shape(fn, x, normalized_shape)
        c.param(fn, "weight", weight, x, shape)
        if len(shape) == 1:
            e = c.norm_eps(fn, x.dtype, eps)
            r = k(x.native, residual.native, None if weight is None else weight.native, e)
            if r is not NotImplemented:
                return c.wrap(r[0], x.device), c.wrap(r[1], x.device)
    h = x + residual
    return h, rms_norm(h, normalized_shape, weight, eps)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5):
    """x ``(N, C, *)``: the channels split into ``num_groups`` groups, each normalized over its
    channels and spatial positions; ``weight``, ``bias`` ``(C,)`` per channel."""
    fn = "group_norm"
    c.floating(fn, "x", x)
    if x.ndim < 2:
        raise c.err(ValueError, fn, "x", "at least 2 dimensions (N, C, ...)", f"shape {x.shape}")
    N, C = x.shape[0], x.shape[1]
    what = f"a positive int dividing the {C} channels"
    G = c.count(fn, "num_groups", num_groups, what)
    if C % G:
        raise c.err(ValueError, fn, "num_groups", what, G)
    c.param(fn, "weight", weight, x, (C,))
    c.param(fn, "bias", bias, x, (C,))
    eps = c.number(fn, "eps", eps, 0.0)
    if not x.size:
        return _empty(x)
    sp = math.prod(x.shape[2:])
    r = c.call(x, "group_norm", xp.reshape(x, (N, C, sp)), G, weight, bias, eps)
    if r is not None:
        return xp.reshape(r, x.shape)
    g = xp.reshape(x, (N * G, (C // G) * sp))
    if weight is None and bias is None:
        return xp.reshape(layer_norm(g, g.shape[1:], eps=eps), x.shape)
    y = xp.reshape(c.up(x), (N * G, (C // G) * sp))       # stats and affine in compute dtype
    y = xp.reshape(layer_norm(y, y.shape[1:], eps=eps), (N, C, sp))
    cw = None if weight is None else xp.reshape(weight, (C, 1))
    cb = None if bias is None else xp.reshape(bias, (C, 1))
    return xp.reshape(c.down(_affine(y, cw, cb), x.dtype), x.shape)


def batch_norm(x, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """x ``(N, C, *)`` normalized per channel: ``(x - mean) / sqrt(var + eps) * weight + bias``.

    Inference (``training=False``): ``running_mean``, ``running_var`` ``(C,)`` are the statistics.
    Training: the batch's statistics (over N and the spatial axes, biased variance); the running
    statistics, where given, are updated in place as torch does
    (``r = (1 - momentum) r + momentum * stat``, the variance unbiased)."""
    fn = "batch_norm"
    c.floating(fn, "x", x)
    if x.ndim < 2:
        raise c.err(ValueError, fn, "x", "at least 2 dimensions (N, C, ...)", f"shape {x.shape}")
    C = x.shape[1]
    if not isinstance(training, bool):
        raise c.err(TypeError, fn, "training", "a bool", type(training).__name__)
    for arg, a in (("running_mean", running_mean), ("running_var", running_var)):
        if a is None and not training:
            raise c.err(ValueError, fn, arg, "a (C,) array when training=False", None)
        c.param(fn, arg, a, x, (C,))
    c.param(fn, "weight", weight, x, (C,))
    c.param(fn, "bias", bias, x, (C,))
    eps = c.number(fn, "eps", eps, 0.0)
    momentum = c.number(fn, "momentum", momentum, 0.0, 1.0)
    bshape = (1, C) + (1,) * (x.ndim - 2)
    wu = None if weight is None else c.up(weight)
    bu = None if bias is None else c.up(bias)
    if training:
        y = c.up(x)
        axes = (0,) + tuple(range(2, x.ndim))
        count = x.size // C if C else 0
        if count <= 1:
            raise c.err(ValueError, fn, "x", "more than 1 value per channel when training",
                        f"shape {x.shape}")
        mean = xp.mean(y, axis=axes, keepdims=True)
        d = y - mean
        var = xp.mean(d * d, axis=axes, keepdims=True)
        del d
        for r, stat in ((running_mean, mean), (running_var, var * (count / (count - 1)))):
            if r is not None:
                new = (1.0 - momentum) * c.up(r) + momentum * xp.reshape(stat, (C,))
                r[...] = c.down(new, r.dtype)
    else:
        mean, var = c.up(running_mean), c.up(running_var)
        if x.size:
            r = c.call(x, "batch_norm", xp.reshape(x, (x.shape[0], C, -1)), mean, var, wu, bu,
                       eps)
            if r is not None:
                return xp.reshape(r, x.shape)
        mean, var = xp.reshape(mean, bshape), xp.reshape(var, bshape)
    # per channel: out = y * scale + shift (the (C,) terms are small, in as few ops as they
    # take: on a GPU each is a launch; the device's channel_affine kernel makes y's one pass)
    sd = xp.sqrt(var + eps)
    scale = 1.0 / sd if wu is None else xp.reshape(wu, bshape) / sd
    shift = mean * scale
    shift = -shift if bu is None else xp.reshape(bu, bshape) - shift
    if x.size:
        r = c.call(x, "channel_affine", xp.reshape(x, (x.shape[0], C, -1)),
                   xp.reshape(scale, (C,)), xp.reshape(shift, (C,)))
        if r is not None:
            return xp.reshape(r, x.shape)
    return c.down((y if training else c.up(x)) * scale + shift, x.dtype)
