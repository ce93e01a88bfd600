"""ruda.nn.top_k against torch.topk; sample's filters against a NumPy transcription of
transformers' logits warpers (the kept set), its draw by a chi-square test."""
import numpy as np
import pytest

import ruda
import ruda.nn as nn
import ruda.random
from ruda.nn import _sampling

torch = pytest.importorskip("torch")
stats = pytest.importorskip("scipy.stats")


def _host(a):
    return np.asarray(a.to_device("cpu"))


def _float(device):
    return np.float64 if "float64" in ruda.__array_namespace_info__().dtypes(device=device) \
        else np.float32


@pytest.mark.parametrize("axis", [-1, 0])
def test_top_k_vs_torch(device, axis):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 50)).astype(_float(device))
    vals, idx = nn.top_k(ruda.asarray(x, device=device), 5, axis=axis)
    tv, ti = torch.topk(torch.from_numpy(x), 5, dim=axis)
    np.testing.assert_array_equal(_host(vals), tv.numpy())
    np.testing.assert_array_equal(_host(idx), ti.numpy())
    info = ruda.__array_namespace_info__()
    assert idx.dtype == info.default_dtypes(device=device)["indexing"]
    assert vals.dtype == ruda.asarray(x, device=device).dtype


@pytest.mark.parametrize("k", [1, 3, 7, 12])
def test_top_k_ties_lower_index_first(device, k):
    x = np.array([[1, 3, 3, 0, 3, 2, 2, 3, 1, 0, 2, 3],
                  [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5]], dtype=np.int32)
    vals, idx = nn.top_k(ruda.asarray(x, device=device), k)
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]     # descending, ties by index
    np.testing.assert_array_equal(_host(idx), order)
    np.testing.assert_array_equal(_host(vals), np.take_along_axis(x, order, axis=1))


def test_top_k_composite(device, monkeypatch):
    """The namespace-op path (devices without a kernel)."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 4, (3, 40)).astype(np.float32)
    xd = ruda.asarray(x, device=device)
    if getattr(xd.device.backend, "nn", None) is not None:
        monkeypatch.setattr(xd.device.backend.nn, "top_k", None)
    vals, idx = nn.top_k(xd, 9)
    order = np.argsort(-x, axis=1, kind="stable")[:, :9]
    np.testing.assert_array_equal(_host(idx), order)
    np.testing.assert_array_equal(_host(vals), np.take_along_axis(x, order, axis=1))


def test_top_k_bad_input(device):
    x = ruda.ones((2, 5), device=device)
    with pytest.raises(ValueError, match=r"ruda\.nn\.top_k: k: expected 0 <= k <= 5"):
        nn.top_k(x, 6)
    with pytest.raises(TypeError, match=r"ruda\.nn\.top_k: x: expected a real numeric dtype"):
        nn.top_k(ruda.ones((2, 5), dtype=ruda.bool, device=device), 1)
    with pytest.raises(ValueError, match=r"ruda\.nn\.top_k: axis: expected an axis in"):
        nn.top_k(x, 1, axis=2)


def _nan_rows(n, rows=3, nans=(2, 7, 8, 9)):
    """Distinct finite values (torch's order among equal values is its sort's), a NaN run and
    single NaNs, +inf and -inf."""
    rng = np.random.default_rng(n)
    x = np.stack([rng.permutation(n) - n / 2 for _ in range(rows)]).astype(np.float64)
    for r in range(rows):
        pos = rng.choice(n, 2 + len(nans) * (r > 0), replace=False)
        x[r, pos[:2]] = (np.inf, -np.inf)
        x[r, pos[2:]] = np.nan
    x[0, [n // 3 + d for d in nans if n // 3 + d < n]] = np.nan
    return x


@pytest.mark.parametrize("n, ks", [(4, (1, 2, 3, 4)), (600, (5, 257, 600)),
                                   (16384, (5, 300))])
@pytest.mark.parametrize("numba", [True, False], ids=["numba", "no-numba"])
def test_top_k_nan_largest(device, monkeypatch, n, ks, numba):
    """NaN ranks above +inf on every path (the host's heap, argpartition and sampled-threshold
    paths, k up to n): values and non-NaN indices as torch.topk. torch orders NaNs as its sort
    leaves them; ruda keeps the lowest-indexed NaNs, lower index first."""
    if not numba:
        if device.kind != "cpu":
            pytest.skip("the host's Numba-less paths")
        from ruda.backends.host import _nn_topk
        monkeypatch.setattr(_nn_topk, "_nb", None)
    a = np.array([[1, np.inf, np.nan, 0]]) if n == 4 else _nan_rows(n)
    for dt in {np.float32, _float(device)}:
        x = a.astype(dt)
        for k in ks:
            vals, idx = nn.top_k(ruda.asarray(x, device=device), k)
            tv, ti = torch.topk(torch.from_numpy(x), k)
            v, i = _host(vals), _host(idx)
            np.testing.assert_array_equal(v, tv.numpy(), err_msg=f"{dt} k={k}")
            nan = np.isnan(v)
            np.testing.assert_array_equal(i[~nan], ti.numpy()[~nan], err_msg=f"{dt} k={k}")
            for r in range(x.shape[0]):
                lowest = np.flatnonzero(np.isnan(x[r]))[:nan[r].sum()]
                np.testing.assert_array_equal(i[r][nan[r]], lowest, err_msg=f"{dt} k={k}")
    if n == 4:
        np.testing.assert_array_equal(_host(idx), [[2, 1, 0, 3]])


# ---------------------------------------------------------------- transformers' warpers, NumPy
def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _ref_filter(s, top_k=None, top_p=None, min_p=None):
    s = s.astype(np.float64).copy()
    if top_k is not None:                               # TopKLogitsWarper
        kth = np.sort(s, axis=-1)[:, ::-1][:, min(top_k, s.shape[1]) - 1][:, None]
        s[s < kth] = -np.inf
    if top_p is not None:                               # TopPLogitsWarper
        order = np.argsort(s, axis=-1, kind="stable")
        srt = np.take_along_axis(s, order, -1)
        cum = np.cumsum(_softmax(srt), -1)
        remove = cum <= 1 - top_p
        remove[:, -1] = False
        back = np.zeros_like(remove)
        np.put_along_axis(back, order, remove, -1)
        s[back] = -np.inf
    if min_p is not None:                               # MinPLogitsWarper
        p = _softmax(s)
        s[p < min_p * p.max(-1, keepdims=True)] = -np.inf
    return s


@pytest.mark.parametrize("kw", [dict(top_k=4), dict(top_p=0.7), dict(min_p=0.2),
                                dict(top_k=6, top_p=0.8, min_p=0.05), dict(top_p=1e-9),
                                dict(top_k=30)])
def test_filters_keep_the_transformers_set(device, kw):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((5, 24)) * 2).astype(_float(device))
    got = _host(_sampling.filter_logits(ruda.asarray(x, device=device), **kw))
    want = _ref_filter(x, **kw)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    assert np.isfinite(got).sum(axis=1).min() >= 1
    np.testing.assert_array_equal(got[np.isfinite(got)], x[np.isfinite(want)])


@pytest.mark.parametrize("kw", [{}, dict(top_k=24), dict(top_k=30), dict(top_p=1.0),
                                dict(min_p=0.0)])
def test_filter_logits_that_keeps_every_token_returns_a_new_array(device, kw):
    """No filter, or none that drops a token, still returns a new array: writing into the
    result leaves the logits unchanged."""
    x = np.random.default_rng(32).standard_normal((5, 24)).astype(_float(device))
    logits = ruda.asarray(x.copy(), device=device)      # not sharing x's memory on cpu
    got = nn.filter_logits(logits, **kw)
    assert got.dtype == logits.dtype
    np.testing.assert_array_equal(_host(got), _ref_filter(x, **kw))
    got[...] = 0.0
    np.testing.assert_array_equal(_host(logits), x)


def test_filter_logits_any_leading_axes(device):
    """Logits (V,) and (..., V): the rows of the 2-D case, filtered alike."""
    rng = np.random.default_rng(31)
    x = (rng.standard_normal((2, 3, 24)) * 2).astype(_float(device))
    for kw in (dict(top_k=5), dict(top_p=0.6, min_p=0.1)):
        want = _ref_filter(x.reshape(6, 24), **kw).reshape(x.shape)
        got = _host(nn.filter_logits(ruda.asarray(x, device=device), **kw))
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
        got = _host(nn.filter_logits(ruda.asarray(x[1, 2], device=device), **kw))
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want[1, 2]))


def test_filter_logits_bad_input(device):
    x = ruda.ones((2, 5), device=device)
    fl = nn.filter_logits
    with pytest.raises(TypeError, match=r"ruda\.nn\.filter_logits: logits: expected a ruda array"):
        fl(np.ones((2, 5)))
    with pytest.raises(TypeError, match=r"ruda\.nn\.filter_logits: logits: expected a real "
                       r"floating dtype, got int32"):
        fl(ruda.ones((2, 5), dtype=ruda.int32, device=device), top_k=2)
    with pytest.raises(ValueError, match=r"ruda\.nn\.filter_logits: logits: expected shape "
                       r"\(\.\.\., V\) with V >= 1, got \(2, 0\)"):
        fl(ruda.ones((2, 0), device=device), top_k=2)
    with pytest.raises(ValueError, match=r"filter_logits: logits: expected shape .*, got \(\)"):
        fl(ruda.ones((), device=device))
    with pytest.raises(ValueError, match=r"ruda\.nn\.filter_logits: top_k: expected an int >= 1, "
                       r"got 0"):
        fl(x, top_k=0)
    with pytest.raises(TypeError, match=r"ruda\.nn\.filter_logits: top_k: expected an int or "
                       r"None, got float"):
        fl(x, top_k=2.0)
    y = ruda.asarray(np.arange(10).reshape(2, 5).astype(_float(device)), device=device)
    for k in (np.int64(2), np.uint8(2)):          # NumPy integers count as ints
        assert np.isfinite(_host(fl(y, top_k=k))).tolist() == [[False] * 3 + [True] * 2] * 2
    with pytest.raises(ValueError, match=r"ruda\.nn\.filter_logits: top_p: expected a number in "
                       r"\(0"):
        fl(x, top_p=1.5)
    with pytest.raises(ValueError, match=r"ruda\.nn\.filter_logits: min_p: expected a number in "
                       r"\[0"):
        fl(x, min_p=-0.1)


def test_temperature_zero_is_argmax(device):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 30)).astype(_float(device))
    x[2, [3, 9]] = 10.0                                  # a tie: the lower index
    tok = nn.sample(ruda.asarray(x, device=device), temperature=0.0)
    np.testing.assert_array_equal(_host(tok), np.argmax(x, axis=1))


@pytest.mark.parametrize("kw", [dict(), dict(temperature=0.5, top_k=4),
                                dict(temperature=2.0, top_p=0.6)])
def test_draw_follows_the_distribution(device, kw):
    """Chi-square of the drawn tokens against softmax(filtered logits / T), fixed seed."""
    V, n = 8, 4000
    logits = np.array([1.0, 0.2, -0.5, 2.0, 0.0, -1.5, 1.2, 0.7])
    T = kw.get("temperature", 1.0)
    want_s = _ref_filter((logits / T)[None], kw.get("top_k"), kw.get("top_p"))[0]
    p = _softmax(want_s[None])[0]
    x = np.broadcast_to(logits, (n, V)).astype(_float(device))
    tok = _host(nn.sample(ruda.asarray(x, device=device), generator=ruda.random.Generator(7),
                          **kw))
    counts = np.bincount(tok, minlength=V)
    assert counts[p == 0].sum() == 0                     # filtered tokens never come
    keep = p > 0
    res = stats.chisquare(counts[keep], p[keep] * n)
    assert res.pvalue > 1e-4, (counts, p * n)
    again = _host(nn.sample(ruda.asarray(x, device=device), generator=ruda.random.Generator(7),
                            **kw))
    np.testing.assert_array_equal(again, tok)            # same seed, same draw


def test_sample_bad_input(device):
    x = ruda.ones((2, 5), device=device)
    with pytest.raises(ValueError, match=r"ruda\.nn\.sample: logits: expected shape \(B, V\)"):
        nn.sample(ruda.ones((5,), device=device))
    with pytest.raises(TypeError, match=r"ruda\.nn\.sample: logits: expected a real floating"):
        nn.sample(ruda.ones((2, 5), dtype=ruda.int32, device=device))
    with pytest.raises(ValueError, match=r"ruda\.nn\.sample: top_p: expected a number in \(0"):
        nn.sample(x, top_p=0.0)
    with pytest.raises(ValueError, match=r"ruda\.nn\.sample: temperature: expected a number"):
        nn.sample(x, temperature=-1.0)
    with pytest.raises(ValueError, match=r"ruda\.nn\.sample: temperature: expected a number in \[0\.0, inf\)"):
        nn.sample(x, temperature=float("inf"))
    with pytest.raises(ValueError, match=r"ruda\.nn\.sample: top_k: expected an int >= 1"):
        nn.sample(x, top_k=0)
    with pytest.raises(TypeError, match=r"ruda\.nn\.sample: generator: expected a ruda\.random"):
        nn.sample(x, generator=np.random.default_rng(0))


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("dt", [np.int32, np.float32, np.float16])
def test_top_k_long_rows_host_kernel(dt, numba, monkeypatch):
    """The cpu kernel on long rows with many ties and NaN: the per-row heap (Numba), and without
    Numba the candidates above a sampled threshold; NaN ranks first, as in torch."""
    from ruda.backends.host import _nn_topk as K
    if not numba:
        monkeypatch.setattr(K, "_nb", None)
    elif K._nb is None:
        pytest.skip("Numba is not installed")
    rng = np.random.default_rng(12)
    x = rng.integers(-4, 4, (3, 20000)).astype(dt)
    for k in (1, 37, 256, 700):
        vals, idx = K.top_k(x, k)
        order = np.argsort(-x.astype(np.float64), axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(idx, order)
        np.testing.assert_array_equal(vals, np.take_along_axis(x, order, axis=1))
    y = rng.standard_normal((3, 30000)).astype(np.float32)
    y[1, ::1000] = np.nan
    y[2] = np.sort(y[2])                      # ascending: every entry enters the heap
    tv, ti = torch.topk(torch.from_numpy(y), 50)
    vals, idx = K.top_k(y, 50)
    np.testing.assert_array_equal(idx[[0, 2]], ti.numpy()[[0, 2]])
    np.testing.assert_array_equal(vals, tv.numpy())      # torch orders its NaNs arbitrarily:
    want = np.argsort(-np.where(np.isnan(y[1]), np.inf, y[1]), kind="stable")[:50]
    np.testing.assert_array_equal(idx[1], want)          # here the lower index first
