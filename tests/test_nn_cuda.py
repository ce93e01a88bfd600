"""Fused ruda.nn kernels on cuda (ruda/backends/cuda/_nn.py, _nn_attention.py) against torch CPU.

Each kernel is called directly (``backend.nn.<kernel>`` on CuPy arrays) and, where ruda.nn has
the function, through the public API.  Shapes are chosen to hit every code path: warp- and
block-per-row rows, rows too long for registers, lengths that are not a multiple of the vector
width, causal with L == S and L != S, GQA, bool and additive masks (broadcast), sliding
windows and the split-key decode path.  Skipped without a cuda device.
"""
import math

import numpy as np
import pytest

import ruda
import ruda.nn  # noqa: F401  (ruda.nn.<function> below)
from ruda._devices import unavailable

CUDA_REASON = unavailable("cuda")
pytestmark = pytest.mark.skipif(CUDA_REASON is not None, reason=f"no cuda device: {CUDA_REASON}")
torch = pytest.importorskip("torch")
F = torch.nn.functional

BF16 = ruda.bfloat16 if hasattr(ruda, "bfloat16") else None
DTYPES = ["float32", "float64"] + (["bfloat16"] if BF16 is not None else [])
TOL = {"float32": 2e-5, "float64": 1e-12, "bfloat16": 2e-2}


@pytest.fixture(autouse=True)
def _fused_kernels_on(monkeypatch):
    monkeypatch.delenv("RUDA_CUDA_NN_KERNELS", raising=False)     # on unless set to 0


@pytest.fixture(scope="module")
def nn():
    from ruda.backends.cuda import _nn
    return _nn


def _host(a, dtype):
    """(CuPy array of dtype, float64 NumPy of the values it holds)."""
    import cupy
    if dtype == "bfloat16":
        h = np.asarray(a, np.float32).astype(BF16)
        return cupy.asarray(h.view(np.uint16)).view(BF16), h.astype(np.float64)
    h = np.asarray(a, dtype)
    return cupy.asarray(h), h.astype(np.float64)


def _get(a):
    import cupy
    if BF16 is not None and a.dtype == BF16:
        return cupy.asnumpy(a.view(np.uint16)).view(BF16).astype(np.float64)
    return cupy.asnumpy(a).astype(np.float64)


def _close(got, want, dtype, scale=1.0):
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# (rows, n): warp per row (vector and scalar), block per row, long rows (two-pass kernel)
ROW_SHAPES = [(5, 1), (7, 33), (9, 256), (3, 1000), (4, 4096), (2, 4099), (2, 40000)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax(nn, dtype, shape, log):
    rng = np.random.default_rng(1 + shape[1])
    x, xh = _host(rng.standard_normal(shape) * 3, dtype)
    got = nn.softmax(x, log)
    assert got.dtype == x.dtype and got.shape == shape
    t = torch.from_numpy(xh)
    want = (F.log_softmax(t, -1) if log else F.softmax(t, -1)).numpy()
    _close(_get(got), want, dtype, 10.0 if log else 1.0)


def test_softmax_rows_of_minus_inf_and_inf(nn):
    import cupy
    x = cupy.asarray(np.array([[-np.inf] * 5, [0.0, -np.inf, 1.0, -np.inf, 2.0]], np.float32))
    want = F.softmax(torch.from_numpy(cupy.asnumpy(x)), -1).numpy()
    np.testing.assert_allclose(cupy.asnumpy(nn.softmax(x, False)), want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("affine", [(False, False), (True, False), (True, True)])
def test_layer_norm(nn, dtype, shape, affine):
    rng = np.random.default_rng(2 + shape[1])
    x, xh = _host(rng.standard_normal(shape) * 2 + 1, dtype)
    w, wh = _host(rng.standard_normal(shape[1]), dtype) if affine[0] else (None, None)
    b, bh = _host(rng.standard_normal(shape[1]), dtype) if affine[1] else (None, None)
    got = nn.layer_norm(x, w, b, 1e-5)
    assert got.dtype == x.dtype
    want = F.layer_norm(torch.from_numpy(xh), (shape[1],), None if w is None else torch.from_numpy(wh),
                        None if b is None else torch.from_numpy(bh), 1e-5).numpy()
    _close(_get(got), want, dtype, 5.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_rms_norm(nn, dtype, shape, weighted):
    rng = np.random.default_rng(3 + shape[1])
    x, xh = _host(rng.standard_normal(shape), dtype)
    w, wh = _host(rng.standard_normal(shape[1]), dtype) if weighted else (None, None)
    got = nn.rms_norm(x, w, 1e-6)
    want = F.rms_norm(torch.from_numpy(xh), (shape[1],), None if w is None else torch.from_numpy(wh), 1e-6).numpy()
    _close(_get(got), want, dtype, 5.0)


@pytest.mark.parametrize("dtype", ["float32"] + (["bfloat16"] if BF16 is not None else []))
def test_rope_kv_put(nn, dtype):
    """The fused decode step gives exactly apply_rope and KVCache.put's values."""
    import ruda.nn
    rng = np.random.default_rng(21)
    B, Hq, H, T, D = 2, 9, 3, 7, 64
    dev = ruda.device("cuda")
    qkv = ruda.Array.from_native(_host(rng.standard_normal((B, 1, (Hq + 2 * H) * D)), dtype)[0], dev)
    ang = rng.standard_normal((1, D // 2))
    cos, sin = (ruda.Array.from_native(_host(f(ang), dtype)[0], dev) for f in (np.cos, np.sin))
    pos = ruda.asarray([4], dtype=ruda.int32, device=dev)
    fused, plain = (ruda.nn.KVCache(B, H, T, D, dtype=qkv.dtype, device=dev) for _ in range(2))
    q, k, v = fused.put_rotated(pos, qkv, Hq, cos, sin)
    heads = ruda.permute_dims(ruda.reshape(qkv, (B, 1, Hq + 2 * H, D)), (0, 2, 1, 3))
    qk = ruda.nn.apply_rope(heads[:, :Hq + H], cos, sin)
    k2, v2 = plain.put(pos, qk[:, Hq:], heads[:, Hq + H:])
    for a, b in ((q, qk[:, :Hq]), (k, k2), (v, v2)):
        np.testing.assert_array_equal(_get(a.native), _get(b.native))
    kc, vc = (ruda.zeros((B, H, T, D), dtype=qkv.dtype, device=dev).native for _ in range(2))
    direct = nn.rope_kv_put(ruda.reshape(qkv, (B, -1)).native, cos.native, sin.native, pos.native, kc, vc, Hq)
    assert direct is not NotImplemented, "the kernel declined"
    for a, b in ((direct, qk[:, :Hq]), (kc, k2), (vc, v2)):
        np.testing.assert_array_equal(_get(a), _get(b.native))


@pytest.mark.skipif(BF16 is None, reason="needs ml_dtypes")
@pytest.mark.parametrize("rows", [1, 3, 8])
@pytest.mark.parametrize("inter,k", [(37, 264), (1536, 576)])
def test_linear_swiglu(nn, rows, inter, k):
    """The GEMV's swiglu variant gives exactly the plain GEMV followed by the swiglu kernel."""
    rng = np.random.default_rng(rows + k)
    x, _ = _host(rng.standard_normal((rows, k)), "bfloat16")
    w, _ = _host(rng.standard_normal((2 * inter, k)) / 8, "bfloat16")
    got = nn.linear_swiglu(x, w)
    assert got is not NotImplemented and got.shape == (rows, inter)
    dev = ruda.device("cuda")
    gu = ruda.Array.from_native(x, dev) @ ruda.matrix_transpose(ruda.Array.from_native(w, dev))
    want = ruda.nn.swiglu(gu[:, :inter], gu[:, inter:])
    np.testing.assert_array_equal(_get(got), _get(want.native))


@pytest.mark.skipif(BF16 is None, reason="needs ml_dtypes")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("rows,out,k,swiglu", [(1, 960, 576, False), (3, 74, 264, True),
                                               (8, 50, 1024, False), (1, 3072, 576, True),
                                               (2, 40, 1032, False)])
def test_rms_norm_linear_and_add_linear(nn, dtype, rows, out, k, swiglu):
    """The GEMV's norm and residual variants give exactly the norm kernel followed by the GEMV
    (or its swiglu variant), and the GEMV followed by the add; rows longer than one warp's norm
    decline (ruda.nn then composes the same two calls)."""
    from ruda.backends.cuda import _gemv
    dev = ruda.device("cuda")
    rng = np.random.default_rng(rows + out + k)
    x, _ = _host(rng.standard_normal((rows, k)) * 3, dtype)
    g, _ = _host(rng.standard_normal(k), dtype)
    w, _ = _host(rng.standard_normal((out, k)) / 8, dtype)
    got = nn.rms_norm_linear(x, g, w, 1e-5, swiglu)
    if k > _gemv.NORM_MAX_K:
        assert got is NotImplemented
    else:
        xs, gs, ws = (ruda.Array.from_native(a, dev) for a in (x, g, w))
        h = ruda.nn.rms_norm(xs, (k,), gs, 1e-5)
        want = ruda.nn.linear_swiglu(h, ws) if swiglu else ruda.nn.linear(h, ws)
        assert got.shape == want.shape and got.dtype == want.native.dtype
        np.testing.assert_array_equal(_get(got), _get(want.native))
    if swiglu:
        return
    r, _ = _host(rng.standard_normal((rows, out)), dtype)
    got = nn.add_linear(r, x, w)
    rs, xs, ws = (ruda.Array.from_native(a, dev) for a in (r, x, w))
    np.testing.assert_array_equal(_get(got), _get((rs + ruda.nn.linear(xs, ws)).native))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_add_rms_norm(nn, dtype, shape):
    """The fused residual add: the sum exactly as the separate add rounds it (bfloat16 through
    ruda's own add), the norm of that sum; long rows decline (ruda.nn then composes)."""
    rng = np.random.default_rng(5 + shape[1])
    x, _ = _host(rng.standard_normal(shape) * 2, dtype)
    r, _ = _host(rng.standard_normal(shape), dtype)
    w, wh = _host(rng.standard_normal(shape[1]), dtype)
    got = nn.add_rms_norm(x, r, w, 1e-6)
    if got is NotImplemented:
        size = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
        assert nn.row_config(shape[1], size, shape[1] % (16 // size) == 0) is None
        return
    s, y = got
    xs, rs = (ruda.Array.from_native(a, ruda.device("cuda")) for a in (x, r))
    np.testing.assert_array_equal(_get(s), _get((xs + rs).native))
    want = F.rms_norm(torch.from_numpy(_get(s)), (shape[1],), torch.from_numpy(wh), 1e-6).numpy()
    _close(_get(y), want, dtype, 5.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3,), (4, 1000), (2, 3, 1027)])
def test_swiglu(nn, dtype, shape):
    rng = np.random.default_rng(4)
    g, gh = _host(rng.standard_normal(shape) * 3, dtype)
    u, uh = _host(rng.standard_normal(shape), dtype)
    want = (F.silu(torch.from_numpy(gh)) * torch.from_numpy(uh)).numpy()
    _close(_get(nn.swiglu(g, u)), want, dtype, 2.0)


def _rope_ref(x, cos, sin, interleaved, r):
    out = x.copy()
    if interleaved:
        x1, x2 = x[..., 0:r:2], x[..., 1:r:2]
        out[..., 0:r:2] = x1 * cos - x2 * sin
        out[..., 1:r:2] = x2 * cos + x1 * sin
    else:
        h = r // 2
        x1, x2 = x[..., :h], x[..., h:r]
        out[..., :h] = x1 * cos - x2 * sin
        out[..., h:r] = x2 * cos + x1 * sin
    return out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("r", [16, 8])
def test_apply_rope(nn, dtype, interleaved, r):
    rng = np.random.default_rng(5 + r)
    T, D = 7, 16
    x, xh = _host(rng.standard_normal((2, 3, T, D)), dtype)
    ang = np.arange(T)[:, None] * (10000.0 ** (-np.arange(r // 2) * 2 / r))[None, :]
    cos, ch = _host(np.cos(ang), "float32")
    sin, sh = _host(np.sin(ang), "float32")
    got = nn.apply_rope(x, cos, sin, interleaved, r)
    assert got.dtype == x.dtype and got.shape == x.shape
    _close(_get(got), _rope_ref(xh, ch, sh, interleaved, r), dtype, 2.0)
    if dtype == "float32":
        xr = ruda.asarray(xh.astype(np.float32), device="cuda")
        pub = ruda.nn.apply_rope(xr, ruda.asarray(ch.astype(np.float32), device="cuda"),
                                 ruda.asarray(sh.astype(np.float32), device="cuda"), interleaved=interleaved,
                                 rotary_dim=r)
        _close(np.asarray(pub.to_device("cpu"), np.float64), _rope_ref(xh, ch, sh, interleaved, r), dtype, 2.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,k", [((5, 10), 3), ((3, 1000), 1), ((2, 5000), 32), ((4, 64), 17)])
def test_top_k(nn, dtype, shape, k):
    rng = np.random.default_rng(6 + k)
    vals = rng.integers(-20, 20, shape).astype(np.float64)   # many ties: lower index first
    x, xh = _host(vals, dtype)
    v, i = nn.top_k(x, k)
    tv, ti = torch.topk(torch.from_numpy(xh), k, dim=-1, sorted=True)
    order = np.lexsort((np.arange(shape[1])[None, :].repeat(shape[0], 0), -xh), axis=-1)[:, :k]
    np.testing.assert_array_equal(_get(v), tv.numpy())
    np.testing.assert_array_equal(_get(i).astype(np.int64), order)
    assert i.dtype == np.int64


def test_top_k_large_k_is_not_implemented(nn):
    import cupy
    assert nn.top_k(cupy.zeros((2, 100), np.float32), 33) is NotImplemented


def _sdpa_ref(q, k, v, mask, causal, scale, window):
    B, Hq, L, D = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    g = Hq // Hkv
    k = np.repeat(k, g, axis=1)
    v = np.repeat(v, g, axis=1)
    s = q @ np.swapaxes(k, -1, -2) * scale
    i = np.arange(L)[:, None]
    j = np.arange(S)[None, :]
    keep = np.ones((L, S), bool)
    if causal:
        keep &= j <= i + S - L
    if window:
        keep &= j > i + S - L - window
    keep = np.broadcast_to(keep, s.shape).copy()
    if mask is not None:
        if mask.dtype == bool:
            keep &= np.broadcast_to(mask, s.shape)
        else:
            s = s + mask
    s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    den = p.sum(-1, keepdims=True)
    return (p @ v) / np.where(den > 0, den, 1)


SDPA_CASES = [  # B, Hq, Hkv, L, S, D, Dv, causal, window, mask
    (2, 4, 4, 40, 40, 16, 16, False, None, None),
    (2, 4, 2, 40, 40, 16, 16, True, None, None),
    (1, 4, 1, 17, 37, 64, 64, True, None, None),
    (2, 2, 2, 37, 17, 32, 16, True, None, None),
    (1, 4, 2, 33, 33, 128, 128, True, 8, None),
    (2, 4, 2, 20, 30, 16, 16, False, None, "bool"),
    (2, 4, 4, 20, 30, 16, 16, True, None, "add"),
    (1, 8, 2, 1, 1000, 64, 64, False, None, None),      # decode
    (2, 4, 4, 3, 700, 128, 128, True, 100, None),        # decode, causal + window
    (1, 4, 2, 2, 600, 32, 32, False, None, "bool"),      # decode with a mask
    (2, 16, 2, 1, 900, 128, 128, False, None, "add"),    # decode: a group of 8 heads per block
    (1, 16, 1, 2, 400, 64, 64, True, None, "add"),       # decode: group of 16, scalar kernel
    (1, 4, 2, 1, 500, 40, 40, False, None, None),        # decode: rows of 40, scalar kernel
    (1, 9, 3, 1, 100, 64, 64, False, None, "bool"),      # one query, few keys: one block, no merge
    (2, 32, 8, 1, 512, 128, 128, True, 50, None),        # the same up to its limit, with a window
    (1, 4, 4, 1, 1, 64, 64, False, None, "add"),         # a single key
]


@pytest.mark.parametrize("dtype", ["float32"] + (["bfloat16"] if BF16 is not None else []))
@pytest.mark.parametrize("case", SDPA_CASES)
def test_sdpa(nn, dtype, case):
    B, Hq, Hkv, L, S, D, Dv, causal, window, mkind = case
    rng = np.random.default_rng(7 + L + S)
    q, qh = _host(rng.standard_normal((B, Hq, L, D)), dtype)
    k, kh = _host(rng.standard_normal((B, Hkv, S, D)), dtype)
    v, vh = _host(rng.standard_normal((B, Hkv, S, Dv)), dtype)
    import cupy
    mask = mh = None
    if mkind == "bool":
        mh = rng.random((B, 1, L, S)) < 0.7            # broadcast over heads
        mh[:, :, 0, :] = False                         # a query with no key: zeros
        mask = cupy.asarray(mh)
    elif mkind == "add":
        mh = rng.standard_normal((1, Hq, L, S)).astype(np.float32)
        mask = cupy.asarray(mh)
        mh = mh.astype(np.float64)
    scale = 1 / math.sqrt(D)
    got = nn.sdpa(q, k, v, mask, causal, scale, window)
    assert got.dtype == q.dtype and got.shape == (B, Hq, L, Dv)
    want = _sdpa_ref(qh, kh, vh, mh, causal, scale, window)
    _close(_get(got), want, dtype, 5.0 if dtype == "float32" else 1.0)
    if window is None and mkind != "bool" and dtype == "float32" and (not causal or (L == S and mh is None)):
        tm = None if mh is None else torch.from_numpy(mh)      # torch's own, where its semantics agree
        tw = F.scaled_dot_product_attention(torch.from_numpy(qh), torch.from_numpy(kh), torch.from_numpy(vh),
                                            attn_mask=tm, is_causal=causal, enable_gqa=Hq != Hkv)
        _close(_get(got), tw.numpy(), dtype, 5.0)


def test_sdpa_public_matches_kernel():
    rng = np.random.default_rng(11)
    q = rng.standard_normal((1, 4, 24, 16)).astype(np.float32)
    k = rng.standard_normal((1, 2, 24, 16)).astype(np.float32)
    v = rng.standard_normal((1, 2, 24, 16)).astype(np.float32)
    on = [ruda.asarray(a, device="cuda") for a in (q, k, v)]
    got = ruda.nn.scaled_dot_product_attention(*on, is_causal=True, enable_gqa=True)
    want = _sdpa_ref(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), None, True, 0.25, None)
    np.testing.assert_allclose(np.asarray(got.to_device("cpu")), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_norm", "swiglu"])
def test_public_row_functions(name):
    fn = getattr(ruda.nn, name, None)
    if fn is None:
        pytest.skip(f"ruda.nn.{name} does not exist yet")
    rng = np.random.default_rng(12)
    x = rng.standard_normal((6, 300)).astype(np.float32)
    xr = ruda.asarray(x, device="cuda")
    t = torch.from_numpy(x.astype(np.float64))
    if name == "swiglu":
        got, want = fn(xr, xr), F.silu(t) * t
    elif name == "softmax":
        got, want = fn(xr, axis=-1), F.softmax(t, -1)
    elif name == "layer_norm":
        got, want = fn(xr, (300,)), F.layer_norm(t, (300,))
    else:
        got, want = fn(xr, (300,)), F.rms_norm(t, (300,), eps=1e-6)
    np.testing.assert_allclose(np.asarray(got.to_device("cpu")), want.numpy(), rtol=1e-4, atol=1e-4)
