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

import _fake_cupy
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


@pytest.mark.parametrize("content", [b'{"format": "ruda-tune-cache", "version": 99}',
                                     b'{"format": "ruda-tune-cache", "version": 1, "entries": null}'])
def test_unusable_ruda_cache_is_rebuilt(cache_path, content):
    cache_path.write_bytes(content)
    cands, build, _ = _family(X, GOOD)
    tuner = tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1}))
    with pytest.warns(RuntimeWarning, match="tuning cache .* it will be rebuilt"):
        assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
    data = json.loads(cache_path.read_text())          # rebuilt as a valid cache
    assert data["format"] == "ruda-tune-cache" and len(data["entries"]) == 1


@pytest.mark.parametrize("content", [b"", b"  \n"])
def test_empty_cache_file_is_filled(cache_path, content):
    cache_path.write_bytes(content)
    cands, build, _ = _family(X, GOOD)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1})).choose(
            "rowsum", "float32", X.shape, cands, build)
    assert len(json.loads(cache_path.read_text())["entries"]) == 1


@pytest.mark.parametrize("content, why", [
    (b"{not json", "it is not JSON"), (b'{"format": "something-else"}', "it is JSON without ruda's"),
    (b"[1, 2, 3]", "it is JSON without ruda's"), (b"\x00\xff\xfe garbage", "it is not JSON"),
    (b"my notes\n", "it is not JSON"),
    pytest.param(b"[" * 100_000, "it is not JSON", id="nested"),   # past the parser's recursion
])
def test_file_that_is_not_a_ruda_cache_is_left_alone(cache_path, content, why):
    """RUDA_TUNE_CACHE naming someone's file: it is never replaced; the choices are kept for
    the process, said once (at the caller's line), and the notice does not claim a cache."""
    cache_path.write_bytes(content)
    cands, build, _ = _family(X, GOOD)
    with pytest.warns(RuntimeWarning) as got:
        tuner = tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1}), notice_after=0.0)
        assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
        assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"  # memo
        # another tuner (another device or op family) on the same file: no second warning
        other = tune.Tuner(FP, FakeTimer({"ref": 1, "slow": 2, "fast": 3}))
        assert other.choose("rowsum", "float64", X.shape, cands, build).name == "ref"
        tune.TuneCache().clear()
    assert len(got) == 1, [str(w.message) for w in got]
    msg = str(got[0].message)
    assert msg.startswith(f"ruda: tuning cache {cache_path} is left as it is: {why}"), msg
    assert "tuning choices are kept for this process only" in msg and got[0].filename == __file__
    assert cache_path.read_bytes() == content
    assert [p.name for p in cache_path.parent.iterdir()] == [cache_path.name]    # no temp files


def test_notice_says_where_the_choice_is_kept(cache_path, capsys):
    cache_path.write_text("my notes\n")
    cands, build, _ = _family(X, GOOD)
    with pytest.warns(RuntimeWarning, match="is left as it is"):
        tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1}), notice_after=0.0).choose(
            "rowsum", "float32", X.shape, cands, build)
    err = capsys.readouterr().err
    assert "cached in" not in err and (f"then kept for this process only (tuning cache "
                                       f"{cache_path}: it is not JSON") in err, err


def test_unreadable_cache_path_is_left_alone(cache_path):
    cache_path.mkdir()                      # a folder where the file should be
    cands, build, _ = _family(X, GOOD)
    with pytest.warns(RuntimeWarning) as got:
        tune.Tuner(FP, FakeTimer({"ref": 3, "slow": 2, "fast": 1})).choose(
            "rowsum", "float32", X.shape, cands, build)
    assert len(got) == 1 and "is left as it is: it cannot be read" in str(got[0].message)
    assert cache_path.is_dir() and list(cache_path.iterdir()) == []
    assert [p.name for p in cache_path.parent.iterdir()] == [cache_path.name]


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
    monkeypatch.setenv("RUDA_TUNE", "bogus")            # named, not taken for "on"
    with pytest.raises(ValueError, match="RUDA_TUNE='bogus' is not valid"):
        t.choose("rowsum", "float32", X.shape, cands, build)


def test_budget_limits_rounds(cache_path):
    cands, build, _ = _family(X, GOOD)
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1, "slow": 1, "fast": 1}), budget=1e9, min_rounds=2,
                       max_rounds=2)
    tuner.choose("rowsum", "float32", X.shape, cands, build)
    assert tuner.last_report["rounds"] == 2
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1, "slow": 1, "fast": 1}), budget=0.0, min_rounds=3,
                       max_rounds=50)
    tuner.choose("rowsum", "float32", (200, 40), cands, build)
    rep = tuner.last_report     # the budget went to the first two (min_tried), timed once: no rounds
    assert rep["rounds"] == 0 and set(rep["median_s"]) == {"ref", "slow"} and rep["skipped"] == ["fast"]
    fast = {"ref": 1e-5, "slow": 1e-5, "fast": 1e-5}    # calibrated to 20 calls: not a sample
    tuner = tune.Tuner(FP, FakeTimer(fast), budget=0.0, min_rounds=3, min_tried=3)
    tuner.choose("rowsum", "float32", (1000, 40), cands, build)
    assert tuner.last_report["rounds"] == 1          # past 3x the budget: one round, then stop
    timer = FakeTimer({"ref": 1, "slow": 1, "fast": 1})
    tuner = tune.Tuner(FP, timer, budget=0.0, min_tried=1)
    assert tuner.choose("rowsum", "float32", (500, 40), cands, build, reference="slow").name == "slow"
    rep = tuner.last_report     # one candidate tried: nothing to compare, nothing timed
    assert rep["rounds"] == 0 and rep["median_s"] == {} and timer.calls == []


def test_far_slower_candidates_dropped_after_first_call(cache_path):
    cands, build, _ = _family(X, GOOD)
    timer = FakeTimer({"ref": 2.0, "slow": 100.0, "fast": 1.0})
    tuner = tune.Tuner(FP, timer, budget=1e9)
    assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
    rep = tuner.last_report
    assert set(rep["median_s"]) == {"ref", "fast"} and rep["slow_first_call_s"] == {"slow": 100.0}
    assert timer.calls.count("slow") == 1


def test_budget_skips_the_candidates_left(cache_path):
    """Candidates are tried in order while the budget lasts (but at least min_tried valid ones);
    the rest are not even built."""
    impls = dict(GOOD, wrong=lambda x: x.sum(axis=1) + 1.0)
    cands, build, built = _family(X, {k: impls[k] for k in ("ref", "wrong", "slow", "fast")})
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1, "slow": 1, "fast": 1}), budget=0.0)
    tuner.choose("rowsum", "float32", X.shape, cands, build)
    assert built == ["ref", "wrong", "slow"] and tuner.last_report["skipped"] == ["fast"]
    built.clear()
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1, "slow": 1, "fast": 1}), budget=1e9)
    tuner.choose("rowsum", "float32", (200, 40), cands, build)
    assert built == ["ref", "wrong", "slow", "fast"] and tuner.last_report["skipped"] == []


def test_expected_output_checks_the_reference_too(cache_path):
    truth = X.sum(axis=1, dtype=np.float64)
    impls = {"ref": lambda x: x.sum(axis=1) + 1.0, "fast": GOOD["fast"], "slow": GOOD["slow"]}
    cands, build, _ = _family(X, impls)
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1.0, "slow": 3.0, "fast": 2.0}), budget=1e9)
    asked = []
    choice = tuner.choose("rowsum", "float32", X.shape, cands, build,
                          expected=lambda: asked.append(1) or truth)
    assert choice.name == "fast" and asked == [1]
    assert set(tuner.last_report["rejected"]) == {"ref"}
    assert set(tuner.last_report["median_s"]) == {"fast", "slow"}
    bad, build2, _ = _family(X, {"ref": impls["ref"], "nan": lambda x: x.sum(axis=1) * np.nan})
    with pytest.raises(tune.TuneError, match="no candidate matches"):
        tune.Tuner(FP, FakeTimer({})).choose("rowsum", "float64", X.shape, bad, build2, expected=truth)


def test_clear_lead_ends_the_rounds(cache_path):
    cands, build, _ = _family(X, GOOD)
    tuner = tune.Tuner(FP, FakeTimer({"ref": 2.0, "slow": 3.0, "fast": 1.0}), budget=1e9,
                       min_rounds=5, max_rounds=10)
    assert tuner.choose("rowsum", "float32", X.shape, cands, build).name == "fast"
    assert tuner.last_report["rounds"] == 1          # every sample of fast beats all others'
    tuner = tune.Tuner(FP, FakeTimer({"ref": 3.0, "slow": 2.5, "fast": 1.0}), budget=1e9,
                       min_rounds=5, max_rounds=10)
    assert tuner.choose("rowsum", "float32", (500, 40), cands, build).name == "fast"
    assert tuner.last_report["rounds"] == 0          # one sample each, but over twice as fast
    tuner = tune.Tuner(FP, FakeTimer({"ref": 1.1, "slow": 1.05, "fast": 1.0}), budget=1e9,
                       min_rounds=3, max_rounds=6)
    assert tuner.choose("rowsum", "float32", (200, 40), cands, build).name == "fast"
    assert tuner.last_report["rounds"] == 6          # close: measured to the end


def test_slow_tuning_says_so_once_on_stderr(cache_path, capsys):
    cands, build, _ = _family(X, GOOD)
    cost = {"ref": 3e-3, "slow": 5e-3, "fast": 1e-3}
    tune.Tuner(FP, FakeTimer(cost)).choose("rowsum", "float32", X.shape, cands, build)
    assert capsys.readouterr().err == ""             # a quick tuning run: nothing to say
    tuner = tune.Tuner(FP, FakeTimer(cost), notice_after=0.0)     # every run counts as slow
    tuner.choose("rowsum", "float64", (60, 40), cands, build)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ruda: tuning rowsum for float64 64x64 on cpu test-device")
    for part in ("once per device and shape bucket", f"cached in {cache_path}", "RUDA_TUNE=off skips",
                 "RUDA_TUNE_BUDGET=<seconds> caps it"):
        assert part in err, err
    tuner.choose("rowsum", "float64", (60, 40), cands, build)      # remembered: no tuning, no notice
    tune.Tuner(FP, FakeTimer(cost), notice_after=0.0).choose("rowsum", "float64", (60, 40), cands, build)
    assert capsys.readouterr().err == ""             # answered from the cache file
    tune.Tuner(FP, FakeTimer(cost), notice_after=None).choose("rowsum", "int64", (60, 40), cands, build)
    assert capsys.readouterr().err == ""             # notices off


def test_host_timer_real_clock(cache_path):
    syncs = []
    timer = tune.HostTimer(sync=lambda: syncs.append(1))
    x = np.random.default_rng(1).standard_normal((200, 300))
    impls = {"ref": lambda x: x.sum(axis=1),
             "loop": lambda x: np.array([sum(r.tolist()) for r in x])}     # far slower
    cands, build, _ = _family(x, impls)
    tuner = tune.Tuner(FP, timer, budget=0.5)
    assert tuner.choose("rowsum", "float64", x.shape, cands, build).name == "ref"
    rep = tuner.last_report
    loop = rep["median_s"].get("loop", rep["slow_first_call_s"].get("loop"))
    assert rep["median_s"]["ref"] < loop and syncs


def test_cuda_event_timer_protocol(monkeypatch):
    """CudaEventTimer against tests/_fake_cupy's events (no GPU on CI): 2.5 ms per logged step."""
    cp = _fake_cupy.install(monkeypatch)
    log, stream = cp.cuda.log, cp.cuda.get_current_stream()
    from ruda.backends.cuda._timer import CudaEventTimer, tuning_timer
    assert isinstance(tuning_timer(), CudaEventTimer) and isinstance(tuning_timer(), tune.Timer)
    timer = CudaEventTimer()
    secs = timer.measure(lambda: log.append(("call",)), 3)
    assert [e[0] for e in log] == ["record", "call", "call", "call", "record", "sync"]
    assert log[0][1] is stream and secs == pytest.approx(2.5 * 4 * 1e-3)


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


# ---------------------------------------------------------------------------------------
# WGSL matmul generator (ruda.runtime.kernels.matmul_wgsl), checked on a WebGPU adapter
# (lavapipe on CI) with raw wgpu-py, and tuned through the tuner with timestamp queries.
from ruda.runtime.kernels import matmul_wgsl as mm  # noqa: E402


def test_matmul_wgsl_candidates_and_source():
    cands = mm.candidates()
    assert cands[0] == mm.MatmulParams(16, 16, 16, 1, 1, 1)
    assert len({c.name for c in cands}) == len(cands) > 5
    for c in cands:
        assert c.shared_bytes <= 16384 and c.invocations <= 256
        src = mm.generate(c)
        assert f"@workgroup_size({c.workgroup_size[0]}, {c.workgroup_size[1]}, 1)" in src
        assert src.count("workgroupBarrier()") == 2
        assert mm.MatmulParams.from_dict(json.loads(json.dumps(c.as_dict()))) == c
    assert all(c.invocations <= 64 for c in mm.candidates(max_invocations=64))
    assert any(c.shared_bytes == 32768 for c in mm.candidates(max_shared_bytes=32768))
    h = mm.candidates("f16")[3]
    assert h.dtype == "f16" and "enable f16;" in mm.generate(h) and "f32(ra0[0])" in mm.generate(h)
    assert len(mm.pack_params(3, 4, 5)) == 64
    v4 = mm.MatmulParams(64, 64, 16, 4, 4, 4)
    assert mm.applicable(v4, 64, 96, 80) and not mm.applicable(v4, 64, 95, 80)
    assert not mm.applicable(v4, 64, 96, 80, off_a=2) and mm.applicable(cands[0], 3, 5, 7)
    assert mm.grid(v4, 65, 96, 3) == (2, 2, 3)
    with pytest.raises(ValueError):
        mm.MatmulParams(64, 64, 16, 3, 4, 1)
    with pytest.raises(ValueError):
        mm.MatmulParams(64, 64, 16, 4, 4, 3)
    with pytest.raises(ValueError):
        mm.MatmulParams(64, 64, 16, 2, 4, 4, svec=4)
    s4 = mm.MatmulParams(128, 128, 8, 8, 8, 4, svec=4)
    assert s4 in cands and s4.name.endswith("_s4") and "array<vec4<f32>, 256>" in mm.generate(s4)
    pf = mm.MatmulParams(128, 128, 8, 8, 8, 4, svec=4, pf=True)
    assert pf in cands and pf.name.endswith("_s4_pf") and "k0 + 8u" in mm.generate(pf)


def _wgpu_device():
    wgpu = pytest.importorskip("wgpu")
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no WebGPU adapter: {e}")
    if adapter is None:
        pytest.skip("no WebGPU adapter")
    feats = [f for f in ("shader-f16", "timestamp-query") if f in adapter.features]
    return wgpu, adapter.request_device_sync(required_features=feats)


@pytest.fixture(scope="module")
def gpu():
    return _wgpu_device()


_PIPES = {}


def _mm_run(gpu, p, A, B, timestamp_writes=None):
    """C = A @ B with candidate p; A (M,K) or (b,M,K), B (K,N) or (b,K,N); 2-D operands broadcast."""
    wgpu, dev = gpu
    if p not in _PIPES:
        mod = dev.create_shader_module(code=mm.generate(p))
        _PIPES[p] = dev.create_compute_pipeline(layout="auto", compute={"module": mod,
                                                                         "entry_point": "main"})
    pipe = _PIPES[p]
    M, K = A.shape[-2:]
    N = B.shape[-1]
    batch = max(A.shape[0] if A.ndim == 3 else 1, B.shape[0] if B.ndim == 3 else 1)
    U = wgpu.BufferUsage
    ba = dev.create_buffer_with_data(data=A.tobytes(), usage=U.STORAGE)
    bb = dev.create_buffer_with_data(data=B.tobytes(), usage=U.STORAGE)
    bc = dev.create_buffer(size=batch * M * N * A.itemsize, usage=U.STORAGE | U.COPY_SRC)
    bu = dev.create_buffer_with_data(data=mm.pack_params(
        M, N, K, batch, stride_a=0 if A.ndim == 2 else None, stride_b=0 if B.ndim == 2 else None),
        usage=U.UNIFORM)
    bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": i, "resource": {"buffer": b, "offset": 0, "size": b.size}}
        for i, b in enumerate((bu, ba, bb, bc))])
    enc = dev.create_command_encoder()
    cp = enc.begin_compute_pass(timestamp_writes=timestamp_writes)
    cp.set_pipeline(pipe)
    cp.set_bind_group(0, bg)
    cp.dispatch_workgroups(*mm.grid(p, M, N, batch))
    cp.end()
    dev.queue.submit([enc.finish()])
    out = np.frombuffer(dev.queue.read_buffer(bc), dtype=A.dtype)
    return out.reshape((batch, M, N) if batch > 1 else (M, N))


_SOME = [mm.MatmulParams(16, 16, 16, 1, 1, 1), mm.MatmulParams(32, 32, 16, 2, 2, 1),
         mm.MatmulParams(64, 64, 16, 4, 4, 4), mm.MatmulParams(128, 64, 16, 8, 4, 4),
         mm.MatmulParams(64, 64, 16, 4, 4, 2), mm.MatmulParams(64, 64, 16, 4, 4, 4, svec=4),
         mm.MatmulParams(128, 128, 8, 8, 8, 1, svec=4),
         mm.MatmulParams(128, 128, 8, 8, 8, 4, svec=4, pf=True)]


@pytest.mark.parametrize("mnk", [(64, 96, 80), (33, 47, 29), (1, 1, 1), (130, 20, 4)])
def test_matmul_wgsl_matches_numpy(gpu, mnk, rng):
    M, N, K = mnk
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    ran = 0
    for p in _SOME:
        if not mm.applicable(p, M, N, K):
            continue
        C = _mm_run(gpu, p, A, B)
        assert tune.compare(C, ref, 1e-5, 0) is None, p.name
        ran += 1
    assert ran >= 2


def test_matmul_wgsl_batched_broadcast(gpu, rng):
    A = rng.standard_normal((3, 20, 36)).astype(np.float32)
    B = rng.standard_normal((36, 44)).astype(np.float32)           # shared by the batch
    big = [p for p in mm.candidates(max_shared_bytes=gpu[1].limits["max-compute-workgroup-storage-size"])
           if p.shared_bytes > 16384][:1]                          # where the device allows it
    for p in (_SOME[1], _SOME[2], _SOME[5], _SOME[6], _SOME[7], *big):
        C = _mm_run(gpu, p, A, B)
        assert C.shape == (3, 20, 44)
        assert tune.compare(C, A.astype(np.float64) @ B, 1e-5, 0) is None


def test_matmul_wgsl_f16(gpu, rng):
    wgpu, dev = gpu
    if "shader-f16" not in dev.features:
        pytest.skip("adapter without shader-f16")
    A = rng.standard_normal((40, 64)).astype(np.float16)
    B = rng.standard_normal((64, 24)).astype(np.float16)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    for p in (mm.MatmulParams(16, 16, 16, 1, 1, 1, "f16"), mm.MatmulParams(32, 32, 16, 2, 2, 4, "f16"),
              mm.MatmulParams(64, 64, 16, 4, 4, 4, "f16", svec=4, pf=True)):
        C = _mm_run(gpu, p, A, B)
        assert C.dtype == np.float16 and tune.compare(C, ref, 2e-3, 0) is None, p.name


def test_tuner_picks_a_correct_wgsl_matmul(gpu, cache_path, rng):
    wgpu, dev = gpu
    M, N, K = 64, 96, 80
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    from ruda.backends.wgpu import _timer
    timer = _timer.tuning_timer(dev, lambda: dev.queue.on_submitted_work_done_sync())
    assert isinstance(timer, _timer.WgpuTimestampTimer if _timer.WgpuTimestampTimer.supported(dev)
                      else tune.HostTimer)
    cands = [tune.Candidate(p.name, p.as_dict()) for p in (_SOME[0], _SOME[2], _SOME[5])]
    # a deliberately broken candidate (drops the last k-tile) must be rejected
    broken = mm.MatmulParams(32, 32, 16, 2, 2, 1)

    def build(c):
        if c.name == "broken":
            return lambda timestamp_writes=None: _mm_run(gpu, broken, A[:, :64], B[:64],
                                                         timestamp_writes)
        p = mm.MatmulParams.from_dict(c.params)
        return lambda timestamp_writes=None: _mm_run(gpu, p, A, B, timestamp_writes)
    tuner = tune.Tuner(tune.Fingerprint("wgpu", dev.adapter.info["device"], "test"), timer,
                       budget=1.0, max_rounds=4)
    choice = tuner.choose("matmul", "float32", (M, N, K), cands + [tune.Candidate("broken")], build)
    rep = tuner.last_report
    assert "broken" in rep["rejected"] and choice.name != "broken"
    timed = dict(rep["median_s"], **rep["slow_first_call_s"])
    assert set(timed) == {c.name for c in cands} and cands[0].name in rep["median_s"]
    assert all(t > 0 for t in timed.values())
    C = _mm_run(gpu, mm.MatmulParams.from_dict(choice.params), A, B)
    assert tune.compare(C, A.astype(np.float64) @ B, 1e-5, 0) is None


def test_first_wgpu_matmul_that_tunes_says_so(wgpu_device, tmp_path, monkeypatch, capsys, rng):
    """ruda's wgpu matmul through the tuner: a slow tuning run (here: any, the threshold is 0)
    names the op, dtype, bucket, device, cache file and the way to skip it; then it is cached."""
    import ruda as xp
    from ruda.runtime.tune import _tuner
    monkeypatch.setattr(_tuner, "NOTICE_AFTER_S", 0.0)
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(tmp_path / "tune.json"))
    monkeypatch.setenv("RUDA_TUNE", "on")
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "0.05")
    a = rng.standard_normal((40, 70)).astype(np.float32)
    b = rng.standard_normal((70, 50)).astype(np.float32)
    x, y = xp.asarray(a, device=wgpu_device), xp.asarray(b, device=wgpu_device)
    got = np.asarray((x @ y).to_device("cpu"))
    assert tune.compare(got, a.astype(np.float64) @ b, 1e-5, 0) is None
    err = capsys.readouterr().err
    assert err.count("ruda: tuning matmul for float32 64x64x128 on wgpu ") == 1, err
    assert f"cached in {tmp_path / 'tune.json'}" in err and "RUDA_TUNE=off skips tuning" in err
    assert (tmp_path / "tune.json").exists()
    np.asarray((x @ y[:, :20]).to_device("cpu"))      # another bucket (64x32x128): said once more
    assert capsys.readouterr().err.count("ruda: tuning matmul") == 1
    np.asarray((x @ y).to_device("cpu"))              # a tuned bucket: silent
    assert capsys.readouterr().err == ""



def test_wgpu_conv_tile_is_tuned(wgpu_device, tmp_path, monkeypatch, capsys, rng):
    """ruda.nn.conv2d on wgpu chooses its implicit GEMM's tile through the tuner (here for any
    size: the threshold is 0), each candidate checked against the reference tile's output; the
    choice is cached per shape bucket and the result matches a float64 reference."""
    import ruda as xp
    import ruda.nn as nn
    from ruda.backends.wgpu import _nn_conv
    from ruda.runtime.kernels import conv_wgsl
    from ruda.runtime.tune import _tuner
    monkeypatch.setattr(_nn_conv, "TUNE_MIN", 0)
    monkeypatch.setattr(_tuner, "NOTICE_AFTER_S", 0.0)
    monkeypatch.setenv("RUDA_TUNE_CACHE", str(tmp_path / "tune.json"))
    monkeypatch.setenv("RUDA_TUNE", "on")
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "0.05")
    x = rng.standard_normal((2, 20, 9, 11)).astype(np.float32)
    w = rng.standard_normal((40, 20, 3, 3)).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    xp_ = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp_, (3, 3), axis=(2, 3))
    want = np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64)) + b[:, None, None]
    args = [xp.asarray(a, device=wgpu_device) for a in (x, w, b)]
    got = np.asarray(nn.conv2d(*args, padding=1).to_device("cpu"))
    assert got.dtype == np.float32
    assert tune.compare(got, want, 1e-5, 0) is None
    assert capsys.readouterr().err.count("ruda: tuning conv for float32 256x64x256 on wgpu ") == 1
    chosen = [t for k, t in wgpu_device.backend.ctx.ext["conv"].items() if k[2] == "256x64x256"]
    assert len(chosen) == 1 and chosen[0] in conv_wgsl.TILES
    assert "256x64x256" in (tmp_path / "tune.json").read_text()
    got = np.asarray(nn.conv2d(*args, padding=1).to_device("cpu"))     # the cached choice
    assert tune.compare(got, want, 1e-5, 0) is None and capsys.readouterr().err == ""

def test_tuner_needs_a_timer():
    with pytest.raises(TypeError, match=r"ruda\.runtime\.tune\.Tuner: timer must have a measure"):
        tune.Tuner(FP, object())
    assert isinstance(tune.HostTimer(), tune.Timer) and not isinstance(object(), tune.Timer)
