"""ruda.nn.rope_frequencies (every rope_scaling kind) and apply_rope.

The frequencies are checked against a NumPy float64 transcription of transformers'
modeling_rope_utils (``_compute_*_parameters``), the rotation against torch (rotate_half for
the half-split layout, pairs for GPT-J's interleaved one)."""
import math

import numpy as np
import pytest

import ruda
import ruda.nn as nn

torch = pytest.importorskip("torch")


def _f64(device):
    return "float64" in ruda.__array_namespace_info__().dtypes(device=device)


# ----------------------------------------------------------------------- transformers, in NumPy
def _default(dim, base):
    return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


def _ref_inv_freq(dim, base, scaling, seq_len):
    kind = scaling.get("rope_type", "default")
    if kind == "default":
        return _default(dim, base), 1.0
    if kind == "linear":
        return _default(dim, base) / scaling["factor"], 1.0
    if kind == "dynamic":
        factor, mpe = scaling["factor"], scaling["original_max_position_embeddings"]
        seq_len = max(seq_len, mpe)
        base = base * ((factor * seq_len / mpe) - (factor - 1)) ** (dim / (dim - 2))
        return _default(dim, base), 1.0
    if kind == "llama3":
        inv = _default(dim, base)
        factor, lf, hf = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wl, high_wl = old / lf, old / hf
        wl = 2 * math.pi / inv
        inv_l = np.where(wl > low_wl, inv / factor, inv)
        smooth = (old / wl - lf) / (hf - lf)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wl < high_wl) & ~(wl > low_wl)
        return np.where(medium, smoothed, inv_l), 1.0
    if kind == "yarn":
        factor = scaling["factor"]
        orig = scaling["original_max_position_embeddings"]

        def get_mscale(scale, mscale=1):
            return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0
        attn = scaling.get("attention_factor")
        if attn is None:
            ms, msa = scaling.get("mscale"), scaling.get("mscale_all_dim")
            attn = get_mscale(factor, ms) / get_mscale(factor, msa) if ms and msa \
                else get_mscale(factor)
        bf, bs = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1

        def corr(rot):
            return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
        low, high = corr(bf), corr(bs)
        if scaling.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0, 1)
        pos = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
        extra = 1 - ramp
        inv = (1.0 / (factor * pos)) * (1 - extra) + (1.0 / pos) * extra
        return inv, attn
    raise AssertionError(kind)


SCALINGS = [
    None,
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16},
    {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 64},
    {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
     "original_max_position_embeddings": 64},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32},
    {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64,
     "beta_fast": 16, "beta_slow": 2, "mscale": 0.707, "mscale_all_dim": 0.707 * 1.3},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
     "attention_factor": 1.5, "truncate": False},
]


@pytest.mark.parametrize("scaling", SCALINGS, ids=lambda s: (s or {}).get("rope_type", "none"))
def test_frequencies(device, scaling):
    dim, base, T = 32, 500.0, 40
    inv, attn = _ref_inv_freq(dim, base, scaling or {}, T)
    ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
    dt, tol = (ruda.float64, 1e-12) if _f64(device) else (ruda.float32, 2e-6)
    cos, sin = nn.rope_frequencies(dim, base, T, scaling, device=device, dtype=dt)
    assert cos.dtype == dt and cos.shape == (T, dim // 2) and cos.device == ruda.device(device)
    np.testing.assert_allclose(np.asarray(cos.to_device("cpu")), attn * np.cos(ang), atol=tol * 40)
    np.testing.assert_allclose(np.asarray(sin.to_device("cpu")), attn * np.sin(ang), atol=tol * 40)
    # the scaling changes the table (so the check above can fail), except dynamic NTK within
    # its original context
    plain = np.cos(np.arange(T)[:, None] * _default(dim, base)[None, :])
    same = scaling is None or scaling.get("original_max_position_embeddings", 0) > T and \
        scaling["rope_type"] == "dynamic"
    assert np.allclose(np.asarray(cos.to_device("cpu")), plain, atol=1e-3) == same


def test_frequencies_positions_array(device):
    pos = np.array([3, 17, 5, 30], dtype=np.int32)
    scaling = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 8}
    cos, sin = nn.rope_frequencies(16, 10000.0, ruda.asarray(pos, device=device), scaling)
    assert cos.dtype == ruda.float32                       # the default dtype
    inv, _ = _ref_inv_freq(16, 10000.0, scaling, 31)       # seq_len: the max position + 1
    ang = pos[:, None] * inv[None, :]
    np.testing.assert_allclose(np.asarray(cos.to_device("cpu")), np.cos(ang), atol=1e-6)
    np.testing.assert_allclose(np.asarray(sin.to_device("cpu")), np.sin(ang), atol=1e-6)


def _torch_rope(x, cos, sin, interleaved, r):
    """transformers' apply_rotary_pos_emb (rotate_half) or GPT-J's pairs, in torch float64."""
    x = torch.from_numpy(x)
    c, s = torch.from_numpy(cos), torch.from_numpy(sin)
    xr, rest = x[..., :r], x[..., r:]
    if interleaved:
        c2, s2 = c.repeat_interleave(2, -1), s.repeat_interleave(2, -1)
        x1, x2 = xr[..., ::2], xr[..., 1::2]
        rot = torch.stack((-x2, x1), dim=-1).flatten(-2)
    else:
        c2, s2 = torch.cat((c, c), -1), torch.cat((s, s), -1)
        h = r // 2
        rot = torch.cat((-xr[..., h:], xr[..., :h]), dim=-1)
    return torch.cat((xr * c2 + rot * s2, rest), dim=-1).numpy()


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("rotary_dim", [None, 8])
def test_apply_rope(device, interleaved, rotary_dim):
    rng = np.random.default_rng(3)
    B, H, T, D = 2, 3, 7, 16
    r = rotary_dim or D
    dt, tol = (np.float64, 1e-12) if _f64(device) else (np.float32, 1e-5)
    x = rng.standard_normal((B, H, T, D)).astype(dt)
    cos, sin = nn.rope_frequencies(r, 100.0, T, dtype=ruda.asarray(x, device=device).dtype,
                                   device=device)
    c, s = np.asarray(cos.to_device("cpu")), np.asarray(sin.to_device("cpu"))
    out = nn.apply_rope(ruda.asarray(x, device=device), cos, sin, interleaved=interleaved,
                        rotary_dim=rotary_dim)
    assert out.dtype == ruda.asarray(x, device=device).dtype and out.shape == x.shape
    want = _torch_rope(x.astype(np.float64), c.astype(np.float64), s.astype(np.float64),
                       interleaved, r)
    got = np.asarray(out.to_device("cpu"))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if rotary_dim:
        np.testing.assert_array_equal(got[..., r:], x[..., r:])


def test_frequencies_of_long_tables_on_every_device(device):
    """A table of T positions is the cpu's (angles in float64) on every device, also one without
    float64: float32 angles of position 32767 were 1e-3 off."""
    for scaling in (None, {"rope_type": "linear", "factor": 4.0}):
        c, s = nn.rope_frequencies(64, 10000.0, 32768, scaling, device=device)
        c0, s0 = nn.rope_frequencies(64, 10000.0, 32768, scaling, device="cpu")
        assert c.device == device and c.dtype == ruda.float32
        for got, want in ((c, c0), (s, s0)):     # to float32's last bit (a GPU's f64 cos)
            np.testing.assert_allclose(np.asarray(got.to_device("cpu")), np.asarray(want),
                                       rtol=0, atol=2**-23)


@pytest.mark.parametrize("shape", [(2, 3, 0, 8), (0, 2, 4, 8)])
def test_apply_rope_of_nothing(device, shape):
    """No positions or no batch (as torch): an empty result of x's shape and dtype."""
    x = ruda.zeros(shape, device=device)
    cos, sin = nn.rope_frequencies(8, positions=shape[-2], device=device)
    out = nn.apply_rope(x, cos, sin)
    assert out.shape == shape and out.dtype == x.dtype and out.device == x.device


@pytest.mark.parametrize("interleaved", [False, True])
def test_apply_rope_composite(device, interleaved):
    """The namespace-op path (every device's fallback) directly."""
    from ruda.nn._rope import _rope_composite
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5, 12)).astype(np.float32)
    cos, sin = nn.rope_frequencies(8, 10000.0, 5, device=device)
    out = _rope_composite(ruda.asarray(x, device=device), cos, sin, interleaved, 8)
    want = _torch_rope(x.astype(np.float64), np.asarray(cos.to_device("cpu"), np.float64),
                       np.asarray(sin.to_device("cpu"), np.float64), interleaved, 8)
    np.testing.assert_allclose(np.asarray(out.to_device("cpu")), want, rtol=1e-5, atol=1e-5)


def test_apply_rope_bfloat16_cpu():
    if getattr(ruda, "bfloat16", None) is None:
        pytest.skip("no bfloat16 (ml_dtypes missing)")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 8)).astype(np.float32)
    xb = ruda.astype(ruda.asarray(x), ruda.bfloat16)
    cos, sin = nn.rope_frequencies(8, 10000.0, 6)
    out = nn.apply_rope(xb, cos, sin)
    assert out.dtype == ruda.bfloat16
    xr = np.asarray(ruda.astype(xb, ruda.float32), np.float64)
    want = _torch_rope(xr, np.asarray(cos, np.float64), np.asarray(sin, np.float64), False, 8)
    np.testing.assert_allclose(np.asarray(ruda.astype(out, ruda.float32)), want, rtol=1e-2,
                               atol=1e-2)


def test_bad_input(device):
    x = ruda.ones((2, 4, 6), device=device, dtype=ruda.float32)
    cos, sin = nn.rope_frequencies(6, 10000.0, 4, device=device)
    with pytest.raises(ValueError, match=r"ruda\.nn\.rope_frequencies: head_dim: expected an even"):
        nn.rope_frequencies(7, positions=4)
    with pytest.raises(TypeError, match=r"ruda\.nn\.rope_frequencies: positions: expected an int"):
        nn.rope_frequencies(8)
    with pytest.raises(ValueError, match=r"scaling\['rope_type'\]: expected one of"):
        nn.rope_frequencies(8, positions=4, scaling={"rope_type": "nope"})
    with pytest.raises(ValueError, match=r"scaling: expected a 'factor' entry"):
        nn.rope_frequencies(8, positions=4, scaling={"rope_type": "linear"})
    with pytest.raises(ValueError, match=r"ruda\.nn\.apply_rope: x: expected an even rotary"):
        nn.apply_rope(ruda.ones((4, 7), device=device), cos, sin)
    with pytest.raises(ValueError, match=r"ruda\.nn\.apply_rope: rotary_dim: expected an even"):
        nn.apply_rope(x, cos, sin, rotary_dim=5)
    with pytest.raises(ValueError, match=r"ruda\.nn\.apply_rope: rotary_dim: expected at most"):
        nn.apply_rope(x, cos, sin, rotary_dim=8)
    with pytest.raises(ValueError, match=r"ruda\.nn\.apply_rope: cos: expected shape"):
        nn.apply_rope(x, cos[:3], sin)
    with pytest.raises(TypeError, match=r"ruda\.nn\.apply_rope: x: expected a real floating"):
        nn.apply_rope(ruda.ones((2, 4, 6), dtype=ruda.int32, device=device), cos, sin)
