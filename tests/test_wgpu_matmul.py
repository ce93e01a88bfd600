"""The tuned WGSL matmul of the wgpu backend (ruda/backends/wgpu/_matmul.py).

Oracle: NumPy float64 on the same (fresh random) inputs.  Every shape runs with
``RUDA_TUNE=off`` (fixed default kernel) and ``RUDA_TUNE=on`` (tuned on first use of the
bucket, against a temporary cache file and a small measuring budget); tuning must not change
results beyond the tolerance.
"""
import json

import numpy as np
import pytest

import ruda as xp
from ruda.runtime import tune

pytest.importorskip("wgpu")


@pytest.fixture(scope="module")
def dev():
    try:
        return xp.device("wgpu")
    except ValueError as e:
        pytest.skip(f"no wgpu device: {e}")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tune")


@pytest.fixture(params=["off", "on"])
def mode(request, monkeypatch, cache_dir):
    monkeypatch.setenv("RUDA_TUNE", request.param)
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(cache_dir / "tune.json"))
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "0.05")
    return request.param


def _close(got, ref, rtol):
    """Norm-wise: max |got - ref| <= rtol * max(1, max |ref|) (accumulation order differs)."""
    got = np.asarray(got, np.complex128 if np.iscomplexobj(got) else np.float64)
    assert got.shape == ref.shape
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    assert err <= rtol * scale, f"max abs error {err:.3g} > {rtol:g} x {scale:.3g}"


def _host(x):
    return np.asarray(x.to_device("cpu"))


SHAPES = [
    ((1, 1), (1, 1)),
    ((33, 29), (29, 47)),
    ((64, 80), (80, 96)),
    ((3, 17, 9, 5), (17, 5, 7)),          # batched, b broadcast over the leading batch dim
    ((3, 1, 9, 5), (17, 5, 7)),           # both broadcast: batch dims that do not collapse
    ((2, 130, 64), (64, 68)),             # 130 rows: partial tiles, vec4-aligned K and N
    ((5,), (5, 7)),                       # 1-D @ 2-D
    ((4, 6, 7), (7,)),                    # N-D @ 1-D
    ((9,), (9,)),                         # 1-D @ 1-D: a 0-d result
]


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}@{b}" for a, b in SHAPES])
def test_f32_matches_numpy(dev, mode, sa, sb):
    rng = np.random.default_rng()
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    got = xp.matmul(xp.asarray(a, device=dev), xp.asarray(b, device=dev))
    assert got.dtype == xp.float32 and got.device == dev
    _close(_host(got), a.astype(np.float64) @ b.astype(np.float64), 1e-5)


def test_views_in_place_and_copied(dev, mode):
    """Offsets, leading dimensions, transposes, negative and non-unit column strides."""
    rng = np.random.default_rng()
    A = rng.standard_normal((70, 66)).astype(np.float32)
    B = rng.standard_normal((66, 72)).astype(np.float32)
    a, b = xp.asarray(A, device=dev), xp.asarray(B, device=dev)
    cases = [
        (a[1:, 2:], b[2:, :]),              # offset operands, lda 66: misaligned for vec4
        (a[:, :64], b[:64, 4:]),            # sub-blocks: lda != K, ldb != N
        (b.mT, a.mT),                       # transposed views (copied)
        (a[::-1, ::2], b[:33, ::-1]),       # negative and strided columns (copied)
    ]
    for x, y in cases:
        ref = _host(x).astype(np.float64) @ _host(y).astype(np.float64)
        _close(_host(x @ y), ref, 1e-5)


@pytest.mark.parametrize("lead", [(), (1,), (8,), (9,), (2, 3, 5)], ids=str)
def test_rows_times_transposed_weight(dev, mode, lead):
    """x @ W.T as nn.linear calls it: up to 8 rows a multiply-reduce over W's rows, more rows
    (W @ x.T).T; W (a wide matrix) is never copied. Offset and sliced W included."""
    rng = np.random.default_rng()
    W = rng.standard_normal((203, 36)).astype(np.float32)
    X = rng.standard_normal(lead + (33,)).astype(np.float32)
    w, x = xp.asarray(W, device=dev), xp.asarray(X, device=dev)
    got = x @ w[3:, 3:].mT
    assert got.shape == lead + (200,) and got.dtype == xp.float32
    _close(_host(got), X.astype(np.float64) @ W[3:, 3:].T.astype(np.float64), 1e-5)


def test_tensordot_and_linalg_matmul_use_it(dev, mode):
    rng = np.random.default_rng()
    a = rng.standard_normal((6, 5, 8)).astype(np.float32)
    b = rng.standard_normal((5, 8, 7)).astype(np.float32)
    st = dev.backend._mm_state()
    before = len(st.choices)
    got = xp.tensordot(xp.asarray(a, device=dev), xp.asarray(b, device=dev), axes=([1, 2], [0, 1]))
    _close(_host(got), np.tensordot(a.astype(np.float64), b.astype(np.float64), axes=([1, 2], [0, 1])), 1e-5)
    got = xp.linalg.matmul(xp.asarray(a[0], device=dev), xp.asarray(b[0], device=dev))
    _close(_host(got), a[0].astype(np.float64) @ b[0].astype(np.float64), 1e-5)
    assert any(k[2] == "f32" and k[3] == (8, 8, 64) for k in st.choices), st.choices.keys()
    assert len(st.choices) >= before


def test_empty_and_zero_k(dev, mode):
    z = xp.matmul(xp.ones((3, 0), dtype=xp.float32, device=dev), xp.ones((0, 4), dtype=xp.float32, device=dev))
    assert z.shape == (3, 4) and np.all(_host(z) == 0)
    e = xp.matmul(xp.ones((2, 0, 5), dtype=xp.float32, device=dev), xp.ones((5, 4), dtype=xp.float32, device=dev))
    assert e.shape == (2, 0, 4)


def test_other_dtypes_fall_back(dev, mode):
    rng = np.random.default_rng()
    a = rng.integers(-9, 9, (7, 5)).astype(np.int32)
    b = rng.integers(-9, 9, (5, 3)).astype(np.int32)
    got = _host(xp.asarray(a, device=dev) @ xp.asarray(b, device=dev))
    assert got.dtype == np.int32 and np.array_equal(got, a @ b)
    c = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(np.complex64)
    d = (rng.standard_normal((6, 2)) + 1j * rng.standard_normal((6, 2))).astype(np.complex64)
    _close(_host(xp.asarray(c, device=dev) @ xp.asarray(d, device=dev)),
           c.astype(np.complex128) @ d.astype(np.complex128), 1e-5)


def _f16_array(backend, host):
    """float16 is not a ruda dtype; the backend's matmul serves it for internal callers."""
    from ruda.backends.wgpu._array import WArray, contiguous_strides
    host = np.ascontiguousarray(host, np.float16)
    return WArray(backend.ctx.upload(host), host.shape, contiguous_strides(host.shape), 0, host.dtype)


@pytest.mark.parametrize("sa,sb", [((64, 80), (80, 96)), ((33, 29), (29, 47)), ((3, 9, 12), (12, 20))])
def test_f16_matches_numpy(dev, mode, sa, sb):
    be = dev.backend
    if "shader-f16" not in be.ctx.features:
        pytest.skip("adapter without shader-f16")
    rng = np.random.default_rng()
    a = rng.standard_normal(sa).astype(np.float16)
    b = rng.standard_normal(sb).astype(np.float16)
    out = be.matmul(_f16_array(be, a), _f16_array(be, b))
    assert out.dtype == np.float16
    got = np.empty(out.shape, np.float16)
    be.ctx.read(out.st, 0, got.nbytes, got.reshape(-1).view(np.uint8))
    # f32 accumulation, one f16 rounding of the result (2^-11 relative)
    _close(got, a.astype(np.float64) @ b.astype(np.float64), 2e-3)


def test_tuning_is_cached_and_changes_nothing(dev, monkeypatch, tmp_path):
    rng = np.random.default_rng()
    a = rng.standard_normal((60, 70)).astype(np.float32)
    b = rng.standard_normal((70, 90)).astype(np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(tmp_path / "tune.json"))
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "0.1")
    monkeypatch.setenv("RUDA_TUNE", "off")
    off = _host(x @ y)
    assert not (tmp_path / "tune.json").exists()            # off never measures
    monkeypatch.setenv("RUDA_TUNE", "on")
    runs = tune.stats()["tuning_runs"]
    on = _host(x @ y)
    assert tune.stats()["tuning_runs"] == runs + 1
    st = dev.backend._mm_state()
    bucket, name, how = st.last_choice
    assert (bucket, how) == ("64x128x128", "tuned")
    entries = json.loads((tmp_path / "tune.json").read_text())["entries"]
    (key, entry), = entries.items()
    assert key.endswith("|matmul|float32|64x128x128") and entry["choice"] == name
    assert not entry["rejected"], entry["rejected"]           # every candidate agrees with the reference
    _close(off, ref, 1e-5)
    _close(on, ref, 1e-5)
    _close(on, off.astype(np.float64), 1e-5)
    # later calls of the bucket: no tuner lookup at all (not even a memo hit)
    s0 = tune.stats()
    for m, n, k in ((60, 90, 70), (33, 100, 65), (64, 128, 128)):
        a2 = rng.standard_normal((m, k)).astype(np.float32)
        b2 = rng.standard_normal((k, n)).astype(np.float32)
        got = xp.asarray(a2, device=dev) @ xp.asarray(b2, device=dev)
        _close(_host(got), a2.astype(np.float64) @ b2.astype(np.float64), 1e-5)
    assert tune.stats() == s0
    # a fresh process state (memo dropped) answers from the cache file without measuring
    st.choices.clear()
    st.tuners.clear()
    runs = tune.stats()["tuning_runs"]
    _close(_host(x @ y), ref, 1e-5)
    assert tune.stats()["tuning_runs"] == runs and st.last_choice == (bucket, name, "cache")


@pytest.mark.parametrize("spelling", ["0", "false", "No", "OFF"])
def test_tune_switch_spellings_mean_off(dev, monkeypatch, tmp_path, spelling):
    """RUDA_TUNE takes the switch spellings: each of these is off (the default kernel, nothing
    measured, no cache file), where only "off" was before; a value that means nothing is named."""
    rng = np.random.default_rng()
    a = rng.standard_normal((60, 70)).astype(np.float32)
    b = rng.standard_normal((70, 90)).astype(np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(tmp_path / "tune.json"))
    monkeypatch.setenv("RUDA_TUNE", spelling)
    runs = tune.stats()["tuning_runs"]
    got = x @ y
    assert got.dtype == xp.float32
    _close(_host(got), a.astype(np.float64) @ b.astype(np.float64), 1e-5)
    assert dev.backend._mm_state().last_choice[2] == "default (RUDA_TUNE=off)"
    assert tune.stats()["tuning_runs"] == runs and not (tmp_path / "tune.json").exists()
    monkeypatch.setenv("RUDA_TUNE", "sometimes")
    with pytest.raises(ValueError, match="RUDA_TUNE='sometimes' is not valid"):
        x @ y
    monkeypatch.setenv("RUDA_TUNE", "on")
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "abc")
    with pytest.raises(ValueError, match="RUDA_TUNE_BUDGET='abc' is not valid"):
        x @ y


def test_tuning_keeps_someone_elses_file(dev, monkeypatch, tmp_path):
    """RUDA_TUNE_CACHE naming a file that is not ruda's: the tuned product matches NumPy, the
    file is left as it was and the warning (once) names it at the caller's line."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(notes))
    monkeypatch.setenv("RUDA_TUNE", "on")
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "0.05")
    rng = np.random.default_rng()
    a = rng.standard_normal((50, 36)).astype(np.float32)
    b = rng.standard_normal((36, 70)).astype(np.float32)
    with pytest.warns(RuntimeWarning) as got:
        c = xp.asarray(a, device=dev) @ xp.asarray(b, device=dev)
        c2 = xp.asarray(b.T, device=dev) @ xp.asarray(a.T, device=dev)
    assert len(got) == 1 and got[0].filename == __file__, [str(w.message) for w in got]
    assert f"tuning cache {notes} is left as it is" in str(got[0].message)
    assert c.dtype == c2.dtype == xp.float32
    _close(_host(c), a.astype(np.float64) @ b.astype(np.float64), 1e-5)
    _close(_host(c2), b.T.astype(np.float64) @ a.T.astype(np.float64), 1e-5)
    assert notes.read_text() == "my notes\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
