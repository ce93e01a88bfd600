"""ruda.nn.QuantizedWeight (GGML Q8_0, Q4_0, Q4_1 blocks kept quantized) on every device: its
values against the gguf package's dequantize, linear against the dequantized matrix times x in
float64, embedding rows, the host kernel's GEMV and GEMM paths and the composed path."""
import numpy as np
import pytest

gguf = pytest.importorskip("gguf")
from gguf import GGMLQuantizationType as GT                             # noqa: E402
from gguf.quants import dequantize as gg_dequantize                     # noqa: E402
from gguf.quants import quantize as gg_quantize                         # noqa: E402

import ruda as xp                                                        # noqa: E402
import ruda.nn as nn                                                     # noqa: E402
from ruda.nn import _quantized                                           # noqa: E402
from ruda.nn.models._gguf import split_blocks                            # noqa: E402

from conftest import to_numpy                                            # noqa: E402

KINDS = {"q8_0": GT.Q8_0, "q4_0": GT.Q4_0, "q4_1": GT.Q4_1}


def _weight(rng, kind, out, n, device):
    """(QuantizedWeight on device, float64 dequantized oracle) of a random (out, n) matrix
    quantized by the gguf package."""
    w = (rng.standard_normal((out, n)) * rng.uniform(0.2, 3.0, (out, 1))).astype(np.float32)
    raw = gg_quantize(w, KINDS[kind])
    q, d, m = split_blocks(kind, raw)
    qw = nn.QuantizedWeight(kind, xp.asarray(q, device=device), xp.asarray(d, device=device),
                            None if m is None else xp.asarray(m, device=device))
    return qw, gg_dequantize(raw, KINDS[kind]).astype(np.float64)


@pytest.mark.parametrize("kind", KINDS)
def test_dequantize_matches_gguf(device, kind):
    rng = np.random.default_rng(1 + list(KINDS).index(kind))
    qw, ref = _weight(rng, kind, 24, 96, device)
    assert qw.shape == (24, 96) and qw.device == device and qw.kind == kind
    got = qw.dequantize()
    assert got.dtype == xp.float32
    np.testing.assert_array_equal(to_numpy(got), ref.astype(np.float32))


def _check_linear(y, x, ref, b):
    """y close to x @ ref.T + b within float32 accumulation: a bound of n ulps of |x| @ |w|."""
    xf = x.astype(np.float64)
    want = xf @ ref.T + (0 if b is None else b.astype(np.float64))
    bound = 1e-7 * x.shape[-1] * (np.abs(xf) @ np.abs(ref).T + (0 if b is None else np.abs(b)))
    assert np.all(np.abs(to_numpy(y).astype(np.float64) - want) <= bound + 1e-6)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows", [1, 5, 19, 100])
def test_linear_matches_dequantized(device, kind, rows):
    """1, 5 and 19 rows: the host GEMV (rows of x one, two and four at a time); 100:
    dequantized blocks and a matmul (prefill)."""
    rng = np.random.default_rng(10 * rows + list(KINDS).index(kind))
    qw, ref = _weight(rng, kind, 40, 128, device)
    x = rng.standard_normal((rows, 128)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32) if rows != 5 else None
    y = nn.linear(xp.asarray(x, device=device), qw,
                  None if b is None else xp.asarray(b, device=device))
    assert y.dtype == xp.float32 and y.shape == (rows, 40)
    _check_linear(y, x, ref, b)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("out", [41, 1031])
def test_linear_odd_output_rows(device, kind, out):
    """One row of x against an odd number of output rows: the host GEMV takes weight rows two
    at a time (41: serially; 1031: in chunks of odd sizes on the thread pool)."""
    rng = np.random.default_rng(out)
    qw, ref = _weight(rng, kind, out, 128, device)
    x = rng.standard_normal((1, 128)).astype(np.float32)
    _check_linear(nn.linear(xp.asarray(x, device=device), qw), x, ref, None)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("out", [48, 1030])
def test_norm_and_residual_projections(device, kind, out):
    """rms_norm_linear (plain and swiglu) and add_linear with a QuantizedWeight: the composed
    calls' values exactly (a device may fuse them: 48 output rows run serially on the host,
    1030 on its thread pool in chunks of odd sizes), and float64 oracles within float32."""
    rng = np.random.default_rng(50 + list(KINDS).index(kind))
    qw, ref = _weight(rng, kind, out, 96, device)
    h = out // 2
    for lead in [(1, 1), (3,), (2, 4)]:
        x = rng.standard_normal(lead + (96,)).astype(np.float32)
        g = rng.uniform(0.5, 1.5, 96).astype(np.float32)
        res = rng.standard_normal(lead + (out,)).astype(np.float32)
        X, G, R = (xp.asarray(v, device=device) for v in (x, g, res))
        y = nn.linear(nn.rms_norm(X, (96,), G, 1e-5), qw)
        got = nn.rms_norm_linear(X, G, qw, eps=1e-5)
        assert got.dtype == xp.float32 and got.shape == lead + (out,)
        np.testing.assert_array_equal(to_numpy(got), to_numpy(y))
        xf = x.astype(np.float64)
        hf = xf / np.sqrt((xf * xf).mean(-1, keepdims=True) + 1e-5) * g
        _check_linear(xp.reshape(got, (-1, out)), hf.reshape(-1, 96), ref, None)
        got = nn.rms_norm_linear(X, G, qw, eps=1e-5, swiglu=True)
        assert got.dtype == xp.float32 and got.shape == lead + (h,)
        np.testing.assert_array_equal(to_numpy(got), to_numpy(nn.swiglu(y[..., :h], y[..., h:])))
        got = nn.add_linear(R, X, qw)
        assert got.dtype == xp.float32 and got.shape == lead + (out,)
        np.testing.assert_array_equal(to_numpy(got), to_numpy(R + nn.linear(X, qw)))
    with pytest.raises(ValueError, match=r"ruda.nn.rms_norm_linear: norm_weight: expected shape"):
        nn.rms_norm_linear(X, G[:20], qw)
    with pytest.raises(ValueError, match=r"ruda.nn.linear: x: expected last axis of length"):
        nn.rms_norm_linear(X[..., :64], G[:64], qw)
    with pytest.raises(ValueError, match=r"ruda.nn.add_linear: residual: expected the product's"):
        nn.add_linear(R[..., :20], X, qw)


def test_linear_batched_shape_and_composed_blocks(device, monkeypatch):
    """x (B, T, in); the composed path over several blocks of output rows (the host kernel
    switched off), which every device without a kernel takes."""
    rng = np.random.default_rng(7)
    qw, ref = _weight(rng, "q4_1", 48, 64, device)
    x = rng.standard_normal((2, 3, 64)).astype(np.float32)
    y = nn.linear(xp.asarray(x, device=device), qw)
    assert y.shape == (2, 3, 48)
    _check_linear(xp.reshape(y, (6, 48)), x.reshape(6, 64), ref, None)
    from ruda.backends.host import _nn_quant
    monkeypatch.setattr(_nn_quant, "_nb", None)
    monkeypatch.setattr(_quantized, "_COMPOSE_ELEMS", 64 * 20)
    y2 = nn.linear(xp.asarray(x[0], device=device), qw)
    _check_linear(y2, x[0], ref, None)


def test_linear_float64_composes(device):
    if "float64" not in xp.__array_namespace_info__().dtypes(device=device):
        pytest.skip(f"{device} has no float64")
    rng = np.random.default_rng(3)
    qw, ref = _weight(rng, "q8_0", 16, 64, device)
    x = rng.standard_normal((3, 64))
    y = nn.linear(xp.asarray(x, device=device), qw)
    assert y.dtype == xp.float64
    np.testing.assert_allclose(to_numpy(y), x @ ref.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_quantize_matches_ggml(device, kind):
    """QuantizedWeight.quantize gives GGML's integers (scales kept in float32, the file's in
    float16)."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 64)).astype(np.float32)
    qw = nn.QuantizedWeight.quantize(xp.asarray(w, device=device), kind)
    q, d, m = split_blocks(kind, gg_quantize(w, KINDS[kind]))
    np.testing.assert_array_equal(to_numpy(qw.q), q)
    np.testing.assert_allclose(to_numpy(qw.scales), d, rtol=1e-3)
    if m is not None:
        np.testing.assert_allclose(to_numpy(qw.mins), m, rtol=1e-3)


def _ggml_bytes(qw):
    """qw's blocks as GGML lays them out (float16 scale, q4_1's float16 min, then q)."""
    out, nb = qw.scales.shape
    f16 = [to_numpy(a).astype(np.float16).view(np.uint8).reshape(out, nb, 2)
           for a in (qw.scales, qw.mins) if a is not None]
    q = to_numpy(qw.q).view(np.uint8).reshape(out, nb, -1)
    return np.concatenate(f16 + [q], axis=2).reshape(out, -1)


@pytest.mark.parametrize("kind", KINDS)
def test_quantize_ties_byte_identical_to_ggml(device, kind):
    """Blocks with ties: +-max of equal magnitude in either order (q4_0 keeps the first, as
    GGML), values a hair below .5 after scaling (q8_0 rounds as roundf), zeros, -0.0,
    constant blocks; the blocks byte for byte as gguf.quants.quantize's."""
    ramp = np.linspace(-1, 1, 32, dtype=np.float32)
    half = np.float32(0.5) - np.float32(2.0 ** -25)                   # 0.49999997
    rnd = np.zeros(32, np.float32)
    rnd[:10] = [127, half, -half, 0.5, -0.5, 1.5, -2.5, 126.5, -126.5, -127]
    mixed = np.random.default_rng(3).uniform(-1, 1, 32).astype(np.float32)
    pm = mixed.copy()
    pm[[4, 20]] = [-2, 2]
    mp = mixed.copy()
    mp[[4, 20]] = [2, -2]
    blocks = [ramp, ramp[::-1], rnd, -rnd, pm, mp, np.zeros(32, np.float32),
              np.full(32, -0.0, np.float32), np.full(32, 0.75, np.float32),
              np.where(np.arange(32) % 2, np.float32(-0.0), np.float32(0.0)), mixed * 1e-3,
              -np.abs(mixed)]
    w = np.stack(blocks).reshape(-1, 64)
    qw = nn.QuantizedWeight.quantize(xp.asarray(w, device=device), kind)
    np.testing.assert_array_equal(_ggml_bytes(qw), gg_quantize(w, KINDS[kind]))


def test_embedding_and_concat(device):
    rng = np.random.default_rng(11)
    qw, ref = _weight(rng, "q8_0", 30, 64, device)
    idx = np.array([[3, 0, 29], [7, 7, 1]])
    e = nn.embedding(xp.asarray(idx, device=device), qw)
    assert e.shape == (2, 3, 64) and e.dtype == xp.float32
    np.testing.assert_array_equal(to_numpy(e), ref[idx].astype(np.float32))
    with pytest.raises(IndexError, match="ruda.nn.embedding: indices"):
        nn.embedding(xp.asarray([30], device=device), qw)
    q2, ref2 = _weight(rng, "q8_0", 10, 64, device)
    both = nn.QuantizedWeight.concat([qw, q2])
    assert both.shape == (40, 64)
    np.testing.assert_array_equal(to_numpy(both.dequantize()),
                                  np.concatenate([ref, ref2]).astype(np.float32))


def test_errors(device):
    rng = np.random.default_rng(0)
    qw, _ = _weight(rng, "q4_0", 8, 64, device)
    x = xp.asarray(rng.standard_normal((2, 64)).astype(np.float32), device=device)
    with pytest.raises(ValueError, match=r"ruda.nn.QuantizedWeight: kind: expected"):
        nn.QuantizedWeight("q5_0", qw.q, qw.scales)
    with pytest.raises(TypeError, match=r"QuantizedWeight: q: expected a 2-D int8"):
        nn.QuantizedWeight("q8_0", qw.q, qw.scales)
    with pytest.raises(ValueError, match=r"QuantizedWeight: mins: expected an array"):
        nn.QuantizedWeight("q4_1", qw.q, qw.scales)
    with pytest.raises(ValueError, match=r"QuantizedWeight: scales: expected float32 of shape"):
        nn.QuantizedWeight("q4_0", qw.q, qw.scales[:, :1])
    with pytest.raises(ValueError, match=r"ruda.nn.linear: x: expected last axis"):
        nn.linear(x[:, :32], qw)
    with pytest.raises(TypeError, match=r"ruda.nn.linear: x: expected a real floating"):
        nn.linear(xp.astype(x, xp.int32), qw)
    with pytest.raises(ValueError, match=r"ruda.nn.linear: bias: expected shape \(8,\)"):
        nn.linear(x, qw, xp.zeros(4, dtype=xp.float32, device=device))
    with pytest.raises(ValueError, match=r"QuantizedWeight.quantize: w: expected shape"):
        nn.QuantizedWeight.quantize(xp.zeros((4, 40), device=device), "q8_0")
