"""Layers and small functions: linear, linear_swiglu, rms_norm_linear, add_linear, embedding,
one_hot, erf, dropout, normalize, pad."""
import math
import numbers

import ruda as xp
from ruda.nn import _check as c
from ruda.nn import _quantized
from ruda.nn._activations import swiglu
from ruda.nn._norms import rms_norm


def erf(x):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``: ``ruda.erf``."""
    c.floating("erf", "x", x)
    return xp.erf(x)


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` with torch's ``[out_features, in_features]`` weight layout (the
    weight is read transposed, not copied). x ``(..., in)``; bias ``(out,)`` or None. A
    ``ruda.nn.QuantizedWeight`` weight is multiplied without dequantizing it whole (float x)."""
    if not isinstance(weight, _quantized.QuantizedWeight):
        _linear_args("linear", x, weight, bias)
    return _product(x, weight, bias)


def _product(x, weight, bias):
    """``x @ weight.T + bias`` of checked arguments (a QuantizedWeight checks its own)."""
    if isinstance(weight, _quantized.QuantizedWeight):
        return _quantized.linear(x, weight, bias)
    y = xp.matmul(x, xp.matrix_transpose(weight))
    return y if bias is None else y + bias


def _linear_args(fn, x, weight, bias, swiglu=False):
    """The checks of a projection's arguments, errors named as function ``fn``."""
    c.real(fn, "x", x)
    c.same(fn, "weight", weight, x)
    if weight.ndim != 2:
        raise c.err(ValueError, fn, "weight", "2 dimensions (out_features, in_features)",
                    f"shape {weight.shape}")
    if swiglu and weight.shape[0] % 2:
        raise c.err(ValueError, fn, "weight", "an even number of rows (gate and up stacked)",
                    f"shape {tuple(weight.shape)}")
    if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise c.err(ValueError, fn, "x", f"last axis of length in_features={weight.shape[1]}",
                    f"shape {x.shape}")
    if bias is not None:
        c.same(fn, "bias", bias, x)
        if tuple(bias.shape) != (weight.shape[0],):
            raise c.err(ValueError, fn, "bias", f"shape ({weight.shape[0]},)",
                        f"shape {bias.shape}")


def _plain(x, *arrays):
    """Whether ``arrays`` are ruda arrays of x's dtype and device (a fused kernel may take them)."""
    return x.__class__ is xp.Array and x.size > 0 and all(
        a.__class__ is xp.Array and a.dtype == x.dtype and a.device == x.device for a in arrays)


def linear_swiglu(x, weight, bias=None):
    """``swiglu(g, u)`` of ``linear(x, weight, bias)`` split in halves along its last axis (g
    first): a SwiGLU MLP's gate and up projections stacked as one ``(2 * hidden, in)`` weight.
    One kernel where the device has it (cuda: bfloat16/float16, up to 8 rows of x), else the two
    calls; the same values either way."""
    _swiglu_args("linear_swiglu", x, weight, bias)
    return _swiglu_product(x, weight, bias)


def _swiglu_args(fn, x, weight, bias):
    if isinstance(weight, _quantized.QuantizedWeight):
        if weight.shape[0] % 2:
            raise c.err(ValueError, fn, "weight", "an even number of rows (gate and up stacked)",
                        f"shape {tuple(weight.shape)}")
    else:
        _linear_args(fn, x, weight, bias, swiglu=True)


def _swiglu_product(x, weight, bias):
    """``linear_swiglu`` of checked arguments."""
    if bias is None and _plain(x, weight):
        k = c.kernel(x, "linear_swiglu")
        if k is not None:
            r = k(_rows(x), weight.native)
            if r is not NotImplemented:
                return xp.reshape(c.wrap(r, x.device), x.shape[:-1] + (weight.shape[0] // 2,))
    y = _product(x, weight, bias)
    n = y.shape[-1] // 2
    return swiglu(y[..., :n], y[..., n:])


def rms_norm_linear(x, norm_weight, weight, bias=None, eps=None, swiglu=False):
    """``linear(rms_norm(x, (in_features,), norm_weight, eps), weight, bias)``, or
    :func:`linear_swiglu` of the normalized x with ``swiglu=True``: a pre-norm block's norm and
    the projection that reads it. One kernel where the device has it (cuda: bfloat16/float16,
    up to 8 rows of x, in_features <= 1024, no bias), else the two calls; the same values
    either way."""
    fn = "rms_norm_linear"                # errors named as this function on every path
    if eps is not None:
        eps = c.number(fn, "eps", eps, 0.0)
    quantized = isinstance(weight, _quantized.QuantizedWeight)
    if swiglu:
        _swiglu_args(fn, x, weight, bias)
    elif not quantized:
        _linear_args(fn, x, weight, bias)
    c.floating(fn, "x", x)
    c.param(fn, "norm_weight", norm_weight, x, (x.shape[-1],) if x.ndim else ())
    if bias is None and norm_weight is not None and not quantized and \
            _plain(x, norm_weight, weight):
        k = c.kernel(x, fn)
        if k is not None:
            r = k(_rows(x), norm_weight.native, weight.native,
                  c.norm_eps(fn, x.dtype, eps), bool(swiglu))
            if r is not NotImplemented:
                width = weight.shape[0] // 2 if swiglu else weight.shape[0]
                return xp.reshape(c.wrap(r, x.device), x.shape[:-1] + (width,))
    if quantized and norm_weight is not None and norm_weight.dtype == x.dtype:
        k = _quantized_kernel(x, weight, bias, "rms_norm_linear_quantized")
        if k is not None:
            r = k(_rows(x), norm_weight.native, *_quantized_parts(weight),
                  c.norm_eps(fn, x.dtype, eps), bool(swiglu))
            if r is not NotImplemented:
                return xp.reshape(c.wrap(r, x.device), x.shape[:-1] + (r.shape[1],))
    h = rms_norm(x, (x.shape[-1],) if x.ndim else (), norm_weight, eps)
    return (_swiglu_product if swiglu else _product)(h, weight, bias)


def _quantized_kernel(x, weight, bias, name):
    """The device's fused kernel ``name`` for float32 x times QuantizedWeight ``weight`` on
    x's device without a bias, or None (ruda.nn then composes the calls)."""
    if bias is None and x.__class__ is xp.Array and x.dtype == xp.float32 and x.size \
            and weight.device == x.device and x.shape[-1] == weight.shape[1]:
        return c.kernel(x, name)
    return None


def _rows(x):
    """x's native storage as (rows, last axis)."""
    return xp.reshape(x, (x.size // x.shape[-1], x.shape[-1])).native


def _quantized_parts(w):
    """A QuantizedWeight's native (q, scales, mins, kind), as ``linear_quantized`` takes them."""
    return w.q.native, w.scales.native, None if w.mins is None else w.mins.native, w.kind


def add_linear(residual, x, weight, bias=None):
    """``residual + linear(x, weight, bias)`` in x's dtype, the product rounded first: a
    residual block's output projection and the add after it. One kernel where the device has it
    (cuda: bfloat16/float16, up to 8 rows of x, no bias), else the two calls; the same values
    either way."""
    if not isinstance(weight, _quantized.QuantizedWeight):
        _linear_args("add_linear", x, weight, bias)
    if bias is None and _plain(x, residual, weight) and \
            residual.shape == x.shape[:-1] + (weight.shape[0],):
        k = c.kernel(x, "add_linear")
        if k is not None:
            r = k(_rows(residual), _rows(x), weight.native)
            if r is not NotImplemented:
                return xp.reshape(c.wrap(r, x.device), residual.shape)
    if isinstance(weight, _quantized.QuantizedWeight) and residual.__class__ is xp.Array \
            and residual.dtype == x.dtype and residual.device == x.device \
            and residual.shape == x.shape[:-1] + (weight.shape[0],):
        k = _quantized_kernel(x, weight, bias, "add_linear_quantized")
        if k is not None:
            r = k(_rows(residual), _rows(x), *_quantized_parts(weight))
            if r is not NotImplemented:
                return xp.reshape(c.wrap(r, x.device), residual.shape)
    y = _product(x, weight, bias)
    c.same("add_linear", "residual", residual, y)
    if residual.shape != y.shape:
        raise c.err(ValueError, "add_linear", "residual", f"the product's shape {y.shape}",
                    residual.shape)
    return residual + y


def _index_range(fn, arg, idx, n):
    """Raises IndexError unless every value of integer array idx is in [0, n) (one sync)."""
    if idx.size == 0:
        return
    lo, hi = int(xp.min(idx)), int(xp.max(idx))
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        raise IndexError(f"ruda.nn.{fn}: {arg}: expected values in [0, {n}), got {bad}")


def embedding(indices, weight):
    """Rows of ``weight`` (num_embeddings, dim) at integer ``indices``: shape
    ``indices.shape + (dim,)``. An index out of range raises IndexError. A
    ``ruda.nn.QuantizedWeight`` gives its rows dequantized to float32."""
    c.integral("embedding", "indices", indices)
    if isinstance(weight, _quantized.QuantizedWeight):
        if weight.device != indices.device:
            raise c.err(ValueError, "embedding", "weight", f"indices' device {indices.device}",
                        weight.device)
        _index_range("embedding", "indices", indices, weight.shape[0])
        return embedding_rows(indices, weight)
    c.array("embedding", "weight", weight)
    if weight.device != indices.device:
        raise c.err(ValueError, "embedding", "weight", f"indices' device {indices.device}",
                    weight.device)
    if weight.ndim != 2:
        raise c.err(ValueError, "embedding", "weight", "2 dimensions (num_embeddings, dim)",
                    f"shape {weight.shape}")
    _index_range("embedding", "indices", indices, weight.shape[0])
    return embedding_rows(indices, weight)


def embedding_rows(indices, weight):
    """:func:`embedding` of indices known to be in range: no host read (a recorded decode step
    takes its tokens from device memory)."""
    if isinstance(weight, _quantized.QuantizedWeight):
        return _quantized.embedding(indices, weight)
    flat = xp.reshape(indices, (-1,))
    return xp.reshape(xp.take(weight, flat, axis=0), tuple(indices.shape) + (weight.shape[1],))


def one_hot(x, num_classes=-1):
    """``x[..., None] == arange(num_classes)`` as the device's default integer dtype (int64 where
    the device has it, as torch). ``num_classes=-1``: ``max(x) + 1``."""
    c.integral("one_hot", "x", x)
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral) \
            or num_classes < -1:
        raise c.err(ValueError, "one_hot", "num_classes", "-1 or a non-negative int", num_classes)
    n = int(num_classes)
    if n == -1:
        if x.size == 0:
            raise c.err(ValueError, "one_hot", "num_classes", "a value for an empty x", -1)
        n = int(xp.max(x)) + 1
    _index_range("one_hot", "x", x, n)
    idt = xp.__array_namespace_info__().default_dtypes(device=x.device)["integral"]
    # classes past x's dtype (uint8 x, 300 classes) in the wider index dtype: no wraparound
    cdt = x.dtype if n - 1 <= xp.iinfo(x.dtype).max else idt
    classes = xp.arange(n, dtype=cdt, device=x.device)
    return xp.astype(x[..., None] == classes, idt)


_DEFAULT_GEN = []


def dropout(x, p=0.5, training=False, generator=None):
    """Zeros each element with probability ``p`` and scales the rest by ``1 / (1 - p)`` when
    ``training``; the identity otherwise. Deviation from torch: ``training`` defaults to False
    (inference). The mask comes from ``generator`` (a ``ruda.random.Generator``), else from a
    module-wide one seeded 0."""
    c.floating("dropout", "x", x)
    p = c.number("dropout", "p", p, 0.0, 1.0)
    if not isinstance(training, bool):
        raise c.err(TypeError, "dropout", "training", "a bool", type(training).__name__)
    if not training or p == 0.0:
        return x
    if p == 1.0:
        return xp.zeros_like(x)
    import ruda.random
    if generator is None:
        if not _DEFAULT_GEN:
            _DEFAULT_GEN.append(ruda.random.Generator(0))
        generator = _DEFAULT_GEN[0]
    elif not isinstance(generator, ruda.random.Generator):
        raise c.err(TypeError, "dropout", "generator", "a ruda.random.Generator or None",
                    type(generator).__name__)
    if c.kernel(x, "dropout") is not None:
        # the device's fused kernel draws the words of the generator's next call itself
        call = generator.calls
        r = c.call(x, "dropout", x, p, generator.seed, call)
        if r is not None:
            generator.calls = call + 1
            return r
    # keep where a raw uint32 word >= p * 2**32 (probability 1 - p; no float conversion)
    keep = generator.bits(x.shape, device=x.device) >= min(round(p * 2.0**32), 2**32 - 1)
    y = c.up(x)
    return c.down(xp.where(keep, y * (1.0 / (1.0 - p)), 0.0), x.dtype)


def normalize(x, p=2.0, axis=1, eps=1e-12):
    """``x / max(||x||_p, eps)`` along ``axis`` (torch's ``dim``)."""
    c.floating("normalize", "x", x)
    p = c.number("normalize", "p", p)
    eps = c.number("normalize", "eps", eps, 0.0)
    ax = c.axis("normalize", axis, x.ndim)
    if x.ndim == 0:                                # a scalar is its own axis (torch's)
        return xp.reshape(normalize(xp.reshape(x, (1,)), p, 0, eps), ())
    if p == 2 and ax == x.ndim - 1 and x.size:     # rows: the device's one-pass kernel
        n = x.shape[-1]
        r = c.call(x, "l2_normalize", x if x.ndim == 2 else xp.reshape(x, (-1, n)), eps)
        if r is not None:
            return xp.reshape(r, x.shape)
    y = c.up(x)
    nrm = xp.linalg.vector_norm(y, ord=p, axis=ax, keepdims=True)
    return c.down(y / xp.maximum(nrm, eps), x.dtype)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(x, pad, mode="constant", value=0.0):
    """Pads ``x`` as torch: ``pad = (left_last, right_last, left_second_last, ...)`` (last axis
    first); negative pads crop. ``mode``: ``"constant"`` (with ``value``), ``"reflect"`` (pad <
    the axis' length), ``"replicate"``, ``"circular"`` (pad <= the axis' length after
    cropping; torch wraps further, or reads garbage). Unlike torch, the non-constant modes pad
    any number of trailing axes of any array (torch: 1 to 3 axes of a 2-D to 5-D input), and an
    output length of 0 is an empty axis in every mode (torch's reflect and replicate refuse it
    when every padded axis comes out empty). ``value`` is converted as torch does: its truth for
    bool x, truncated toward 0 for integer x (1.5 pads 1), NaN and infinities for floating x;
    a value outside x's dtype's range (-1 for uint8, NaN for int32, 1e6 for float16) is a
    ValueError, as torch's "cannot be converted without overflow", not a wrapped value."""
    c.array("pad", "x", x)
    if mode not in _PAD_MODES:
        raise c.err(ValueError, "pad", "mode", " or ".join(map(repr, _PAD_MODES)), repr(mode))
    try:
        pads = [int(v) for v in pad]
        if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in pad):
            raise TypeError
    except TypeError:
        raise c.err(TypeError, "pad", "pad", "a sequence of ints", repr(pad)) from None
    if len(pads) % 2 or len(pads) > 2 * x.ndim:
        raise c.err(ValueError, "pad", "pad", f"an even length <= 2 * x.ndim = {2 * x.ndim}",
                    len(pads))
    widths = {x.ndim - 1 - k: (pads[2 * k], pads[2 * k + 1]) for k in range(len(pads) // 2)
              if pads[2 * k] or pads[2 * k + 1]}
    if mode != "constant":
        if any(v < 0 for v in pads):
            return _pad_cropping(x, widths, mode)
        return _pad_borders(x, widths, mode)
    value = _pad_value(x.dtype, value)
    return _pad_constant(x, widths, value) if widths else xp.asarray(x, copy=True)


def _pad_value(dt, value):
    """pad's ``value`` as the Python scalar filling dtype ``dt`` (see pad)."""
    if not isinstance(value, numbers.Number):
        raise c.err(TypeError, "pad", "value", "a number", type(value).__name__)
    if dt == xp.bool:
        return bool(value)
    if xp.isdtype(dt, "complex floating"):
        return complex(value)
    if not isinstance(value, numbers.Real):
        raise c.err(TypeError, "pad", "value", f"a real number for x's dtype {dt}", value)
    v = int(value) if isinstance(value, numbers.Integral) else float(value)
    if xp.isdtype(dt, "integral"):
        lo, hi = xp.iinfo(dt).min, xp.iinfo(dt).max
        if not lo <= v <= hi:                      # (False for NaN)
            raise c.err(ValueError, "pad", "value", f"a number within {dt}'s range [{lo}, {hi}]",
                        value)
        return int(v)
    hi = float(xp.finfo(dt).max)
    if math.isfinite(v) and not -hi <= v <= hi:
        raise c.err(ValueError, "pad", "value",
                    f"NaN, an infinity or a number within {dt}'s range [{-hi}, {hi}]", value)
    return v


def _pad_constant(x, widths, value):
    """One output: x (cropped where a width is negative) copied into its interior, then each
    padded axis' two border slabs filled with ``value``."""
    crop = [slice(None)] * x.ndim
    for ax, (lo, hi) in widths.items():
        crop[ax] = slice(max(0, -lo), x.shape[ax] - max(0, -hi))
    x = x[tuple(crop)]
    shape, inner = list(x.shape), [slice(None)] * x.ndim
    for ax, (lo, hi) in widths.items():
        lo, hi = max(0, lo), max(0, hi)
        shape[ax] += lo + hi
        inner[ax] = slice(lo, lo + x.shape[ax])
    out = xp.empty(tuple(shape), dtype=x.dtype, device=x.device)
    out[tuple(inner)] = x
    for ax in widths:
        for border in (slice(0, inner[ax].start), slice(inner[ax].stop, shape[ax])):
            if border.stop > border.start:
                sl = [slice(None)] * x.ndim
                sl[ax] = border
                out[tuple(sl)] = value
    return out


def _check_border(n, lo, hi, mode):
    if mode == "reflect" and (lo >= n or hi >= n):
        raise c.err(ValueError, "pad", "pad",
                    f"values < the axis length {n} in mode 'reflect'", (lo, hi))
    if mode == "circular" and (lo > n or hi > n):
        raise c.err(ValueError, "pad", "pad",
                    f"values <= the axis length {n} in mode 'circular'", (lo, hi))


def _pad_cropping(x, widths, mode):
    """Non-constant modes with negative pads, as torch: reflect and replicate pad x by the
    positive pads, then crop (a border may come from beyond the cropped part); circular crops
    first, then wraps what is left. An output length of 0 gives an empty axis."""
    crop, grow = [slice(None)] * x.ndim, {}
    for ax, (lo, hi) in widths.items():
        n = x.shape[ax]
        _check_border(n, lo, hi, mode)
        if n + lo + hi <= 0:
            if n + lo + hi < 0:
                raise c.err(ValueError, "pad", "pad", f"an output length n + lo + hi >= 0 on "
                            f"axis {ax} (n = {n})", (lo, hi))
            crop[ax] = slice(0, 0)
            continue
        if lo > 0 or hi > 0:
            grow[ax] = (max(0, lo), max(0, hi))
        if mode != "circular":
            crop[ax] = slice(max(0, -lo), n + max(0, lo) + max(0, hi) - max(0, -hi))
            continue
        m = n - max(0, -lo) - max(0, -hi)
        if m < max(lo, hi):
            raise c.err(ValueError, "pad", "pad", f"values <= the axis length after cropping "
                        f"({m}) in mode 'circular'", (lo, hi))
        crop[ax] = slice(max(0, -lo), n - max(0, -hi))
    if not grow:                                # cropping only: a copy, not a view of x
        return xp.asarray(x[tuple(crop)], copy=True)
    if mode == "circular":
        return _pad_borders(x[tuple(crop)], grow, mode)
    return _pad_borders(x, grow, mode)[tuple(crop)]


def _pad_borders(x, widths, mode):
    """reflect / replicate / circular: one output, ``x`` written into its middle, then each
    padded axis' borders copied from inside it (so x is read once, not once per axis)."""
    for ax, (lo, hi) in widths.items():
        n = x.shape[ax]
        _check_border(n, lo, hi, mode)
        if n == 0:
            raise c.err(ValueError, "pad", "x", f"a non-empty axis {ax} in mode {mode!r}",
                        x.shape)
    shape = [n + sum(widths.get(ax, (0, 0))) for ax, n in enumerate(x.shape)]
    out = xp.empty(tuple(shape), dtype=x.dtype, device=x.device)
    region = [slice(widths.get(ax, (0, 0))[0], widths.get(ax, (0, 0))[0] + n)
              for ax, n in enumerate(x.shape)]
    out[tuple(region)] = x
    for ax, (lo, hi) in widths.items():
        n = x.shape[ax]

        def copy(dst, src, flip=False):
            d, s = list(region), list(region)
            d[ax], s[ax] = dst, src
            v = out[tuple(s)]
            out[tuple(d)] = xp.flip(v, axis=ax) if flip else v
        if mode == "reflect":                   # the edge itself is not repeated
            copy(slice(0, lo), slice(lo + 1, 2 * lo + 1), True)
            copy(slice(lo + n, lo + n + hi), slice(lo + n - 1 - hi, lo + n - 1), True)
        elif mode == "replicate":               # the edge broadcast over the border
            copy(slice(0, lo), slice(lo, lo + 1))
            copy(slice(lo + n, lo + n + hi), slice(lo + n - 1, lo + n))
        else:                                   # circular: the other end
            copy(slice(0, lo), slice(n, lo + n))
            copy(slice(lo + n, lo + n + hi), slice(lo, lo + hi))
        region[ax] = slice(0, lo + n + hi)
    return out
