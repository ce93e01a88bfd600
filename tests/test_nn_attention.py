"""ruda.nn.scaled_dot_product_attention and KVCache against torch.nn.functional (float64)."""
import numpy as np
import pytest

import ruda
import ruda.nn as nn
from ruda.nn import _attention

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _float(device):
    """float64 where the device has it, else float32, with a tolerance for it."""
    if "float64" in ruda.__array_namespace_info__().dtypes(device=device):
        return np.float64, 1e-10
    return np.float32, 2e-5


def _qkv(rng, B, Hq, Hkv, L, S, D, Dv=None, dt=np.float64):
    q = rng.standard_normal((B, Hq, L, D)).astype(dt)
    k = rng.standard_normal((B, Hkv, S, D)).astype(dt)
    v = rng.standard_normal((B, Hkv, S, Dv or D)).astype(dt)
    return q, k, v


def _band(L, S, causal=True, window=None):
    """Bool (L, S): lower-right causal and/or sliding window, as ruda.nn defines them."""
    i = np.arange(L)[:, None] + S - L
    j = np.arange(S)[None, :]
    keep = np.ones((L, S), bool)
    if causal:
        keep &= j <= i
    if window is not None:
        keep &= j > i - window
    return keep


def _torch(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    t = [torch.from_numpy(np.asarray(a, np.float64)) for a in (q, k, v)]
    # a float mask goes as float64 too: torch's CPU SDPA gives wrong rows for a float32 mask
    # with float64 q/k/v
    m = None if mask is None else torch.from_numpy(
        np.asarray(mask) if np.asarray(mask).dtype == bool else np.asarray(mask, np.float64))
    return F.scaled_dot_product_attention(*t, attn_mask=m, is_causal=causal, scale=scale,
                                          enable_gqa=gqa).numpy()


def _ours(device, q, k, v, mask=None, **kw):
    def X(a):
        return ruda.asarray(a, device=device)
    out = nn.scaled_dot_product_attention(X(q), X(k), X(v),
                                          None if mask is None else X(mask), **kw)
    return out, np.asarray(out.to_device("cpu"))


@pytest.mark.parametrize("causal", [False, True])
def test_square(device, causal):
    dt, tol = _float(device)
    rng = np.random.default_rng(1)
    q, k, v = _qkv(rng, 2, 4, 4, 24, 24, 16, dt=dt)
    out, got = _ours(device, q, k, v, is_causal=causal)
    assert out.dtype == ruda.asarray(q, device=device).dtype and out.shape == (2, 4, 24, 16)
    np.testing.assert_allclose(got, _torch(q, k, v, causal=causal), rtol=tol, atol=tol)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("size", [30.0, 1e3])
def test_large_scores(device, causal, size):
    """Scores far beyond exp's float range (the row maximum must be subtracted), and bounded
    ones whose rows are far apart."""
    dt, tol = _float(device)
    tol = max(tol, 10 * size * np.finfo(dt).eps)      # the scores' own rounding, relative
    rng = np.random.default_rng(11)
    q, k, v = _qkv(rng, 1, 2, 2, 33, 33, 16, dt=dt)
    q = q * dt(size) * np.linspace(0.01, 1, 33, dtype=dt)[:, None]
    _, got = _ours(device, q, k, v, is_causal=causal)
    np.testing.assert_allclose(got, _torch(q, k, v, causal=causal), rtol=tol, atol=tol)


@pytest.mark.parametrize("L,S", [(5, 29), (1, 33), (12, 12)])
def test_causal_lower_right(device, L, S):
    dt, tol = _float(device)
    rng = np.random.default_rng(2)
    q, k, v = _qkv(rng, 2, 4, 4, L, S, 16, Dv=8, dt=dt)
    _, got = _ours(device, q, k, v, is_causal=True, scale=0.3)
    want = _torch(q, k, v, mask=_band(L, S), scale=0.3)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if L != S:      # PyTorch's is_causal is upper-left aligned: different rows
        assert not np.allclose(got, _torch(q, k, v, causal=True, scale=0.3))


@pytest.mark.parametrize("host_numba", [True, False])
@pytest.mark.parametrize("window", [None, 2])
@pytest.mark.parametrize("L,S", [(9, 3), (20, 5), (300, 2)])
def test_causal_more_queries_than_keys(device, L, S, window, host_numba, monkeypatch):
    """More than twice as many queries as keys: the first L - S rows see no key (zeros)."""
    if not host_numba:
        if device != "cpu":
            pytest.skip("the host kernel's NumPy path")
        from ruda.backends.host import _nn_attention as K
        monkeypatch.setattr(K, "_mask_after", None)
    dt, tol = _float(device)
    rng = np.random.default_rng(12)
    q, k, v = _qkv(rng, 2, 4, 2, L, S, 8, dt=dt)
    _, got = _ours(device, q, k, v, is_causal=True, enable_gqa=True, sliding_window=window)
    want = _torch(q, k, v, mask=_band(L, S, True, window), gqa=True)
    assert np.all(got[:, :, :L - S] == 0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("hkv", [2, 1])     # GQA and MQA
def test_grouped_query(device, hkv):
    dt, tol = _float(device)
    rng = np.random.default_rng(3)
    q, k, v = _qkv(rng, 2, 4, hkv, 9, 21, 16, dt=dt)
    _, got = _ours(device, q, k, v, is_causal=True, enable_gqa=True)
    want = _torch(q, k, v, mask=_band(9, 21), gqa=True)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_empty_inputs(device):
    """An empty batch or head axis gives an empty result, no query an empty one, no key rows of
    0, as torch."""
    dt, tol = _float(device)
    rng = np.random.default_rng(21)
    for B, Hq, Hkv, L, S in ((0, 4, 2, 5, 7), (0, 2, 2, 1, 9), (2, 0, 0, 3, 4), (2, 2, 2, 0, 4),
                             (2, 4, 2, 3, 0)):
        q, k, v = _qkv(rng, B, Hq, Hkv, L, S, 8, Dv=6, dt=dt)
        out, got = _ours(device, q, k, v, enable_gqa=True)
        # torch's answer (zeros of that shape); asked of torch itself only here, as some of its
        # CPU builds crash on empty attention
        want = np.zeros((B, Hq, L, 6), dt)
        assert got.shape == want.shape == (B, Hq, L, 6)
        assert out.dtype == ruda.asarray(q).dtype
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("lead", [(), (3,), (2, 3, 2)])
def test_leading_axes(device, lead):
    """Inputs (..., H, L, D) and (L, D), as torch: the leading axes fold into the batch;
    masks broadcast over all of them."""
    dt, tol = _float(device)
    rng = np.random.default_rng(22 + len(lead))
    heads = (4, 2) if lead else (None, None)
    shape = lead[:-1] if lead else ()
    qs = shape + ((heads[0],) if lead else ()) + (5, 8)
    ks = shape + ((heads[1],) if lead else ()) + (7, 8)
    vs = ks[:-1] + (6,)
    q, k, v = (rng.standard_normal(s).astype(dt) for s in (qs, ks, vs))
    gqa = bool(lead)
    _, got = _ours(device, q, k, v, enable_gqa=gqa)
    want = _torch(q, k, v, gqa=gqa)
    assert got.shape == want.shape == qs[:-1] + (6,)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    keep = rng.random(qs[-3:-1] + (7,) if lead else (5, 7)) > 0.3
    keep[..., 0] = True
    _, got = _ours(device, q, k, v, keep, enable_gqa=gqa)
    np.testing.assert_allclose(got, _torch(q, k, v, mask=keep, gqa=gqa), rtol=tol, atol=tol)
    if len(lead) > 1:                            # leading axes must match: no broadcasting
        with pytest.raises(ValueError, match=r"scaled_dot_product_attention: k, v: expected q's "
                           r"leading axes \(1, 3\)"):
            nn.scaled_dot_product_attention(*(ruda.asarray(a, device=device)
                                              for a in (q[:1], k, v)), enable_gqa=gqa)


def test_masks(device):
    dt, tol = _float(device)
    rng = np.random.default_rng(4)
    q, k, v = _qkv(rng, 2, 4, 2, 11, 17, 8, dt=dt)
    keep = rng.random((2, 1, 11, 17)) > 0.3
    keep[..., 0] = True
    _, got = _ours(device, q, k, v, keep, enable_gqa=True)
    np.testing.assert_allclose(got, _torch(q, k, v, mask=keep, gqa=True), rtol=tol, atol=tol)
    add = rng.standard_normal((11, 17)).astype(dt)
    _, got = _ours(device, q, k, v, add, is_causal=True, enable_gqa=True)
    want = _torch(q, k, v, mask=np.where(_band(11, 17), add, -np.inf), gqa=True)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("causal", [True, False])
def test_sliding_window(device, causal):
    dt, tol = _float(device)
    rng = np.random.default_rng(5)
    q, k, v = _qkv(rng, 1, 2, 2, 14, 20, 8, dt=dt)
    _, got = _ours(device, q, k, v, is_causal=causal, sliding_window=4)
    want = _torch(q, k, v, mask=_band(14, 20, causal, 4))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_fully_masked_row_is_zero(device):
    dt, tol = _float(device)
    rng = np.random.default_rng(6)
    q, k, v = _qkv(rng, 1, 2, 2, 4, 6, 8, dt=dt)
    keep = np.ones((4, 6), bool)
    keep[2] = False
    _, got = _ours(device, q, k, v, keep)
    assert np.all(got[:, :, 2] == 0)
    np.testing.assert_allclose(got, _torch(q, k, v, mask=keep), rtol=tol, atol=tol)


@pytest.mark.parametrize("kw", [dict(block_q=3, block_k=5), dict(block_q=16, block_k=7),
                                dict(decode_chunk=6), dict(decode_chunk=32),
                                dict(decode_chunk=3, tile=400)])
def test_composite_tiles(device, kw, monkeypatch):
    """The namespace-op path (every device's fallback) by tiles and by split-K chunks (in
    segments of at most ``tile`` scores)."""
    kw = dict(kw)
    if "tile" in kw:
        monkeypatch.setattr(_attention, "_TILE_ELEMENTS", kw.pop("tile"))
    dt, tol = _float(device)
    rng = np.random.default_rng(7)
    L = 2 if "decode_chunk" in kw else 13
    q, k, v = _qkv(rng, 2, 4, 2, L, 31, 8, Dv=4, dt=dt)
    keep = rng.random((1, 4, L, 31)) > 0.2
    def X(a):
        return ruda.asarray(a, device=device)
    for mask, window in ((None, None), (keep, 9)):
        out = _attention._sdpa_composite(X(q), X(k), X(v), None if mask is None else X(mask),
                                         True, 0.25, window, **kw)
        m = _band(L, 31, True, window) & (True if mask is None else mask)
        want = _torch(q, k, v, mask=m, scale=0.25, gqa=True)
        np.testing.assert_allclose(np.asarray(out.to_device("cpu")), want, rtol=tol, atol=tol)


def test_host_kernel_blocks_and_threads(monkeypatch):
    """The cpu kernel with many row blocks and its units split over threads."""
    from ruda.backends import _workers
    from ruda.backends.host import _nn_attention as K
    monkeypatch.setattr(K, "_TILE", 40)
    monkeypatch.setattr(_workers, "THREADS", 2)
    monkeypatch.setattr(K, "_THREAD_WORK", 0)
    rng = np.random.default_rng(8)
    q, k, v = _qkv(rng, 2, 4, 2, 19, 23, 8)
    keep = rng.random((2, 4, 19, 23)) > 0.3
    got = K.sdpa(q, k, v, np.broadcast_to(keep, keep.shape), True, 0.5, 6)
    want = _torch(q, k, v, mask=keep & _band(19, 23, True, 6), scale=0.5, gqa=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_bfloat16_cpu():
    if getattr(ruda, "bfloat16", None) is None:
        pytest.skip("no bfloat16 (ml_dtypes missing)")
    rng = np.random.default_rng(9)
    q, k, v = _qkv(rng, 1, 4, 2, 16, 16, 32, dt=np.float32)
    def X(a):
        return ruda.astype(ruda.asarray(a), ruda.bfloat16)
    out = nn.scaled_dot_product_attention(X(q), X(k), X(v), is_causal=True, enable_gqa=True)
    assert out.dtype == ruda.bfloat16
    tq, tk, tv = (torch.from_numpy(a).to(torch.bfloat16) for a in (q, k, v))
    want = F.scaled_dot_product_attention(tq.float(), tk.float(), tv.float(), is_causal=True,
                                          enable_gqa=True).numpy()
    got = np.asarray(ruda.astype(out, ruda.float32))
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
    comp = _attention._sdpa_composite(X(q), X(k), X(v), None, True, 32 ** -0.5, None,
                                      block_q=5, block_k=6)
    assert comp.dtype == ruda.bfloat16
    np.testing.assert_allclose(np.asarray(ruda.astype(comp, ruda.float32)), want, rtol=2e-2,
                               atol=2e-2)


def test_decode_with_kv_cache(device):
    """Prefill then one token at a time through KVCache equals causal attention over all."""
    dt, tol = _float(device)
    rng = np.random.default_rng(10)
    B, Hq, Hkv, D, T = 2, 4, 2, 8, 9
    q, k, v = _qkv(rng, B, Hq, Hkv, T, T, D, dt=dt)
    want = _torch(q, k, v, causal=True, gqa=True)
    def X(a):
        return ruda.asarray(np.ascontiguousarray(a), device=device)
    cache = nn.KVCache(B, Hkv, 12, D, dtype=X(q).dtype, device=device)
    outs = []
    for a, b in ((0, 5), (5, 6), (6, 7), (7, 9)):
        kc, vc = cache.update(X(k[:, :, a:b]), X(v[:, :, a:b]))
        assert cache.length == b and kc.shape == (B, Hkv, b, D) and vc.shape == (B, Hkv, b, D)
        outs.append(nn.scaled_dot_product_attention(X(q[:, :, a:b]), kc, vc, is_causal=True,
                                                    enable_gqa=True))
    got = np.concatenate([np.asarray(o.to_device("cpu")) for o in outs], axis=2)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: k_new: .*at most 3 more steps"):
        cache.update(X(k[:, :, :4]), X(v[:, :, :4]))
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: k_new: expected shape"):
        cache.update(X(k[:, :1]), X(v[:, :1]))
    with pytest.raises(TypeError, match=r"ruda\.nn\.KVCache: k_new: expected the cache's dtype"):
        cache.update(ruda.astype(X(k[:, :, :1]), ruda.int32), X(v[:, :, :1]))
    cache.reset()
    assert cache.length == 0
    kc, _ = cache.update(X(k[:, :, :2]), X(v[:, :, :2]))
    np.testing.assert_array_equal(np.asarray(kc.to_device("cpu")), k[:, :, :2])


def test_kv_cache_put_at_a_device_position(device):
    """put writes one step at a position held in device memory and leaves length to advance();
    bad steps, positions and counts get clear errors."""
    rng = np.random.default_rng(11)
    B, H, T, D = 2, 3, 6, 4
    cache = nn.KVCache(B, H, T, D, device=device)
    k = rng.standard_normal((B, H, 1, D)).astype(np.float32)
    v = rng.standard_normal((B, H, 1, D)).astype(np.float32)
    X = lambda a: ruda.asarray(a, device=device)                      # noqa: E731
    pos = ruda.asarray([4], dtype=ruda.int32, device=device)
    kc, vc = cache.put(pos, X(k), X(v))
    assert kc.shape == vc.shape == (B, H, T, D) and cache.length == 0
    got_k, got_v = np.asarray(kc.to_device("cpu")), np.asarray(vc.to_device("cpu"))
    np.testing.assert_array_equal(got_k[:, :, 4:5], k)
    np.testing.assert_array_equal(got_v[:, :, 4:5], v)
    assert not got_k[:, :, [0, 1, 2, 3, 5]].any()
    cache.advance(5)
    assert cache.length == 5
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: n: expected at most 1 more steps"):
        cache.advance(2)
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: k_new: expected one step"):
        cache.put(pos, X(np.zeros((B, H, 2, D), np.float32)), X(np.zeros((B, H, 2, D), np.float32)))
    with pytest.raises(TypeError, match=r"ruda\.nn\.KVCache: v_new: expected the cache's dtype"):
        cache.put(pos, X(k), ruda.astype(X(v), ruda.int32))
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: pos: expected an int32 array of "
                       r"shape \(1,\).*got int32 of shape \(2,\)"):
        cache.put(ruda.asarray([1, 2], dtype=ruda.int32, device=device), X(k), X(v))
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: pos: .*got int"):
        cache.put(4, X(k), X(v))


def test_kv_cache_put_rotated(device):
    """A fused q/k/v projection: q and k rotated as torch's rotate_half rotates them, k and v
    written at the device position; the whole buffers come back; bad input is named."""
    rng = np.random.default_rng(12)
    B, Hq, H, T, D = 2, 6, 2, 5, 8
    cache = nn.KVCache(B, H, T, D, device=device)
    X = lambda a: ruda.asarray(a, device=device)                      # noqa: E731
    qkv = rng.standard_normal((B, 1, (Hq + 2 * H) * D)).astype(np.float32)
    ang = rng.standard_normal((1, D // 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    pos = ruda.asarray([3], dtype=ruda.int32, device=device)
    q, kc, vc = cache.put_rotated(pos, X(qkv), Hq, X(cos), X(sin))
    assert q.shape == (B, Hq, 1, D) and kc.shape == vc.shape == (B, H, T, D) and cache.length == 0
    heads = torch.from_numpy(qkv.reshape(B, 1, Hq + 2 * H, D).transpose(0, 2, 1, 3).astype(np.float64))
    c2 = torch.from_numpy(np.concatenate([cos, cos], -1).astype(np.float64))
    s2 = torch.from_numpy(np.concatenate([sin, sin], -1).astype(np.float64))
    rot = heads * c2 + torch.cat([-heads[..., D // 2:], heads[..., :D // 2]], -1) * s2
    np.testing.assert_allclose(np.asarray(q.to_device("cpu")), rot[:, :Hq].numpy(), rtol=1e-5, atol=1e-6)
    got_k, got_v = np.asarray(kc.to_device("cpu")), np.asarray(vc.to_device("cpu"))
    np.testing.assert_allclose(got_k[:, :, 3:4], rot[:, Hq:Hq + H].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_v[:, :, 3:4], heads[:, Hq + H:].numpy().astype(np.float32))
    assert not got_k[:, :, [0, 1, 2, 4]].any() and not got_v[:, :, [0, 1, 2, 4]].any()
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: qkv: expected float32 of shape "
                       r"\(2, 1, 80\)"):
        cache.put_rotated(pos, X(qkv[..., :-1]), Hq, X(cos), X(sin))
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: q_heads: expected an int >= 1"):
        cache.put_rotated(pos, X(qkv), 0, X(cos), X(sin))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_kv_cache_append_rotated(device, dt):
    """An eager decode step from a fused projection: the values of apply_rope and update
    exactly (a device may fuse them), the cache one longer each step, a full cache named."""
    if np.dtype(dt).name not in ruda.__array_namespace_info__().dtypes(device=device):
        pytest.skip(f"no {np.dtype(dt).name} on {device}")
    rng = np.random.default_rng(13)
    B, Hq, H, T, D = 2, 6, 2, 3, 8
    X = lambda a: ruda.asarray(a, device=device)                      # noqa: E731
    fused, plain = (nn.KVCache(B, H, T, D, dtype=getattr(ruda, np.dtype(dt).name),
                               device=device) for _ in range(2))
    for step in range(T):
        qkv = X(rng.standard_normal((B, 1, (Hq + 2 * H) * D)).astype(dt))
        ang = rng.standard_normal((1, D // 2))
        cos, sin = X(np.cos(ang).astype(dt)), X(np.sin(ang).astype(dt))
        q, k, v = fused.append_rotated(qkv, Hq, cos, sin)
        assert fused.length == step + 1 and q.shape == (B, Hq, 1, D)
        assert k.shape == v.shape == (B, H, step + 1, D)
        heads = ruda.permute_dims(ruda.reshape(qkv, (B, 1, Hq + 2 * H, D)), (0, 2, 1, 3))
        rot = nn.apply_rope(heads[:, :Hq + H], cos, sin)
        k2, v2 = plain.update(rot[:, Hq:], heads[:, Hq + H:])
        for got, want in ((q, rot[:, :Hq]), (k, k2), (v, v2)):
            np.testing.assert_array_equal(np.asarray(got.to_device("cpu")),
                                          np.asarray(want.to_device("cpu")))
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: qkv: expected at most 0 more steps"):
        fused.append_rotated(qkv, Hq, cos, sin)


def test_bad_input(device):
    def X(a):
        return ruda.asarray(a, device=device)
    rng = np.random.default_rng(11)
    q, k, v = (X(a) for a in _qkv(rng, 1, 4, 3, 4, 5, 8, dt=np.float32))
    sdpa = nn.scaled_dot_product_attention
    with pytest.raises(ValueError, match=r"ruda\.nn\.scaled_dot_product_attention: k: .*dividing"):
        sdpa(q, k, v, enable_gqa=True)
    q2, k2, v2 = (X(a) for a in _qkv(rng, 1, 4, 2, 4, 5, 8, dt=np.float32))
    with pytest.raises(ValueError, match=r"k: expected 4 heads as q \(enable_gqa=True"):
        sdpa(q2, k2, v2)
    with pytest.raises(ValueError, match=r"attn_mask: expected a shape broadcastable"):
        sdpa(q2, k2, v2, X(np.ones((3, 5), bool)), enable_gqa=True)
    with pytest.raises(TypeError, match=r"q: expected a real floating dtype, got int32"):
        sdpa(ruda.astype(q2, ruda.int32), k2, v2, enable_gqa=True)
    if "float64" in ruda.__array_namespace_info__().dtypes(device=device):
        with pytest.raises(TypeError, match=r"v: expected q's dtype float32, got float64"):
            sdpa(q2, k2, ruda.astype(v2, ruda.float64), enable_gqa=True)
    with pytest.raises(ValueError, match=r"k: expected head size D=8"):
        sdpa(q2, k2[..., :4], v2, enable_gqa=True)
    with pytest.raises(ValueError, match=r"v: expected \(B, H_kv, S\)"):
        sdpa(q2, k2, v2[:, :, :3], enable_gqa=True)
    with pytest.raises(ValueError, match=r"k: expected q's 3 dimensions, got shape"):
        sdpa(q2[0], k2, v2, enable_gqa=True)
    with pytest.raises(ValueError, match=r"q: expected at least 2 dimensions"):
        sdpa(q2[0, 0, 0], k2, v2, enable_gqa=True)
    with pytest.raises(ValueError, match=r"sliding_window: expected a positive int"):
        sdpa(q2, k2, v2, enable_gqa=True, sliding_window=0)
    # torch's call sdpa(q, k, v, None, 0.1) (dropout_p fifth) must not pass as is_causal=0.1
    for args, kw in (((None, 0.1), {"enable_gqa": True}), ((None, 0.0, True), {}),
                     ((), {"enable_gqa": 1})):
        with pytest.raises(TypeError, match=r"(is_causal|enable_gqa): expected True or False \(pass "
                                            r"it by keyword: there is no dropout_p\), got (0\.1|0\.0|1)"):
            sdpa(q2, k2, v2, *args, **kw)
    with pytest.raises(TypeError, match=r"is_causal: expected True or False"):
        sdpa(q2[0], k2[0], v2[0], None, 0.1, enable_gqa=True)          # 3-D inputs too
    other = [d for d in ruda.devices() if d != q2.device]
    if other:
        with pytest.raises(ValueError, match=r"k: expected q's device"):
            sdpa(q2, k2.to_device(other[0]), v2, enable_gqa=True)
    with pytest.raises(ValueError, match=r"ruda\.nn\.KVCache: max_len: expected an int >= 1"):
        nn.KVCache(1, 2, 0, 8)


def test_numpy_scalar_arguments(device):
    """scale and sliding_window as NumPy scalars, as ruda.nn's other scalar arguments."""
    dt, tol = _float(device)
    q, k, v = _qkv(np.random.default_rng(13), 1, 2, 2, 4, 6, 8, dt=dt)
    want = _torch(q, k, v, scale=0.5)
    for s in (np.float32(0.5), np.float64(0.5), np.float16(0.5)):
        np.testing.assert_allclose(_ours(device, q, k, v, scale=s)[1], want, rtol=tol, atol=tol)
    _, got = _ours(device, q, k, v, is_causal=True, sliding_window=np.int64(3), scale=np.int32(1))
    want = _torch(q, k, v, mask=_band(4, 6, True, 3), scale=1.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    with pytest.raises(TypeError, match=r"ruda\.nn\.scaled_dot_product_attention: scale: "
                                        r"expected a Python real number, got str"):
        _ours(device, q, k, v, scale="0.5")
    with pytest.raises(TypeError, match=r"sliding_window: expected a positive int or None, "
                                        r"got 2.5"):
        _ours(device, q, k, v, sliding_window=2.5)


@pytest.mark.parametrize("layout", ["cache view", "owned", "strided rows"])
@pytest.mark.parametrize("window", [None, 3])
def test_host_decode_row_layouts(monkeypatch, layout, window):
    """One query row per head on the host (the fused Numba loop finds k and v inside the array
    that owns them; rows that are not contiguous take the NumPy path): every layout agrees
    with torch, GQA and a sliding window included."""
    rng = np.random.default_rng(12)
    B, Hq, Hkv, S, D, T = 2, 6, 2, 7, 16, 11
    q, k, v = _qkv(rng, B, Hq, Hkv, 1, S, D, dt=np.float32)
    if layout == "cache view":
        kb, vb = np.zeros((B, Hkv, T, D), np.float32), np.zeros((B, Hkv, T, D), np.float32)
        kb[:, :, :S], vb[:, :, :S] = k, v
        k, v = kb[:, :, :S], vb[:, :, :S]
    elif layout == "strided rows":
        k = np.repeat(k, 2, axis=-1)[..., ::2]
        v = np.repeat(v, 2, axis=-1)[..., ::2]
    from ruda.backends.host import _nn_attention
    fused = []
    real = _nn_attention._decode_fused
    monkeypatch.setattr(_nn_attention, "_decode_fused", lambda *a: fused.append(1) or real(*a))
    keep = _band(1, S, causal=True, window=window)
    want = _torch(q, k, v, mask=keep, gqa=True)
    got = nn.scaled_dot_product_attention(ruda.asarray(q), ruda.asarray(k), ruda.asarray(v),
                                          is_causal=True, enable_gqa=True, sliding_window=window)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)
    assert bool(fused) == (layout in ("cache view", "owned"))
