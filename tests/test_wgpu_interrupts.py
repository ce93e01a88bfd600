"""wgpu runtime state through interrupts and failed submits, and the memory it caches.

A KeyboardInterrupt lands in whatever Python code runs next, wgpu-py's wrappers and cffi
callbacks included; each test raises one there (once) and checks that the queue, the pool and
the staging buffers stay consistent: the interrupt surfaces as such, recorded work still runs or
its results raise, and later results equal NumPy's (float64 oracle).  The pool and the staging
buffers stay bounded by the backend's own statistics (``memory_stats``), and ``empty_cache``
releases them.
"""
import sys

import numpy as np
import pytest

import ruda as xp
from strategies import assert_result

wgpu_mod = pytest.importorskip("wgpu")


@pytest.fixture
def dev(wgpu_device):
    return wgpu_device


def _once(real, before=True):
    """``real`` wrapped to raise KeyboardInterrupt on its first call: before calling it, or
    just after (the native call done, its wrapper interrupted)."""
    calls = []

    def wrapped(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1 and before:
            raise KeyboardInterrupt
        out = real(*args, **kwargs)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return out
    return wrapped


def _f(a):
    return np.exp(a.astype(np.float64)) / 3.0 + a


def test_an_interrupted_flush_keeps_the_recorded_work(dev, monkeypatch):
    """Interrupted while writing the metadata arena, a flush leaves its work recorded: the next
    sync submits it, and later ops of the same shapes bind slots that hold their words."""
    ctx = dev.backend.ctx
    rng = np.random.default_rng(1)
    a = rng.uniform(-3, 3, 1031).astype(np.float32)          # a shape new to the arena
    x = xp.asarray(a, device=dev)
    ctx.synchronize()
    ctx.arena_used = ctx.arena.size         # the arena full: the words below open a new generation
    y = xp.exp(x) / 3.0 + x
    assert ctx.arena_used > ctx.arena_written                 # new slots wait for the flush
    monkeypatch.setattr(ctx.queue, "write_buffer", _once(ctx.queue.write_buffer))
    with pytest.raises(KeyboardInterrupt):
        y.to_device("cpu")
    assert_result(y, _f(a), dtype=np.float32, loose=True)
    for _ in range(3):
        b = rng.uniform(-3, 3, 1031).astype(np.float32)
        z = xp.asarray(b, device=dev)
        assert_result(xp.exp(z) / 3.0 + z, _f(b), dtype=np.float32, loose=True)


@pytest.mark.parametrize("path", ["native", "public"])
def test_work_dropped_by_a_failed_submit_raises_when_read(dev, monkeypatch, path):
    """A submit interrupted once the encoder is taken drops the work: the arrays it was to write
    raise when read or used, never give what their buffers held; others and later ops are right."""
    ctx = dev.backend.ctx
    rng = np.random.default_rng(2)
    a = rng.uniform(-3, 3, 777).astype(np.float32)
    x = xp.asarray(a, device=dev)
    old = x * 2.0
    ctx.synchronize()
    if path == "public":
        monkeypatch.setattr(ctx, "nat", None)
        monkeypatch.setattr(ctx.queue, "submit", _once(ctx.queue.submit))
    elif ctx.nat is None:
        pytest.skip("this wgpu-py has no native entry points")
    else:
        from ruda.backends.wgpu import _native
        monkeypatch.setattr(_native.Native, "submit", _once(_native.Native.submit))
    y = xp.exp(x) / 3.0 + x
    with pytest.raises(KeyboardInterrupt):
        y.to_device("cpu")
    with pytest.raises(RuntimeError, match="lost"):
        y.to_device("cpu")
    with pytest.raises(RuntimeError, match="lost"):
        y + 1.0
    assert_result(old, a.astype(np.float64) * 2, dtype=np.float32)
    assert_result(xp.exp(x) / 3.0 + x, _f(a), dtype=np.float32, loose=True)


def test_an_interrupted_recycle_pools_no_buffer_twice(dev):
    """Interrupted while moving freed buffers to the pool, no buffer is pooled twice: arrays
    allocated afterwards each keep their own values."""
    mem = dev.backend.ctx.mem
    xs = [xp.asarray(np.full(100, i, np.float32), device=dev) + 0.0 for i in range(4)]
    del xs                                        # four buffers wait for the next submit

    class Pool(dict):
        calls = 0

        def setdefault(self, *args):
            Pool.calls += 1
            if Pool.calls == 3:
                raise KeyboardInterrupt
            return super().setdefault(*args)

    mem.pool = Pool(mem.pool)
    try:
        with pytest.raises(KeyboardInterrupt):
            float(xp.sum(xp.ones(3, device=dev)))     # a sync: submit, then recycle
        xp.ones(3, device=dev).to_device("cpu")       # recycled again at the next one
        pooled = [id(b) for bufs in mem.pool.values() for b in bufs]
        assert len(pooled) == len(set(pooled))
        arrs = [xp.asarray(np.full(100, i, np.float32), device=dev) for i in range(8)]
        for i, arr in enumerate(arrs):
            assert_result(arr, np.full(100, float(i)), dtype=np.float32)
    finally:
        mem.pool = dict(mem.pool)


def test_an_interrupt_after_a_pass_opens_leaves_no_locked_encoder(dev, monkeypatch):
    """Interrupted just after wgpu opened a compute pass (the pass opened after a submit), the
    queue holds no half-made encoder and pass: later work records and computes right."""
    from wgpu.backends.wgpu_native import _api
    a = np.arange(1, 9, dtype=np.float32)
    x = xp.asarray(a, device=dev)
    assert_result(x + 1.0, a.astype(np.float64) + 1, dtype=np.float32)
    monkeypatch.setattr(_api.GPUCommandEncoder, "begin_compute_pass",
                        _once(_api.GPUCommandEncoder.begin_compute_pass, before=False))
    with pytest.raises(KeyboardInterrupt):
        (x * 2.0).to_device("cpu")
    y = x * 3.0
    for _ in range(2):
        assert_result(y, a.astype(np.float64) * 3, dtype=np.float32)
    assert_result(x * 2.0, a.astype(np.float64) * 2, dtype=np.float32)


def test_an_interrupt_after_a_map_leaves_the_staging_buffer_unmapped(dev, monkeypatch):
    """Interrupted as a readback's map completes, the staging buffer is unmapped: the next
    readback copies into it (a mapped one aborted the process)."""
    from ruda.backends.wgpu import _transfers
    a = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    x = xp.asarray(a, device=dev)
    monkeypatch.setattr(_transfers.Transfers, "_map", _once(_transfers.Transfers._map, before=False))
    with pytest.raises(KeyboardInterrupt):
        (x * 2.0).to_device("cpu")
    assert_result(x + 1.0, a.astype(np.float64) + 1, dtype=np.float32)
    assert_result(x * 2.0, a.astype(np.float64) * 2, dtype=np.float32)


def test_an_interrupt_inside_a_wait_callback_surfaces(dev):
    """A KeyboardInterrupt raised in the callback that wgpu calls when submitted work is done
    (where the signal handler runs when Ctrl-C comes during the blocking poll) is raised by the
    readback, not lost in cffi (the wait then polled on and reported a lost device); the device
    stays usable."""
    ctx = dev.backend.ctx
    if ctx.nat is None:
        pytest.skip("this wgpu-py has no native entry points")
    a = np.random.default_rng(4).standard_normal(1000).astype(np.float32)
    x = xp.asarray(a, device=dev)
    fired = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "fired" and not fired:
            fired.append(1)
            raise KeyboardInterrupt
        return None

    y = x * 2.0
    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        with pytest.raises(KeyboardInterrupt):
            y.to_device("cpu")
    finally:
        sys.settrace(previous)
    assert fired
    assert_result(y, a.astype(np.float64) * 2, dtype=np.float32)
    assert_result(x + 1.0, a.astype(np.float64) + 1, dtype=np.float32)


def test_staging_and_pool_stay_bounded(dev, monkeypatch):
    """Readbacks of growing sizes keep one staging buffer a slot; a request finds a pooled buffer
    up to a quarter larger; arrays of ever new sizes made and freed one at a time leave at most
    POOL_KEEP bytes pooled (or what is in use, if more); ``empty_cache`` releases both."""
    from ruda.backends.wgpu import _alloc
    ctx = dev.backend.ctx
    mib = 1 << 20
    dev.backend.empty_cache()       # staging that earlier tests' readbacks left (up to 64 MiB a slot)
    a = np.random.default_rng(5).standard_normal(4 * mib).astype(np.float32)    # 16 MiB
    x = xp.asarray(a, device=dev)
    for m in range(1, 16, 2):
        n = m * mib // 4
        np.testing.assert_array_equal(np.asarray(x[:n].to_device("cpu")), a[:n])
        assert dev.backend.memory_stats()["staging"] <= 16 * mib
    del x
    big = xp.full(10 * mib // 4, 1.0, dtype=xp.float32, device=dev)
    buf = big._data.st.buffer
    del big
    ctx.synchronize()
    smaller = xp.full(9 * mib // 4, 2.0, dtype=xp.float32, device=dev)   # 9 MiB: the 10 MiB buffer
    assert smaller._data.st.buffer is buf
    assert_result(smaller[::1000] + 1.0, np.full(9 * mib // 4000 + 1, 3.0), dtype=np.float32)
    del smaller
    monkeypatch.setattr(_alloc, "POOL_KEEP", 6 * mib)
    dev.backend.empty_cache()
    for m in range(1, 14):
        y = xp.full(m * mib // 4, float(m), dtype=xp.float32, device=dev)
        assert_result(y[-3:], np.full(3, float(m)), dtype=np.float32)
        del y
        ctx.synchronize()
        s = dev.backend.memory_stats()
        assert s["pooled"] <= max(6 * mib, s["in_use"]), (m, s)
    dev.backend.empty_cache()
    assert dev.backend.memory_stats()["pooled"] == dev.backend.memory_stats()["staging"] == 0
    assert_result(xp.full(5, 4.0, dtype=xp.float32, device=dev) * 2.0, np.full(5, 8.0), dtype=np.float32)
