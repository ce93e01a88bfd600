"""ruda.nn in float16 and bfloat16 vs torch.nn.functional on CPU, on every device that has the
dtype: the result keeps the input's dtype, statistics accumulate in float32.

The oracle is torch in float64 on the same half-rounded inputs; the tolerances are stated per
dtype: a few units in the last place of the half dtype (float16: 2e-3 relative, bfloat16: 1e-2),
with an absolute floor scaled by the result's magnitude (an output computed in float32 and
rounded once is within half an ulp of its float32 value; the intermediates that torch also
keeps in half -- none here -- would add more).
"""
import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from conftest import to_numpy

torch = pytest.importorskip("torch")
F = torch.nn.functional

HALVES = ["float16"] + (["bfloat16"] if getattr(xp, "bfloat16", None) is not None else [])
TOL = {"float16": 2e-3, "bfloat16": 1e-2}


def _put(a, device, name):
    """(ruda half array, the float64 torch tensor of the same rounded values)."""
    h = np.asarray(a, np.float32).astype(np.dtype(getattr(xp, name)))
    return xp.asarray(h, device=device), torch.from_numpy(h.astype(np.float64))


def _need(device, name):
    dt = np.dtype(getattr(xp, name))
    if not device.backend.supports(dt):
        pytest.skip(f"{name} is not supported on {device}{device.backend.unsupported_reason(dt)}")


def _close(got, want, name, scale=1.0):
    assert got.dtype is getattr(xp, name)
    g = to_numpy(got).astype(np.float64)
    w = want.numpy() if hasattr(want, "numpy") else np.asarray(want)
    mag = max(float(np.abs(w).max()), 1e-30) * scale
    np.testing.assert_allclose(g, w, rtol=TOL[name], atol=TOL[name] * mag)


@pytest.mark.parametrize("name", HALVES)
def test_rows_and_norms(device, name):
    _need(device, name)
    rng = np.random.default_rng(31)
    x, tx = _put(rng.standard_normal((6, 40)) * 3 + 1, device, name)
    w, tw = _put(rng.standard_normal(40), device, name)
    b, tb = _put(rng.standard_normal(40), device, name)
    _close(nn.softmax(x, axis=-1), F.softmax(tx, -1), name)
    _close(nn.log_softmax(x, axis=-1), F.log_softmax(tx, -1), name)
    _close(nn.layer_norm(x, 40, w, b, eps=1e-5), F.layer_norm(tx, (40,), tw, tb, eps=1e-5), name)
    _close(nn.rms_norm(x, 40, w, eps=1e-5), F.rms_norm(tx, (40,), tw, eps=1e-5), name)
    _close(nn.logsumexp(x, axis=-1), torch.logsumexp(tx, -1), name)
    # mixed precision: float32 affine parameters with half x
    w32 = xp.asarray(to_numpy(w).astype(np.float32), device=device)
    _close(nn.layer_norm(x, 40, w32, None, eps=1e-5), F.layer_norm(tx, (40,), tw, None, eps=1e-5), name)


@pytest.mark.parametrize("name", HALVES)
def test_activations_and_linear(device, name):
    _need(device, name)
    rng = np.random.default_rng(32)
    x, tx = _put(rng.standard_normal((4, 24)) * 2, device, name)
    for fn, want in (("relu", F.relu), ("silu", F.silu), ("gelu", F.gelu), ("sigmoid", torch.sigmoid),
                     ("elu", F.elu), ("softplus", F.softplus), ("hardswish", F.hardswish)):
        _close(getattr(nn, fn)(x), want(tx), name)
    g, tg = _put(rng.standard_normal((4, 24)), device, name)
    _close(nn.swiglu(x, g), F.silu(tx) * tg, name)
    w, tw = _put(rng.standard_normal((8, 24)) / 5, device, name)
    b, tb = _put(rng.standard_normal(8), device, name)
    _close(nn.linear(x, w, b), F.linear(tx, tw, tb), name)


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention(device, name, causal):
    _need(device, name)
    rng = np.random.default_rng(33)
    L = 12 if causal else 9                    # torch's causal mask is upper-left aligned
    q, tq = _put(rng.standard_normal((2, 4, L, 16)), device, name)
    k, tk = _put(rng.standard_normal((2, 2, 12, 16)), device, name)
    v, tv = _put(rng.standard_normal((2, 2, 12, 16)), device, name)
    got = nn.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    want = F.scaled_dot_product_attention(tq, tk.repeat_interleave(2, 1), tv.repeat_interleave(2, 1),
                                          is_causal=causal)
    _close(got, want, name)


@pytest.mark.parametrize("name", HALVES)
def test_transposed_and_permuted_inputs(device, name):
    """Half inputs that are views in another layout (a transpose, a permutation) give the values
    of their contiguous copies."""
    _need(device, name)
    rng = np.random.default_rng(33)
    x, tx = _put(rng.standard_normal((24, 5)) * 2, device, name)
    x, tx = x.mT, tx.T
    for fn, want in (("silu", F.silu), ("gelu", F.gelu), ("sigmoid", torch.sigmoid), ("elu", F.elu),
                     ("softplus", F.softplus), ("hardswish", F.hardswish), ("relu6", F.relu6),
                     ("hardsigmoid", F.hardsigmoid), ("erf", torch.erf)):
        _close(getattr(nn, fn)(x), want(tx), name)
    _close(xp.erf(x), torch.erf(tx), name)
    y, ty = _put(rng.standard_normal((2, 6, 3)) * 3 + 1, device, name)
    y, ty = xp.permute_dims(y, (0, 2, 1)), ty.permute(0, 2, 1)
    _close(nn.batch_norm(y, None, None, training=True), F.batch_norm(ty, None, None, training=True), name)
