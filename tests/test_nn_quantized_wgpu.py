"""wgpu ``linear_quantized`` (GGML Q8_0/Q4_0/Q4_1 weights dequantized inside WGSL kernels: the
GEMV for up to 8 rows, the tiled GEMM beyond) vs dequantize-then-matmul in float64 on random
weights of every kind."""
import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from ruda.backends.wgpu._nn_quant import GEMV_ROWS
from ruda.nn._check import native, wrap

KINDS = ("q8_0", "q4_0", "q4_1")


def _random(rng, kind, out, n):
    """Host (q, scales, mins) of an (out, n) weight and its float64 dequantization."""
    nb = n // 32
    d = rng.uniform(0.01, 0.1, (out, nb)).astype(np.float32)
    if kind == "q8_0":
        q = rng.integers(-128, 128, (out, n), dtype=np.int8)
        w = q.reshape(out, nb, 32).astype(np.float64) * d[..., None]
        return q, d, None, w.reshape(out, n)
    q = rng.integers(0, 256, (out, n // 2), dtype=np.uint8)
    b = q.reshape(out, nb, 16)
    nib = np.concatenate([b & 15, b >> 4], axis=2).astype(np.float64)       # GGML's order
    if kind == "q4_0":
        return q, d, None, ((nib - 8.0) * d[..., None]).reshape(out, n)
    m = rng.uniform(-0.5, 0.5, (out, nb)).astype(np.float32)
    return q, d, m, (nib * d[..., None] + m[..., None]).reshape(out, n)


def _check(y, x, w, bias):
    want = x.astype(np.float64) @ w.T + (0.0 if bias is None else bias)
    # float32 rounding: the dequantized value, each product and each of the n + 1 additions
    # (at most (n + 3) units of 2**-24 relative to the sum of |terms|)
    scale = np.abs(x.astype(np.float64)) @ np.abs(w).T + (0.0 if bias is None else np.abs(bias))
    got = np.asarray(y.to_device("cpu"))
    assert got.dtype == np.float32 and got.shape == want.shape
    tol = (x.shape[1] + 3) * 2.0**-24 * scale
    assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want) / scale)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows,out,n,with_bias", [(1, 70, 96, True), (GEMV_ROWS, 5, 64, False),
                                                  (GEMV_ROWS + 1, 67, 64, True),
                                                  (70, 130, 96, False)])
def test_kernel_vs_dequantized(wgpu_device, kind, rows, out, n, with_bias):
    rng = np.random.default_rng([KINDS.index(kind), rows, out, n])
    q, d, m, w = _random(rng, kind, out, n)
    x = rng.standard_normal((rows, n)).astype(np.float32)
    bias = rng.standard_normal(out).astype(np.float32) if with_bias else None
    dev = wgpu_device
    kern = dev.backend.nn.linear_quantized
    args = [xp.asarray(a, device=dev) if a is not None else None for a in (x, q, d, m, bias)]
    y = kern(*(native(a) if a is not None else None for a in args[:4]), kind,
             None if bias is None else native(args[4]))
    assert y is not NotImplemented
    _check(wrap(y, dev), x, w, bias)


@pytest.mark.parametrize("kind", ("q8_0", "q4_1"))
def test_views_and_offsets(wgpu_device, kind):
    """Row slices of the weight and a column slice of x (non-zero offsets, a strided x)."""
    rng = np.random.default_rng(7)
    q, d, m, w = _random(rng, kind, 40, 64)
    x = rng.standard_normal((12, 80)).astype(np.float32)
    dev = wgpu_device
    qd, dd = xp.asarray(q, device=dev)[3:30], xp.asarray(d, device=dev)[3:30]
    md = None if m is None else xp.asarray(m, device=dev)[3:30]
    xd = xp.asarray(x, device=dev)[:, 16:]
    for r in (2, 12):
        y = dev.backend.nn.linear_quantized(native(xd[:r]), native(qd), native(dd),
                                            None if md is None else native(md), kind, None)
        _check(wrap(y, dev), x[:r, 16:], w[3:30], None)


def test_declines(wgpu_device):
    """What the kernel does not cover comes back NotImplemented (ruda.nn composes)."""
    dev = wgpu_device
    kern = dev.backend.nn.linear_quantized
    q = native(xp.zeros((4, 32), dtype=xp.int8, device=dev))
    d = native(xp.ones((4, 1), dtype=xp.float32, device=dev))
    x = native(xp.ones((2, 32), dtype=xp.float32, device=dev))
    assert kern(native(xp.ones((2, 32), dtype=xp.int32, device=dev)), q, d, None, "q8_0",
                None) is NotImplemented
    assert kern(x, q, d, None, "q4_0", None) is NotImplemented          # int8 q for q4_0
    assert kern(x, q, d, None, "q5_0", None) is NotImplemented
    assert kern(x, q, d, d, "q8_0", None) is NotImplemented             # mins for q8_0


@pytest.mark.parametrize("kind", KINDS)
def test_through_nn_linear(wgpu_device, kind):
    if not hasattr(nn, "QuantizedWeight"):
        pytest.skip("ruda.nn.QuantizedWeight is not available")
    rng = np.random.default_rng(11)
    q, d, m, w = _random(rng, kind, 33, 64)
    dev = wgpu_device
    qw = nn.QuantizedWeight(kind, xp.asarray(q, device=dev), xp.asarray(d, device=dev),
                            None if m is None else xp.asarray(m, device=dev))
    x = rng.standard_normal((2, 3, 64)).astype(np.float32)
    y = nn.linear(xp.asarray(x, device=dev), qw)
    assert y.shape == (2, 3, 33)
    _check(xp.reshape(y, (6, 33)), x.reshape(6, 64), w, None)


@pytest.mark.parametrize("kind,rows,n", [("q8_0", 1, (1 << 18) + 32), ("q4_1", 9, 65_536)])
def test_rows_longer_than_one_invocation_may_loop(wgpu_device, kind, rows, n):
    """Rows past what one kernel invocation may loop over (lavapipe ends an invocation after
    65,535 loop iterations in all: the GEMV failed at 1M, the GEMM at 64K) are declined and
    composed by ruda.nn (dequantize + matmul), with the right values."""
    dev = wgpu_device
    rng = np.random.default_rng(12)
    q, d, m, w = _random(rng, kind, 4, n)
    x = rng.standard_normal((rows, n)).astype(np.float32)
    args = [xp.asarray(a, device=dev) if a is not None else None for a in (x, q, d, m)]
    assert dev.backend.nn.linear_quantized(*(native(a) if a is not None else None for a in args),
                                           kind, None) is NotImplemented
    qw = nn.QuantizedWeight(kind, args[1], args[2], args[3])
    _check(nn.linear(args[0], qw), x, w, None)
