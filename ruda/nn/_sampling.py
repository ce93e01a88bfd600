"""top_k and token sampling from logits (temperature, top-k, top-p, min-p)."""
import math
import numbers
import operator
import os

import ruda as xp
import ruda.random
from ruda.nn._check import axis as _axis, compute_dtype, err, fresh, kernel, native, number, real, \
    wrap


def _err(fn, cls, arg, expected, got):
    return err(cls, fn, arg, expected, got)


def top_k(x, k, axis=-1):
    """``(values, indices)`` of the ``k`` largest entries along ``axis``, largest first (NaN
    above +inf, as torch), ties in order of index (the lower first; NaNs among themselves too).
    Like ``torch.topk(x, k, dim=axis)``; ``k`` larger than the axis is an error. Indices have the
    default index dtype."""
    fn = "top_k"
    real(fn, "x", x)
    if x.ndim == 0:
        raise _err(fn, ValueError, "x", "at least one dimension", "a 0-d array")
    axis = _axis(fn, axis, x.ndim)
    n = x.shape[axis]
    try:
        if isinstance(k, bool):
            raise TypeError
        k = operator.index(k)
    except TypeError:
        raise _err(fn, TypeError, "k", "an int", type(k).__name__) from None
    if not 0 <= k <= n:
        raise _err(fn, ValueError, "k", f"0 <= k <= {n} (the size of axis {axis})", k)
    xm = x if axis == x.ndim - 1 else xp.moveaxis(x, axis, -1)
    lead = xm.shape[:-1]
    rows = 1
    for d in lead:
        rows *= d
    x2 = xp.reshape(xm, (rows, n))
    vals = idx = None
    kern = kernel(x, "top_k")
    if kern is not None and rows and n:
        res = kern(native(x2), k)
        if res is not NotImplemented:
            vals, idx = wrap(res[0], x.device), wrap(res[1], x.device)
            if idx.dtype != _index_dtype(x.device):
                idx = xp.astype(idx, _index_dtype(x.device))
    if vals is None:
        # a stable descending sort keeps tied entries in index order
        idx = xp.argsort(x2, axis=-1, descending=True, stable=True)[:, :k]
        vals = xp.take_along_axis(x2, idx, axis=-1)
    vals, idx = xp.reshape(vals, lead + (k,)), xp.reshape(idx, lead + (k,))
    if axis != x.ndim - 1:
        vals, idx = xp.moveaxis(vals, -1, axis), xp.moveaxis(idx, -1, axis)
    return vals, idx


_top_k = top_k          # the name top_k is an argument below


def _index_dtype(dev):
    return xp.__array_namespace_info__().default_dtypes(device=dev)["indexing"]


def _softmax(s):
    m = xp.max(s, axis=-1, keepdims=True)
    e = xp.exp(s - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


def _check_filters(fn, top_k, top_p, min_p):
    """The filters of sample / filter_logits checked: (top_k, top_p, min_p)."""
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):   # NumPy's too
            raise _err(fn, TypeError, "top_k", "an int or None", type(top_k).__name__)
        top_k = int(top_k)
        if top_k < 1:
            raise _err(fn, ValueError, "top_k", "an int >= 1", top_k)
    if top_p is not None:
        top_p = number(fn, "top_p", top_p, 0.0, 1.0, lo_open=True)
    if min_p is not None:
        min_p = number(fn, "min_p", min_p, 0.0, 1.0)
    return top_k, top_p, min_p


def _check_logits(fn, logits, ndim):
    """logits a real floating ruda array of ``ndim`` dimensions (None: at least 1), V >= 1."""
    if not isinstance(logits, xp.Array):
        raise _err(fn, TypeError, "logits", "a ruda array", type(logits).__name__)
    if not xp.isdtype(logits.dtype, "real floating"):
        raise _err(fn, TypeError, "logits", "a real floating dtype", logits.dtype)
    if (logits.ndim != ndim if ndim else logits.ndim < 1) or logits.shape[-1] == 0:
        raise _err(fn, ValueError, "logits", "shape (B, V) with V >= 1" if ndim else
                   "shape (..., V) with V >= 1", logits.shape)


def filter_logits(logits, top_k=None, top_p=None, min_p=None):
    """The scores with filtered tokens set to -inf, as transformers' logits warpers in the
    order top-k, top-p, min-p (one token is always kept), along the last axis of ``logits``
    ``(..., V)``:

    - ``top_k``: keep the k highest scores (and any tied with the k-th);
    - ``top_p``: nucleus: drop the lowest-probability tokens while their cumulative probability
      (ascending) stays at most ``1 - top_p``;
    - ``min_p``: drop tokens whose probability is below ``min_p`` times the highest."""
    _check_logits("filter_logits", logits, None)
    return fresh(_filter(logits, *_check_filters("filter_logits", top_k, top_p, min_p)), logits)


def _filter(s, top_k, top_p, min_p):
    V = s.shape[-1]
    if top_k is not None and top_k < V:
        kth = _top_k(s, top_k, axis=-1)[0][..., -1:]
        s = xp.where(s < kth, -xp.inf, s)
    if top_p is not None and top_p < 1.0:
        order = xp.argsort(s, axis=-1, stable=True)                   # ascending
        srt = xp.take_along_axis(s, order, axis=-1)
        cum = xp.cumulative_sum(_softmax(srt), axis=-1)
        drop = cum <= 1.0 - top_p
        drop = xp.concat((drop[..., :-1], xp.zeros_like(drop[..., -1:])), axis=-1)  # keep the top
        rank = xp.argsort(order, axis=-1, stable=True)               # inverse permutation
        s = xp.where(xp.take_along_axis(drop, rank, axis=-1), -xp.inf, s)
    if min_p is not None and min_p > 0.0:
        p = _softmax(s)
        s = xp.where(p < min_p * xp.max(p, axis=-1, keepdims=True), -xp.inf, s)
    return s


def sample(logits, temperature=1.0, top_k=None, top_p=None, min_p=None, generator=None):
    """One token index per row of ``logits`` (B, V): the default index dtype, shape (B,).

    ``temperature == 0`` takes the argmax (the lowest index among ties). Otherwise the logits
    are divided by ``temperature``, filtered as :func:`filter_logits` (top-k, then top-p, then
    min-p, as transformers' logits warpers) and a token is drawn from their softmax by the
    Gumbel-max rule: ``argmax(s - log(-log(u)))`` with ``u`` uniform from ``generator`` (a
    ``ruda.random.Generator``; None: one seeded from the OS), which picks token i with
    probability ``softmax(s)[i]`` exactly and needs no cumulative sum over the vocabulary.
    bfloat16 logits compute in float32."""
    fn = "sample"
    _check_logits(fn, logits, 2)
    # inf refused: logits / inf sample uniformly over the vocabulary and make -inf NaN
    temperature = number(fn, "temperature", temperature, 0.0, math.inf, hi_open=True)
    top_k, top_p, min_p = _check_filters(fn, top_k, top_p, min_p)
    if generator is not None and not isinstance(generator, ruda.random.Generator):
        raise _err(fn, TypeError, "generator", "a ruda.random.Generator or None",
                   type(generator).__name__)
    s = logits if compute_dtype(logits.dtype) == logits.dtype else \
        xp.astype(logits, compute_dtype(logits.dtype))
    if temperature == 0.0:
        return xp.argmax(s, axis=-1)
    s = _filter(s / temperature, top_k, top_p, min_p)
    if generator is None:
        generator = ruda.random.Generator(int.from_bytes(os.urandom(8), "little"))
    u = generator.random(s.shape, dtype=s.dtype, device=s.device)
    g = -xp.log(-xp.log(u))                 # Gumbel noise; u = 0 gives -inf, never chosen
    return xp.argmax(s + g, axis=-1)
