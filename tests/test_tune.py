"""The runtime tuner (ruda.runtime.tune): selection, validation, cache, modes.

Timing-dependent choices use a fake timer (a cost table), so these tests are deterministic;
one test uses the real host clock only to check that measuring works end to end.
"""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from ruda.runtime import tune


class FakeTimer:
    """measure() returns cost[name] * number without timing anything (runs fn once)."""

    def __init__(self, cost):
        self.cost = cost
        self.calls = []

    def measure(self, fn, number):
        fn()
        self.calls.append(fn.cand)
        return self.cost[fn.cand] * number


def _family(x, impls):
    """Candidates + build() for a toy op whose implementations are ``impls`` (name -> f(x))."""
    cands = [tune.Candidate(n, {"i": i}) for i, n in enumerate(impls)]
    built = []

    def build(c):
        built.append(c.name)

        def fn(**_):
            return impls[c.name](x)
        fn.cand = c.name
        return fn
    return cands, build, built


@pytest.fixture
def cache_path(tmp_path, monkeypatch):
    p = tmp_path / "tune.json"
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(p))
    monkeypatch.setenv("RUDA_TUNE", "on")
    return p


FP = tune.Fingerprint("cpu", "test-device", "drv 1")
X = np.random.default_rng(0).standard_normal((64, 48)).astype(np.float32)
GOOD = {
    "ref": lambda x: x.sum(axis=1),
    "slow": lambda x: x.sum(axis=1, dtype=np.float64).astype(np.float32),
    "fast": lambda x: np.add.reduce(x[:, ::-1], axis=1),       # other order, within tolerance
}


def test_picks_fastest_valid_candidate(cache_path):
    impls = dict(GOOD, wrong=lambda x: x.sum(axis=1) + 1.0, nan=lambda x: x.sum(axis=1) * np.nan,
                 boom=lambda x: 1 / 0, shape=lambda x: x.sum(axis=0))
    cost = {"ref": 3e-3, "slow": 5e-3, "fast": 1e-3, "wrong": 1e-6, "nan": 1e-6, "boom": 1e-6,
            "shape": 1e-6}
    cands, build, _ = _family(X, impls)
    tuner = tune.Tuner(FP, FakeTimer(cost))
    choice = tuner.choose("rowsum", "float32", X.shape, cands, build)
    assert choice.name == "fast" and choice.params == {"i": 2}
    rep = tuner.last_report
    assert set(rep["rejected"]) == {"wrong", "nan", "boom", "shape"}
    assert "NaN/Inf" in rep["rejected"]["nan"] and "ZeroDivisionError" in rep["rejected"]["boom"]
    # never changes results beyond tolerance: the winner agrees with the reference
    assert tune.compare(impls["fast"](X), impls["ref"](X), *tune.tolerance(np.float32)) is None
    assert set(tuner.timer.calls) <= {"ref", "slow", "fast"}     # rejected ones are never timed


def test_interleaved_rounds_and_median(cache_path):
    cands, build, _ = _family(X, GOOD)
    timer = FakeTimer({"ref": 2e-3, "slow": 2.1e-3, "fast": 1.9e-3})
    tuner = tune.Tuner(FP, timer, min_rounds=4, max_rounds=4)
    assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
    # calibration (1 each) then 4 rounds whose first candidate rotates
    rounds = [timer.calls[3 + 3 * r] for r in range(4)]
    assert rounds == ["ref", "slow", "fast", "ref"]
    assert tuner.last_report["rounds"] == 4


def test_reference_failure_is_an_error(cache_path):
    cands, build, _ = _family(X, {"ref": lambda x: 1 / 0, "fast": GOOD["fast"]})
    with pytest.raises(tune.TuneError):
        tune.Tuner(FP, FakeTimer({})).choose("rowsum", "float32", X.shape, cands, build)


def test_cache_roundtrip_and_key(cache_path):
    cands, build, built = _family(X, GOOD)
    cost = {"ref": 3e-3, "slow": 5e-3, "fast": 1e-3}
    t1 = tune.Tuner(FP, FakeTimer(cost))
    assert t1.choose("rowsum", "float32", (60, 40), cands, build).name == "fast"
    data = json.loads(cache_path.read_text())
    assert data["format"] == "ruda-tune-cache"
    (key,) = data["entries"]
    assert key == "cpu|test-device|drv 1|ruda 0.1.0|rowsum|float32|64x64"
    assert data["entries"][key]["choice"] == "fast"
    # a new tuner (same file): no building, no measuring; same bucket -> hit
    built.clear()
    t2 = tune.Tuner(FP, FakeTimer({}))
    before = tune.stats()
    assert t2.choose("rowsum", "float32", (64, 33), cands, build).name == "fast"
    after = tune.stats()
    assert built == [] and t2.timer.calls == []
    assert after["cache_hits"] == before["cache_hits"] + 1
    assert after["tuning_runs"] == before["tuning_runs"]
    # another device, dtype or bucket is another key
    t3 = tune.Tuner(tune.Fingerprint("cpu", "other"), FakeTimer(cost))
    t3.choose("rowsum", "float32", (60, 40), cands, build)
    t3.timer = t2.timer = FakeTimer(cost)
    t2.choose("rowsum", "float64", (60, 40), cands, build)
    assert len(json.loads(cache_path.read_text())["entries"]) == 3
    assert not [p for p in os.listdir(cache_path.parent) if p.endswith(".tmp")]


def test_stale_choice_is_retuned(cache_path):
    cands, build, _ = _family(X, GOOD)
    tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1})).choose("rowsum", "float32", X.shape,
                                                                       cands, build)
    cands2, build2, built2 = _family(X, {"ref": GOOD["ref"], "slow": GOOD["slow"]})
    t = tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2}))
    assert t.choose("rowsum", "float32", X.shape, cands2, build2).name == "slow"
    assert built2


@pytest.mark.parametrize("content", [b"{not json", b"", b'{"format": "something-else"}',
                                     b"[1, 2, 3]", b'{"format": "ruda-tune-cache", "version": 99}',
                                     b"\x00\xff\xfe garbage"])
def test_corrupt_or_foreign_cache_is_survived(cache_path, content):
    cache_path.write_bytes(content)
    cands, build, _ = _family(X, GOOD)
    tuner = tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1}))
    with pytest.warns(RuntimeWarning, match="tuning cache"):
        assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
    data = json.loads(cache_path.read_text())          # rebuilt as a valid cache
    assert data["format"] == "ruda-tune-cache" and len(data["entries"]) == 1


def test_malformed_entries_dropped(cache_path):
    cache_path.write_text(json.dumps({"format": "ruda-tune-cache", "version": 1,
                                      "entries": {"k1": {"choice": 3}, "k2": "x"}}))
    with pytest.warns(RuntimeWarning, match="malformed"):
        assert tune.TuneCache().keys() == []


def test_concurrent_writers_merge(tmp_path):
    p = str(tmp_path / "sub" / "c.json")
    a, b = tune.TuneCache(p), tune.TuneCache(p)
    a.get("x")
    b.get("x")                          # both loaded (empty) before either writes
    a.put("k1", {"choice": "a", "params": {}})
    b.put("k2", {"choice": "b", "params": {}})
    assert sorted(tune.TuneCache(p).keys()) == ["k1", "k2"]


def test_modes(cache_path, monkeypatch):
    cands, build, built = _family(X, GOOD)
    cost = {"ref": 3, "slow": 2, "fast": 1}
    monkeypatch.setenv("RUDA_TUNE", "off")
    t = tune.Tuner(FP, FakeTimer(cost))
    assert t.choose("rowsum", "float32", X.shape, cands, build).name == "ref"
    assert t.choose("rowsum", "float32", X.shape, cands, build, default="slow").name == "slow"
    assert built == [] and not cache_path.exists()
    monkeypatch.setenv("RUDA_TUNE", "on")
    assert t.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
    # force: ignores the cached entry, measures once per process, then remembers
    monkeypatch.setenv("RUDA_TUNE", "force")
    t2 = tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 0.5, "fast": 1}))
    assert t2.choose("rowsum", "float32", X.shape, cands, build).name == "slow"
    n = len(t2.timer.calls)
    assert t2.choose("rowsum", "float32", X.shape, cands, build).name == "slow"
    assert len(t2.timer.calls) == n
    assert json.loads(cache_path.read_text())["entries"][t2.key("rowsum", "float32", X.shape)][
        "choice"] == "slow"
    monkeypatch.setenv("RUDA_TUNE", "bogus")
    with pytest.warns(RuntimeWarning):
        assert tune.mode() == "on"


def test_budget_limits_rounds(cache_path):
    cands, build, _ = _family(X, GOOD)
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1, "slow": 1, "fast": 1}), budget=0.0, min_rounds=2,
                       max_rounds=50)
    tuner.choose("rowsum", "float32", X.shape, cands, build)
    assert tuner.last_report["rounds"] == 2


def test_host_timer_real_clock(cache_path):
    syncs = []
    timer = tune.HostTimer(sync=lambda: syncs.append(1))
    x = np.random.default_rng(1).standard_normal((200, 300))
    impls = {"ref": lambda x: x.sum(axis=1),
             "loop": lambda x: np.array([sum(r.tolist()) for r in x])}     # far slower
    cands, build, _ = _family(x, impls)
    tuner = tune.Tuner(FP, timer, budget=0.5)
    assert tuner.choose("rowsum", "float64", x.shape, cands, build).name == "ref"
    med = tuner.last_report["median_s"]
    assert med["ref"] < med["loop"] and syncs


def test_compare_rules():
    f = np.array([1.0, np.nan, np.inf, 2.0])
    assert tune.compare(f, f, 0, 0) is None
    assert tune.compare(np.array([1.0, np.nan, -np.inf, 2.0]), f, 1e-3, 0) is not None
    assert tune.compare(np.array([1, 2, 3]), np.array([1, 2, 4]), 0, 0) is not None
    assert tune.compare(np.array([1, 2, 3]), np.array([1, 2, 3]), 0, 0) is None
    big = np.array([1e4, 1e-3], np.float32)        # norm-wise: small entries may differ more
    assert tune.compare(big + np.array([0, 1e-3], np.float32), big, 1e-4, 0) is None
    assert tune.bucket((1, 0, 3, 64, 65)) == "1x0x4x64x128"
    assert tune.tolerance("bfloat16")[0] > tune.tolerance(np.float16)[0] > tune.tolerance(np.float32)[0]
    assert tune.tolerance(np.int32) == (0.0, 0.0)


SCRIPT = textwrap.dedent("""
    import json, numpy as np
    from ruda.runtime import tune
    x = np.arange(4096, dtype=np.float32).reshape(64, 64) / 4096
    built = []
    impls = {"ref": lambda: x.sum(axis=1), "alt": lambda: np.add.reduce(x, axis=1),
             "pairs": lambda: x[:, ::2].sum(axis=1) + x[:, 1::2].sum(axis=1)}
    def build(c):
        built.append(c.name)
        return impls[c.name]
    t = tune.Tuner(tune.Fingerprint("cpu", "subprocess-test"), tune.HostTimer(), budget=0.2)
    cands = [tune.Candidate(n, {"n": n}) for n in impls]
    c = t.choose("rowsum", "float32", x.shape, cands, build)
    print(json.dumps({"choice": c.name, "built": built, "stats": tune.stats()}))
""")


def test_second_process_reuses_cache(cache_path):
    env = dict(os.environ, RUDA_TUNE_CACHE=str(cache_path), RUDA_TUNE="on")
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                             text=True, timeout=120, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["stats"]["tuning_runs"] == 1 and first["stats"]["measurements"] > 0
    assert sorted(first["built"]) == ["alt", "pairs", "ref"]
    assert second["stats"]["tuning_runs"] == 0 and second["stats"]["measurements"] == 0
    assert second["stats"]["cache_hits"] == 1 and second["built"] == []
    assert second["choice"] == first["choice"]


def test_warning_free_normal_path(cache_path):
    cands, build, _ = _family(X, GOOD)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1})).choose(
            "rowsum", "float32", X.shape, cands, build)
