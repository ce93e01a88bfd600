"""ruda.distributed on 2 and 4 CPU ranks through the mpich wheel, against NumPy.

One mpiexec launch per world size runs every collective for every dtype plus the
cross-rank mismatch cases (tests/distributed_scripts/collectives.py); these tests
check what each rank got.  Two more launches check that a dead or hung rank ends
the job with an error within its timeout.
"""
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("mpi4py")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "distributed_scripts"))
import cases as C  # noqa: E402

SCRIPTS = os.path.join(os.path.dirname(__file__), "distributed_scripts")
WORLDS = (2, 4)
LAUNCH_TIMEOUT = 300


def launch(n, script, *args, env=None, timeout=LAUNCH_TIMEOUT):
    cmd = [sys.executable, "-m", "ruda.distributed.run", "-n", str(n),
           os.path.join(SCRIPTS, script), *args]
    e = {**os.environ, "RUDA_DIST_TIMEOUT": "60", **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"world{w}")
def ranks(request, tmp_path_factory):
    w = request.param
    out = tmp_path_factory.mktemp(f"dist{w}")
    proc = launch(w, "collectives.py", str(out))
    assert proc.returncode == 0, f"mpiexec failed:\n{proc.stdout}\n{proc.stderr}"
    reports = [pickle.load(open(out / f"rank{r}.pkl", "rb")) for r in range(w)]
    assert [d["world"] for d in reports] == [w] * w
    return reports


@pytest.mark.parametrize("name", C.DTYPES)
def test_collectives_match_numpy(ranks, name):
    w = len(ranks)
    for case, fn, kw in C.cases(name):
        for r, rep in enumerate(ranks):
            got = rep["results"][f"{case}|{name}"]
            want = C.expected(fn, kw, case, name, w, r)
            try:
                C.compare(got, want, name)
            except AssertionError as e:
                raise AssertionError(f"{case} on rank {r} of {w}: {e}") from None


def test_wgpu_arrays_are_staged_through_the_host(ranks):
    """Where a wgpu device exists, the worker also ran every case on wgpu arrays."""
    keys = [k for k in ranks[0]["results"] if k.startswith("wgpu:")]
    if not keys:
        pytest.skip("no wgpu device on this machine")
    w = len(ranks)
    for key in keys:
        case, name = key[len("wgpu:"):].split("|")
        fn, kw = next((f, k) for c, f, k in C.cases(name) if c == case)
        for r, rep in enumerate(ranks):
            try:
                C.compare(rep["results"][key], C.expected(fn, kw, case, name, w, r), name)
            except AssertionError as e:
                raise AssertionError(f"{key} on rank {r}: {e}") from None


def test_cpu_and_wgpu_ranks_reduce_together(ranks):
    """A blocking all_reduce with cpu arrays on some ranks and wgpu ones on the others (both
    host memory): every rank gets the result (the cpu ranks' hot path used to refuse)."""
    if "mixed-sum|float64" not in ranks[0]["results"]:
        pytest.skip("no wgpu device on this machine")
    w = len(ranks)
    for r, rep in enumerate(ranks):
        np.testing.assert_array_equal(rep["results"]["mixed-sum|float64"],
                                      [w, 2 * w, w * (w - 1) / 2])
        np.testing.assert_array_equal(rep["results"]["mixed-max|float64"], [1, 2, w - 1])


def test_receives_pair_with_messages_in_posting_order():
    """Each recv gets the payload its header announced, whichever handle is waited on first,
    beside blocking receives and a dropped handle (payloads once paired in wait order)."""
    proc = launch(2, "p2p_order.py")
    assert proc.returncode == 0, f"mpiexec failed:\n{proc.stdout}\n{proc.stderr}"
    line = next(ln for ln in proc.stdout.splitlines() if "GOT" in ln)
    assert line.split("GOT ", 1)[1] == str([("int64", [1, 1, 1]), ("int64", [2, 2, 2]),
                                             ("int32", [7, 7, 7]), ("float64", [0.0, 1.0, 2.0, 3.0, 4.0]),
                                             ("float64", [2.0])])


def test_dropped_handles_keep_their_buffers():
    """A non-blocking call's handle dropped without a wait must not free the buffers MPI is
    still using (a segfault or a bad read on the peer before)."""
    proc = launch(2, "dropped_handles.py")
    assert proc.returncode == 0, f"mpiexec failed:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.count("DROPPED OK") == 2


@pytest.fixture(scope="module")
def nccl_engine_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("nccl_engine")
    proc = launch(2, "nccl_engine_check.py", str(out))
    assert proc.returncode == 0, f"mpiexec failed:\n{proc.stdout}\n{proc.stderr}"
    return [pickle.load(open(out / f"rank{r}.pkl", "rb")) for r in range(2)]


@pytest.mark.parametrize("name", [n for n in C.DTYPES if n != "bfloat16"])
def test_nccl_engine_layout_with_host_stand_in(nccl_engine_ranks, name):
    """ruda's NCCL engine (pointers, offsets, counts, types, ops, groups) on 2 ranks, with
    CuPy/NCCL replaced by a host stand-in that performs each NCCL call with MPI."""
    w = len(nccl_engine_ranks)
    for case, fn, kw in C.engine_cases(name):
        for r, rep in enumerate(nccl_engine_ranks):
            want = C.expected(fn, kw, case, name, w, r)
            try:
                C.compare(rep["results"][f"{case}|{name}"], want, name)
            except AssertionError as e:
                raise AssertionError(f"{case} on rank {r}: {e}") from None


@pytest.mark.parametrize("key, exc, words", [
    ("shape", "ValueError", "disagree on shape"),
    ("dtype", "TypeError", "disagree on dtype"),
    ("op", "ValueError", "disagree on op"),
    ("root", "ValueError", "disagree on root"),
    ("collective", "RuntimeError", "disagree on which collective"),
    ("not-divisible", "ValueError", "must be divisible by the world size"),
    ("shape-pooled", "ValueError", "disagree on shape"),
])
def test_mismatch_raises_on_every_rank(ranks, key, exc, words):
    for rep in ranks:
        got = rep["errors"][key]
        assert got is not None, f"rank {rep['rank']} did not raise for {key}"
        assert got[0] == exc and words in got[1] and "ruda.distributed." in got[1], got


def test_pooled_outputs_stay_intact(ranks):
    for rep in ranks:
        assert rep["pooled"] == [True] * 4, rep["pooled"]


def test_usable_after_mismatch(ranks):
    w = len(ranks)
    for rep in ranks:
        np.testing.assert_array_equal(rep["after"], [sum(range(w))])


@pytest.mark.parametrize("mode, check", [("kill", "1"), ("exit", "1"), ("hang", "1"), ("hang", "0")])
def test_dead_rank_fails_within_timeout(mode, check):
    """A killed rank ends the job through mpiexec, one that exits (os._exit) through the
    launcher; a hung rank is caught by the watchdog (check=0 skips the agreement check, so it
    fires inside the data transfer)."""
    t0 = time.monotonic()
    env = {"RUDA_DIST_TIMEOUT": "3", "RUDA_DIST_CHECK": check}
    proc = launch(2, "dead_rank.py", mode, env=env, timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode != 0
    assert "returned without rank 1" not in proc.stdout
    assert took < 60, took
    if mode == "exit":      # MPICH's mpiexec ends the job with status 0 or a signal's (the
        # launcher names the rank either way); Open MPI's mpiexec reports the rank itself
        said = ("ended without a normal exit", "exiting improperly",
                "exited with non-zero status")
        assert any(s in proc.stderr for s in said), proc.stderr[-2000:]
    if mode == "hang":
        what = "all_reduce (agreement check)" if check == "1" else "all_reduce"
        assert f"rank 0: {what} did not complete within 3 s" in proc.stderr, proc.stderr[-2000:]


@pytest.mark.parametrize("mode, says", [
    ("raise-after-init", ["ValueError: rank one broke after init"]),
    ("raise-before-init", ["ValueError: rank one broke before init"]),
    ("exit-before-init", ["rank 1 ended its script without calling ruda.distributed.init() "
                          "while rank(s) [0] called it"]),
    ("status-after-init", ["fail_fast.py exited with status 3"]),
    ("end-after-init", ["the ranks disagree on which collective they call: rank 0 has "
                           "ruda.distributed.barrier, rank 1 has ruda.distributed.finalize"]),
])
def test_failing_rank_ends_the_job_at_once_and_is_named(mode, says):
    """Rank 1 fails (or ends early) while rank 0 waits for it: the job ends within seconds,
    not after RUDA_DIST_TIMEOUT (left at 600 s), and the launcher names rank 1 with its
    traceback or message and exits non-zero (with rank 1's status where it gave one)."""
    t0 = time.monotonic()
    proc = launch(2, "fail_fast.py", mode, env={"RUDA_DIST_TIMEOUT": "600"}, timeout=60)
    took = time.monotonic() - t0
    err = proc.stderr
    assert proc.returncode == (3 if mode == "status-after-init" else 1), err[-3000:]
    assert "got past the wait" not in proc.stdout
    assert "ruda.distributed.run: rank 1 failed" in err, err[-3000:]
    report = err[err.index("ruda.distributed.run: rank 1 failed"):]
    # the launcher's report is the guarantee: a rank's own [rank N] lines can be cut off when
    # mpiexec tears the job down before forwarding them
    for words in says:
        assert words in report, err[-3000:]
    if mode.startswith("raise"):
        assert 'fail_fast.py", line' in report and "Traceback (most recent call last)" in report
        assert "runpy" not in report and "_bootstrap" not in report
    assert took < 10, f"the job took {took:.1f} s"


def test_exception_after_init_ends_the_job_under_a_bare_mpiexec():
    """Without the launcher's bootstrap, init() installs the hook that ends the job."""
    from ruda.distributed import run
    cmd = [run.find_mpiexec(), "-n", "2", sys.executable, os.path.join(SCRIPTS, "fail_fast.py"),
           "raise-after-init"]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RUDA_DIST_TIMEOUT": "600"})
    took = time.monotonic() - t0
    assert proc.returncode != 0 and "got past the wait" not in proc.stdout
    assert "[rank 1] ValueError: rank one broke after init" in proc.stderr, proc.stderr[-3000:]
    assert took < 10, f"the job took {took:.1f} s"


def test_rank_vanishing_before_init_ends_the_job_at_once():
    t0 = time.monotonic()
    proc = launch(2, "fail_fast.py", "osexit-before-init", env={"RUDA_DIST_TIMEOUT": "600"},
                  timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode != 0
    assert "got past the wait" not in proc.stdout
    assert ("rank(s) [1] ended without a normal exit (killed or os._exit) while rank(s) [0] "
            "used ruda.distributed") in proc.stderr, proc.stderr[-3000:]
    assert took < 10, f"the job took {took:.1f} s"


@pytest.mark.parametrize("n", [1, 2])
def test_job_without_init_ends_normally(n):
    proc = launch(n, "fail_fast.py", "no-init", timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(proc.stdout.split("\n")[:-1]) == [f"rank {r} ran without ruda.distributed"
                                                     for r in range(n)]
    assert "ruda.distributed.run:" not in proc.stderr


class _CommunicatorTakingBytes:         # CuPy 14's signature
    def __init__(self, ndev, comm_id, rank):
        if not isinstance(comm_id, bytes):
            raise TypeError(f"Argument 'commId' has incorrect type (expected bytes, got "
                            f"{type(comm_id).__name__})")
        self.id = comm_id


class _CommunicatorTakingTuple:         # older CuPy: a tuple of 128 signed chars
    def __init__(self, ndev, comm_id, rank):
        if not isinstance(comm_id, tuple):
            raise TypeError(f"Argument 'commId' has incorrect type (expected tuple, got "
                            f"{type(comm_id).__name__})")
        assert all(-128 <= b <= 127 for b in comm_id)
        self.id = bytes(b & 0xFF for b in comm_id)


@pytest.mark.parametrize("uid", [tuple(range(-64, 64)), bytes(range(128, 256))])
@pytest.mark.parametrize("comm", [_CommunicatorTakingBytes, _CommunicatorTakingTuple])
def test_nccl_unique_id_reaches_either_cupy_signature(uid, comm):
    """The unique id travels as bytes whichever form get_unique_id gave, and the communicator
    gets bytes (CuPy >= 14) or the tuple of signed chars older CuPy wants, same 128 bytes."""
    from types import SimpleNamespace

    from ruda.distributed import _nccl
    as_bytes = _nccl._id_bytes(uid)
    assert isinstance(as_bytes, bytes) and len(as_bytes) == 128
    c = _nccl._communicator(SimpleNamespace(NcclCommunicator=comm), 2, as_bytes, 0)
    assert c.id == bytes(b & 0xFF for b in uid)


def test_data_parallel_example_matches_single_process(tmp_path):
    import json
    cmd = [sys.executable, "-m", "ruda.distributed.run", "-n", "4",
           os.path.join(os.path.dirname(__file__), "..", "examples", "data_parallel.py"),
           "--epochs", "2", "--path", str(tmp_path / "dp.ruda")]
    env = {**os.environ, "RUDA_DIST_TIMEOUT": "120"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["world"] == 4
    assert report["max_abs_diff_vs_single"] < 1e-5
    assert report["accuracy"] > 0.85 and abs(report["accuracy"] - report["single_process_accuracy"]) < 0.01
