"""The host's threads: ruda's parallel kernels in a forked child (a ``multiprocessing`` pool on
Linux), the worker hand-off, and the parallel and serial Numba builds agreeing."""
import multiprocessing
import os
import threading

import numpy as np
import pytest

import ruda as xp
import ruda.nn as nn
from ruda.backends import _workers

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _work(seed):
    """Parallel host paths: depthwise and dense conv, softmax, rms_norm, ruda.random, sdpa."""
    g = xp.random.Generator(seed)
    x = g.normal(shape=(4, 32, 40, 40), dtype=xp.float32)
    dw = g.normal(shape=(32, 1, 3, 3), dtype=xp.float32)
    w = g.normal(shape=(16, 32, 3, 3), dtype=xp.float32)
    y = nn.conv2d(nn.conv2d(x, dw, padding=1, groups=32), w, padding=1)
    r = nn.rms_norm(nn.softmax(xp.reshape(y, (-1, 1600)), axis=-1), (1600,))
    q = g.normal(shape=(1, 4, 256, 64), dtype=xp.float32)
    a = nn.scaled_dot_product_attention(q, q, q, is_causal=True)
    return np.asarray(r), np.asarray(a)


def test_parallel_kernels_in_a_forked_pool():
    want = [_work(s) for s in (1, 2)]          # the parent uses every path first
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        got = pool.map_async(_work, (1, 2)).get(timeout=120)   # a hang fails, not waits
    for (r0, a0), (r1, a1) in zip(want, got):
        np.testing.assert_array_equal(r1, r0)
        np.testing.assert_allclose(a1, a0, rtol=1e-6, atol=1e-6)


def test_a_forked_child_starts_its_own_workers():
    _workers.run(lambda i: None, 4)            # the parent's workers exist
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                # the child: every task runs, on new threads
        try:
            seen = []
            _workers.run(lambda i: seen.append((i, threading.get_ident())), 2 * _workers.THREADS)
            ok = sorted(i for i, _ in seen) == list(range(2 * _workers.THREADS)) and \
                _workers.forked
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    out = os.read(r, 1)
    os.waitpid(pid, 0)
    assert out == b"1"


def _use(kind):
    return float(xp.sum(xp.arange(4.0, device=kind)))


def test_a_forked_child_refuses_its_parents_wgpu_device():
    """The driver's state does not survive fork (a read in the child waited forever): after the
    parent opened wgpu, the child's wgpu raises naming the way out; its cpu work goes on."""
    try:
        xp.device("wgpu")
    except ValueError:
        pytest.skip("no wgpu adapter")
    assert _use("wgpu") == 6.0
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        with pytest.raises(RuntimeError, match=r"forked .*'spawn' or 'forkserver'"):
            pool.map_async(_use, ("wgpu",)).get(timeout=60)    # a hang fails, not waits
        assert pool.map_async(_use, ("cpu",)).get(timeout=60) == [6.0]
    assert _use("wgpu") == 6.0                                # the parent's device still works


def test_run_spreads_tasks_and_raises_the_first_error():
    seen = set()
    lock = threading.Lock()

    def task(i):
        with lock:
            seen.add(i)
    _workers.run(task, 11)
    assert seen == set(range(11))

    def bad(i):
        if i == 1:
            raise ValueError("task 1")
    with pytest.raises(ValueError, match="task 1"):
        _workers.run(bad, 3)
    _workers.run(task, 3)                       # still usable after an error


def test_run_inside_a_task_runs_in_turn():
    out = []
    _workers.run(lambda i: _workers.run(lambda j: out.append((i, j)), 2), 2)
    assert sorted(out) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_parallel_and_serial_builds_agree():
    from ruda.backends.host import _nn, _philox
    if _philox._words is None:
        pytest.skip("needs Numba")
    args = (10_001, np.uint64(3), np.uint64(0), np.uint64(7), np.uint64(0))
    a, b = np.empty(10_001, np.uint32), np.empty(10_001, np.uint32)
    _philox._words.parallel(*args, a)
    _philox._words.serial(*args, b)
    np.testing.assert_array_equal(a, b)
    x = np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32)
    w = np.ones(300, np.float32)
    o1, o2 = np.empty_like(x), np.empty_like(x)
    _nn._rms_rows.parallel(x, w, 1e-6, o1)
    _nn._rms_rows.serial(x, w, 1e-6, o2)
    np.testing.assert_array_equal(o1, o2)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(o1, want, rtol=1e-6)
    # the elementwise loops (silu, gelu through erf): a forked child's builds
    x = np.random.default_rng(3).standard_normal(70_001, dtype=np.float32)
    for kernel, args in ((_nn._act32_flat, (0, 0.0, 0.0)), (_nn._erf32_flat, (True,))):
        o1, o2 = np.empty_like(x), np.empty_like(x)
        kernel.parallel(x, o1, *args)
        kernel.serial(x, o2, *args)
        np.testing.assert_array_equal(o1, o2)


def test_one_thread_falls_back_to_the_serial_build(monkeypatch):
    """Where Numba's threading layer cannot take launches from several threads (its workqueue),
    the workers' slices run the serial build: the same values."""
    from ruda.backends.host import _jit
    x = xp.asarray(np.random.default_rng(3).standard_normal((700, 1000), dtype=np.float32))
    want = np.asarray(nn.silu(x))
    monkeypatch.setattr(_jit, "_LAYER_SAFE", [False])
    np.testing.assert_array_equal(np.asarray(nn.silu(x)), want)


def test_host_kernels_divide_as_numpy():
    """A division by zero in a host kernel gives inf or NaN, as NumPy, instead of raising."""
    pytest.importorskip("numba")
    from ruda.backends.host._jit import jit

    @jit()
    def divide(a, b):
        return a / b
    assert divide(1.0, 0.0) == np.inf and np.isnan(divide(0.0, 0.0))
