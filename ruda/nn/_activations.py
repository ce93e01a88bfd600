"""Activations and row operations (softmax, log_softmax, logsumexp), as torch.nn.functional.

Each takes and returns ruda arrays on any device, in the input's dtype; bfloat16 input is
computed in float32 and rounded once. Integer input to a float function is a TypeError (no
silent promotion); ``relu`` and ``relu6`` also take integers, as torch does.
"""
import math

import numpy as np

import ruda as xp
from ruda.backends import ERF_TABLES
from ruda.nn import _check as c

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _float(fn, x):
    return c.up(c.floating(fn, "x", x))


def _fused(fn, x, name, p1=0.0, p2=0.0):
    """Checks x for ``fn``; the device's fused elementwise ``activation`` kernel's result (the
    host has one), or None."""
    c.floating(fn, "x", x)
    if x.size == 0:
        return None
    return c.call(x, "activation", x, name, p1, p2)


def relu(x):
    """``max(x, 0)`` (integer or floating x)."""
    c.real("relu", "x", x)
    return xp.maximum(x, xp.zeros((), dtype=x.dtype, device=x.device))


def relu6(x):
    """``min(max(x, 0), 6)`` (integer or floating x)."""
    c.real("relu6", "x", x)
    if xp.isdtype(x.dtype, "real floating") and x.size:
        r = c.call(x, "activation", x, "relu6", 0.0, 0.0)
        if r is not None:
            return r
    return c.down(xp.clip(c.up(x), 0, 6), x.dtype)        # (clip of bfloat16 fails in NumPy)


def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x >= 0``, else ``negative_slope * x``."""
    s = c.number("leaky_relu", "negative_slope", negative_slope)
    r = _fused("leaky_relu", x, "leaky_relu", s, 0.0)
    if r is not None:
        return r
    y = _float("leaky_relu", x)
    return c.down(xp.where(y >= 0, y, y * s), x.dtype)


def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    a = c.number("elu", "alpha", alpha)
    r = _fused("elu", x, "elu", a, 0.0)
    if r is not None:
        return r
    y = _float("elu", x)
    neg = xp.expm1(xp.minimum(y, 0.0)) * a
    return c.down(xp.where(y > 0, y, neg), x.dtype)


def sigmoid(x):
    """``1 / (1 + exp(-x))``, without overflow for large ``|x|``."""
    r = _fused("sigmoid", x, "sigmoid", 0.0, 0.0)
    if r is not None:
        return r
    y = _float("sigmoid", x)
    return c.down(_sigmoid(y), x.dtype)


def _quietly():
    """A composed path without NumPy's invalid-value warnings from host arrays: -inf * 0 and
    inf - inf give torch's NaN (float16 composes these from namespace ops) silently, as torch."""
    return np.errstate(invalid="ignore")


def _sigmoid(y):
    e = xp.exp(-xp.abs(y))                       # in (0, 1]: never overflows
    r = 1.0 / (1.0 + e)
    return xp.where(y >= 0, r, e * r)


def silu(x):
    """``x * sigmoid(x)`` (SiLU, a.k.a. swish)."""
    r = _fused("silu", x, "silu", 0.0, 0.0)
    if r is not None:
        return r
    y = _float("silu", x)
    with _quietly():
        return c.down(y * _sigmoid(y), x.dtype)


def swiglu(gate, up):
    """``silu(gate) * up`` in one pass where the device has a fused kernel (gate and up of one
    dtype and device; shapes broadcast)."""
    c.floating("swiglu", "gate", gate)
    c.same("swiglu", "up", up, gate, "gate")
    if tuple(gate.shape) == tuple(up.shape) and gate.size:
        r = c.call(gate, "swiglu", gate, up)
        if r is not None:
            return r
    g, u = c.up(gate), c.up(up)
    with _quietly():
        return c.down(g * _sigmoid(g) * u, gate.dtype)


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold``."""
    b = c.number("softplus", "beta", beta)
    t = c.number("softplus", "threshold", threshold)
    if b == 0:
        raise c.err(ValueError, "softplus", "beta", "a non-zero number", b)
    r = _fused("softplus", x, "softplus", b, t)
    if r is not None:
        return r
    y = _float("softplus", x)
    bx = y * b
    sp = (xp.log1p(xp.exp(-xp.abs(bx))) + xp.maximum(bx, 0.0)) / b      # stable form
    return c.down(xp.where(bx > t, y, sp), x.dtype)


def gelu(x, approximate="none"):
    """``x * Phi(x)`` (``approximate="none"``: exact, through :func:`erf`), or the tanh
    approximation ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    if approximate not in ("none", "tanh"):
        raise c.err(ValueError, "gelu", "approximate", "'none' or 'tanh'", repr(approximate))
    tanh = approximate == "tanh"
    r = _fused("gelu", x, "gelu_tanh" if tanh else "gelu", 0.0, 0.0 if tanh else ERF_TABLES)
    if r is not None:
        return r
    y = c.up(x)
    with _quietly():
        if tanh:    # (1 + tanh(u)) / 2 = sigmoid(2 u): no cancellation for x < 0
            inner = (y + 0.044715 * (y * y * y)) * _SQRT_2_PI
            return c.down(y * _sigmoid(2.0 * inner), x.dtype)
        return c.down(0.5 * y * (1.0 + xp.erf(y * _SQRT1_2)), x.dtype)


def hardsigmoid(x):
    """``relu6(x + 3) / 6``."""
    r = _fused("hardsigmoid", x, "hardsigmoid", 0.0, 0.0)
    if r is not None:
        return r
    y = _float("hardsigmoid", x)
    return c.down(xp.clip(y + 3.0, 0.0, 6.0) / 6.0, x.dtype)


def hardswish(x):
    """``x * relu6(x + 3) / 6``."""
    r = _fused("hardswish", x, "hardswish", 0.0, 0.0)
    if r is not None:
        return r
    y = _float("hardswish", x)
    return c.down(y * xp.clip(y + 3.0, 0.0, 6.0) / 6.0, x.dtype)


def glu(x, axis=-1):
    """``a * sigmoid(b)`` where ``a, b`` are the two halves of ``x`` along ``axis`` (its length
    must be even)."""
    c.floating("glu", "x", x)
    if x.ndim == 0:
        raise c.err(ValueError, "glu", "x", "at least 1 dimension", "a 0-d array")
    ax = c.axis("glu", axis, x.ndim)
    n = x.shape[ax]
    if n % 2:
        raise c.err(ValueError, "glu", "x", f"an even length along axis {axis}", n)
    if c.kernel(x, "glu") is not None and x.size:
        xt = x if ax == x.ndim - 1 else xp.moveaxis(x, ax, -1)
        r = c.call(x, "glu", xp.reshape(xt, (-1, n)))
        if r is not None:
            r = xp.reshape(r, xt.shape[:-1] + (n // 2,))
            return r if ax == x.ndim - 1 else xp.moveaxis(r, -1, ax)
    y = c.up(x)
    lo = [slice(None)] * x.ndim
    hi = [slice(None)] * x.ndim
    lo[ax], hi[ax] = slice(0, n // 2), slice(n // 2, n)
    return c.down(y[tuple(lo)] * _sigmoid(y[tuple(hi)]), x.dtype)


# -- row operations ------------------------------------------------------------------------
def _rows(fn, x, axis, dtype):
    """x cast to ``dtype`` (when given) and its normalized axis."""
    c.array(fn, "x", x)
    if dtype is not None:
        if not xp.isdtype(dtype, "real floating"):
            raise c.err(TypeError, fn, "dtype", "a real floating dtype or None", dtype)
        x = xp.astype(x, dtype)
    else:
        c.floating(fn, "x", x)
    if x.ndim == 0:
        return x, None
    return x, c.axis(fn, axis, x.ndim)


def _row_op(x, ax, log):
    """softmax / log_softmax of x along axis ax through the (rows, n) kernel, or None."""
    if c.kernel(x, "softmax") is None or x.size == 0:
        return None
    last = ax == x.ndim - 1
    xt = x if last else xp.moveaxis(x, ax, -1)
    shp = xt.shape
    r = c.call(x, "softmax", xp.reshape(xt, (-1, shp[-1])), bool(log))
    if r is None:
        return None
    r = xp.reshape(r, shp)
    return r if last else xp.moveaxis(r, -1, ax)


def _scalar_row(x, value):
    """softmax (value 1) / log_softmax (value 0) of 0-d x: exp(x - x) and x - x without the
    invalid inf - inf: NaN for NaN or +-inf, as torch."""
    return xp.where(xp.isfinite(x), xp.full_like(x, value), xp.full_like(x, xp.nan))


def _shifted(y, ax):
    """(y - m, m) with m the row maximum; a row whose maximum is -inf is shifted by 0, so that an
    all -inf row gives 0/0 = NaN in softmax and NaN in log_softmax, as torch."""
    m = xp.max(y, axis=ax, keepdims=True)
    m = xp.where(m == -xp.inf, 0.0, m)
    return y - m


def softmax(x, axis=-1, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` (torch's ``dim``), stably (the row maximum is
    subtracted first). ``dtype``: cast x to it first (as torch). A row of -inf gives NaN, a row
    holding +inf or NaN gives NaN, as torch."""
    x, ax = _rows("softmax", x, axis, dtype)
    if ax is None:
        return _scalar_row(x, 1)
    if x.size == 0:                              # (the row maximum has no identity)
        return xp.zeros(x.shape, dtype=x.dtype, device=x.device)
    r = _row_op(x, ax, False)
    if r is not None:
        return r
    with _quietly():
        e = xp.exp(_shifted(c.up(x), ax))
        return c.down(e / xp.sum(e, axis=ax, keepdims=True), x.dtype)


def log_softmax(x, axis=-1, dtype=None):
    """``x - logsumexp(x)`` along ``axis``, stably."""
    x, ax = _rows("log_softmax", x, axis, dtype)
    if ax is None:
        return _scalar_row(x, 0)
    if x.size == 0:
        return xp.zeros(x.shape, dtype=x.dtype, device=x.device)
    r = _row_op(x, ax, True)
    if r is not None:
        return r
    with _quietly():
        s = _shifted(c.up(x), ax)
        return c.down(s - xp.log(xp.sum(xp.exp(s), axis=ax, keepdims=True)), x.dtype)


def logsumexp(x, axis, keepdims=False):
    """``log(sum(exp(x), axis))`` stably (``axis``: an int, a tuple of ints, or None for all
    axes). A slice of -inf gives -inf; one holding +inf gives +inf, as torch."""
    c.floating("logsumexp", "x", x)
    if axis is None:
        axes = tuple(range(x.ndim))
    else:
        axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
        norm = [c.axis("logsumexp", a, x.ndim) for a in axes]
        if len(set(norm)) != len(norm):
            raise c.err(ValueError, "logsumexp", "axis", "distinct axes", repr(axis))
        axes = tuple(sorted(norm))
    if x.ndim == 0:
        return x + 0.0
    if x.size == 0:                              # an empty sum: log(0) = -inf, as torch
        shp = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)) if keepdims \
            else tuple(x.shape[a] for a in range(x.ndim) if a not in axes)
        return xp.full(shp, -xp.inf, dtype=x.dtype, device=x.device)
    if c.kernel(x, "logsumexp") is not None and x.size:
        # the device's row kernel over the reduced axes moved last
        keep = tuple(a for a in range(x.ndim) if a not in axes)
        xt = xp.permute_dims(x, keep + axes) if keep + axes != tuple(range(x.ndim)) else x
        n = math.prod(x.shape[a] for a in axes)
        r = c.call(x, "logsumexp", xp.reshape(xt, (-1, n)))
        if r is not None:
            shp = tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)) if keepdims \
                else tuple(x.shape[a] for a in keep)
            return xp.reshape(r, shp)
    y = c.up(x)
    m = xp.max(y, axis=axes, keepdims=True)
    m = xp.where(xp.isinf(m), 0.0, m)
    s = xp.sum(xp.exp(y - m), axis=axes, keepdims=True)
    zero = s == 0                                # a slice of -inf: log(0) = -inf, computed quietly
    r = xp.where(zero, -xp.inf, xp.log(xp.where(zero, 1.0, s))) + m
    if not keepdims:
        r = xp.squeeze(r, axis=axes)
    return c.down(r, x.dtype)
