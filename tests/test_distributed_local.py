"""ruda.distributed in this process (world size 1, MPI singleton): argument errors,
every collective and dtype against NumPy, handles, the pool and the launcher's command."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py")

import ruda as xp  # noqa: E402
import ruda.distributed as dist  # noqa: E402
from ruda.distributed import _pool, run  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "distributed_scripts"))
import cases as C  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def world():
    dist.init()
    assert (dist.rank(), dist.world_size()) == (0, 1)
    yield
    dist.finalize()         # stop the watchdog and finalize MPI before other test modules run
    assert not dist.is_initialized()


def test_uninitialized_call_names_init():
    code = "import ruda.distributed as d; d.all_reduce(None)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "ruda.distributed.all_reduce: call ruda.distributed.init() first" in p.stderr


@pytest.mark.parametrize("call, exc, words", [
    (lambda: dist.all_reduce(np.ones(3)), TypeError, "all_reduce: x must be a ruda.Array; got ndarray"),
    (lambda: dist.all_reduce(xp.ones(3), op="avg"), ValueError, "all_reduce: op must be one of"),
    (lambda: dist.all_reduce(xp.ones(3, dtype=xp.bool), op="sum"), TypeError, "op='sum' needs a numeric dtype; got bool"),
    (lambda: dist.all_reduce(xp.ones(3, dtype=xp.complex64), op="max"), TypeError, "op='max' needs a real numeric dtype; got complex64"),
    (lambda: dist.reduce_scatter(xp.ones(3, dtype=xp.int32), op="mean"), TypeError, "reduce_scatter: op='mean' needs a floating-point dtype; got int32"),
    (lambda: dist.reduce(xp.ones(3), root=1), ValueError, "reduce: root must be a rank in [0, 1); got 1"),
    (lambda: dist.gather(xp.ones(3), root=0.0), TypeError, "gather: root must be an int rank; got float"),
    (lambda: dist.all_gather(xp.ones((2, 3)), axis=2), IndexError, "all_gather: axis=2 is out of bounds for an array of 2 dimensions"),
    (lambda: dist.all_gather(xp.ones((2, 3)), axis=None), TypeError, "all_gather: axis must be an integer; got NoneType"),
    (lambda: dist.scatter(xp.ones((2, 3)), axis=None), TypeError, "scatter: axis must be an integer; got NoneType"),
    (lambda: dist.scatter(xp.asarray(1.0)), ValueError, "scatter: x must have at least one dimension"),
    (lambda: dist.send(xp.ones(2), 3), ValueError, "send: dst must be a rank in [0, 1); got 3"),
    (lambda: dist.recv(-1), ValueError, "recv: src must be a rank in [0, 1); got -1"),
    (lambda: dist.broadcast(None, root=0), ValueError, "broadcast: the root rank 0 passed no array"),
])
def test_bad_arguments(call, exc, words):
    with pytest.raises(exc, match=None) as info:
        call()
    assert words in str(info.value) and "ruda.distributed." in str(info.value)


def test_init_rejects_unknown_backend():
    with pytest.raises(ValueError, match="backend must be None, 'mpi' or 'nccl'; got 'gloo'"):
        dist.init(backend="gloo")


@pytest.mark.parametrize("name", C.DTYPES)
def test_world_one_matches_numpy(name):
    a = C.make("local", name, 0)
    x = xp.asarray(a)
    outs = [dist.all_reduce(x, op=op) for op in C.valid_ops(name)]
    outs += [dist.reduce(x, op=C.valid_ops(name)[0]), dist.broadcast(x),
             dist.all_to_all(x, axis=1), dist.scatter(x, axis=1)]
    if name != "bool":
        outs.append(dist.reduce_scatter(x, op="sum"))
    for y in outs:
        assert y.dtype == x.dtype and y.shape == a.shape and y.device == x.device
        f = np.float32 if name == "bfloat16" else None
        np.testing.assert_array_equal(np.asarray(y).astype(f) if f else np.asarray(y),
                                      a.astype(f) if f else a)
    g = dist.all_gather(x, axis=1)
    np.testing.assert_array_equal(np.asarray(g).view(np.uint8), a.view(np.uint8))


def test_results_are_new_arrays():
    a = np.arange(6.0)
    x = xp.asarray(a)
    for y in (dist.all_reduce(x), dist.broadcast(x), dist.all_gather(x), dist.scatter(x)):
        assert not np.shares_memory(np.asarray(y), a)


@pytest.mark.parametrize("shape", [(2,) + (1,) * 12, (1,) * 12 + (2,), (1,) * 30 + (2, 3)])
def test_arrays_of_many_dimensions_keep_their_shape(shape):
    """A rank rebuilds the root's or sender's shape from its record: every dimension (the
    thirteenth and later were dropped)."""
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = xp.asarray(a)
    for y in (dist.broadcast(x), dist.scatter(x), dist.all_reduce(x), dist.all_gather(x)):
        assert y.shape == shape
        np.testing.assert_array_equal(np.asarray(y), a)
    s = dist.send(x, 0, async_op=True)
    y = dist.recv(0)
    s.wait()
    assert y.shape == shape
    np.testing.assert_array_equal(np.asarray(y), a)


def test_async_handles_and_p2p_to_self():
    x = xp.asarray(np.arange(8, dtype=np.int16).reshape(2, 4))
    work = dist.all_gather(x, axis=1, async_op=True)
    assert isinstance(work, dist.Work)
    np.testing.assert_array_equal(np.asarray(work.wait()), np.asarray(x))
    assert work.is_completed()
    r = dist.recv(0, async_op=True)
    s = dist.send(x, 0, async_op=True)
    y = r.wait()
    s.wait()
    assert y.dtype == xp.int16
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
    assert dist.barrier(async_op=True).wait() is None


@pytest.mark.skipif("wgpu" not in [d.kind for d in xp.devices()], reason="no wgpu device")
def test_wgpu_arrays_are_staged_and_come_back_on_wgpu():
    x = xp.asarray(np.arange(4, dtype=np.float32), device="wgpu")
    y = dist.all_reduce(x, op="max")
    assert y.device == x.device
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), np.arange(4, dtype=np.float32))


def test_pool_reuses_only_free_blocks():
    a = _pool.empty((1 << 18,), np.float32)
    b = _pool.empty((1 << 18,), np.float32)
    assert not np.shares_memory(a, b)
    base = id(a.base)
    del a
    c = _pool.empty((1 << 18,), np.float32)
    assert id(c.base) == base and not np.shares_memory(b, c)


def test_launcher_command_passes_hosts_and_hostfile(tmp_path):
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'HYDRA build details'\n")
    fake.chmod(0o755)
    cmd = run.command(4, "train.py", ["--lr", "0.1"], hosts="a,b", hostfile="hf",
                      mpiexec=str(fake))
    assert cmd == [str(fake), "-n", "4", "-hosts", "a,b", "-f", "hf", sys.executable, "-m",
                   "ruda.distributed._bootstrap", "train.py", "--lr", "0.1"]


def test_launcher_finds_mpiexec_from_env(monkeypatch):
    monkeypatch.setenv("RUDA_MPIEXEC", "/opt/mpi/bin/mpiexec")
    assert run.find_mpiexec() == "/opt/mpi/bin/mpiexec"
    monkeypatch.delenv("RUDA_MPIEXEC")
    assert os.path.basename(run.find_mpiexec()) in ("mpiexec", "mpirun")


@pytest.mark.parametrize("status", [0, 137])
def test_launcher_names_a_vanished_rank_whatever_mpiexec_returns(tmp_path, monkeypatch, capsys,
                                                                 status):
    """mpiexec may end a job whose rank vanished with 0 or with a signal's status; the
    launcher names the rank either way and never returns 0."""
    fake = tmp_path / "mpiexec"
    fake.write_text('#!/bin/sh\n[ "$1" = --version ] && exit 0\ncd "$RUDA_DIST_STATUS_DIR"\n'
                    'echo 999999999 > 0.pid; touch 0.init 0.end\n'
                    f'echo 999999998 > 1.pid; touch 1.init\nexit {status}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("RUDA_MPIEXEC", str(fake))
    rc = run.main(["-n", "2", "script.py"])
    assert rc == (status or 1)
    assert "rank(s) [1] ended without a normal exit" in capsys.readouterr().err


def test_launcher_reports_the_failed_rank_first_with_its_status(tmp_path, monkeypatch, capsys):
    """Failure reports (the bootstrap's JSON) come out oldest first, with the first one's exit
    status, whatever mpiexec returned; ranks torn down with the job are not blamed."""
    import json
    import time
    folder = tmp_path / "status"
    folder.mkdir()
    (folder / "1.failed").write_text(json.dumps({"status": 3, "text": "Traceback\nKeyError: 'w'"}))
    (folder / "0.failed").write_text(json.dumps({"status": 1, "text": "RuntimeError: later"}))
    now = time.time()
    os.utime(folder / "1.failed", (now - 5, now - 5))
    for r in (0, 1):
        (folder / f"{r}.pid").write_text("999999999")
    assert run.report(str(folder), 9) == 3
    err = capsys.readouterr().err
    assert err.index("rank 1 failed (exit status 3):\nTraceback\nKeyError: 'w'") < \
        err.index("rank 0 failed (exit status 1):\nRuntimeError: later")
    assert "ended without a normal exit" not in err


@pytest.mark.parametrize("call, what", [
    ("fail('Traceback\\nValueError: x', 4)", "failed"),
    ("timed_out('rank 2: init did not complete')", "timeout"),
])
def test_failing_before_mpi_dies_by_sigkill_and_tells_the_launcher(tmp_path, call, what):
    """Before MPI_Init a rank can only end the job by dying from a signal (mpiexec then
    tears the job down); it leaves its report for the launcher first."""
    import json
    code = f"from ruda.distributed import _failfast\n_failfast.{call}\nprint('survived')"
    env = {**os.environ, "RUDA_DIST_STATUS_DIR": str(tmp_path), "PMI_RANK": "2"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == -9 and "survived" not in p.stdout
    assert "mpi4py" not in p.stderr
    text = (tmp_path / f"2.{what}").read_text()
    if what == "failed":
        assert json.loads(text) == {"status": 4, "text": "Traceback\nValueError: x"}
        assert "[rank 2] Traceback\n[rank 2] ValueError: x\n" in p.stderr
    else:
        assert text == "rank 2: init did not complete"


def test_op_none_and_init_after_finalize_are_clear_errors():
    """op=None is a bad op on every path (it was a bare KeyError off the host fast path), and
    init() after finalize() says MPI cannot start twice instead of MPICH's abort."""
    code = ("import ruda as xp, ruda.distributed as d\nd.init()\n"
            "for dev in xp.__array_namespace_info__().devices():\n"
            "    for kw in ({}, {'async_op': True}):\n"
            "        try:\n            d.all_reduce(xp.ones(3, device=dev), op=None, **kw)\n"
            "        except ValueError as e:\n            print('OP', e)\n"
            "d.finalize()\ntry:\n    d.init()\nexcept RuntimeError as e:\n    print('INIT', e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    n = len(xp.__array_namespace_info__().devices())
    assert p.stdout.count("OP ruda.distributed.all_reduce: op must be one of") == 2 * n, p.stdout + p.stderr
    assert "INIT ruda.distributed.init: finalize() ended MPI in this process" in p.stdout, p.stderr


def test_ranks_sharing_a_gpu_get_a_clear_error():
    """NCCL takes one GPU a rank: two ranks on one (host, PCI bus) raise, naming both (NCCL's own
    error is a bare NCCL_ERROR_INVALID_USAGE); the same bus on two hosts is two GPUs."""
    from ruda.distributed import _route
    _route.one_gpu_each("all_reduce", [("a", "0000:01:00.0", 0), ("b", "0000:01:00.0", 0),
                                       ("a", "0000:02:00.0", 1)])
    with pytest.raises(ValueError, match=r"^ruda.distributed.all_reduce: NCCL needs a GPU of its "
                                         r"own for each rank; ranks 0 and 2 both use 'cuda:1' on a "):
        _route.one_gpu_each("all_reduce", [("a", "0000:01:00.0", 1), ("b", "0000:01:00.0", 0),
                                           ("a", "0000:01:00.0", 1)])


def test_nccl_backend_without_cupy_raises_import_error():
    try:
        from cupy.cuda import nccl  # noqa: F401
        pytest.skip("CuPy with NCCL is installed here")
    except Exception:  # noqa: BLE001
        pass
    code = ("import ruda.distributed as d\ntry:\n    d.init(backend='nccl')\nexcept ImportError as e:\n"
            "    print('ERR', e)\nprint('INIT', d.is_initialized())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "ERR ruda.distributed.init: backend 'nccl' needs CuPy with NCCL" in p.stdout
    assert "INIT False" in p.stdout
