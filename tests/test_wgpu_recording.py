"""wgpu dispatch recording: elementwise plans replayed per operand views, metadata slots reused
within a submit, pipeline/bind-group changes only, and the public-API fallback of the native
pass calls.  The oracle is NumPy at the same precision (f32 add/mul are correctly rounded)."""
import numpy as np
import pytest

import ruda as xp
from conftest import to_numpy as _host


@pytest.fixture
def dev(wgpu_device):
    return wgpu_device


def _loop(dev, n):
    a = np.random.default_rng(0).standard_normal(1000, dtype=np.float32)
    z, ref = xp.asarray(a, device=dev), a
    for _ in range(n):
        z = z * 1.0001 + 0.5
        ref = ref * np.float32(1.0001) + np.float32(0.5)
    return _host(z), ref


@pytest.mark.parametrize("native", [True, False])
def test_replayed_loop_across_submits(dev, monkeypatch, native):
    """A loop longer than FLUSH_EVERY replays its plans across several submits, bit for bit."""
    ctx = dev.backend.ctx
    ctx.flush()
    if not native:
        monkeypatch.setattr(ctx, "_native", None)
    s0 = ctx.stats["submits"]
    got, ref = _loop(dev, 300)
    assert ctx.stats["submits"] - s0 >= 3
    np.testing.assert_array_equal(got, ref)


def test_plans_follow_views(dev):
    """Operands differing only in offset or strides get their own metadata."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(400, dtype=np.float32)
    b = rng.standard_normal(400, dtype=np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    for _ in range(2):              # the second round replays the first round's plans
        for off in range(5):
            np.testing.assert_array_equal(_host(x[off:off + 100] - y[:100]), a[off:off + 100] - b[:100])
            np.testing.assert_array_equal(_host(x[off::3] * 2.0), a[off::3] * np.float32(2.0))
            np.testing.assert_array_equal(_host(xp.exp(x[off:off + 50])), _host(xp.exp(x[off:off + 50])))
        np.testing.assert_array_equal(_host(xp.reshape(x, (20, 20)).T + y[:20]),
                                      a.reshape(20, 20).T + b[:20])


def test_small_arena_refills_slots(dev, monkeypatch):
    """When the metadata arena fills mid-loop, replayed launches write their words again."""
    ctx = dev.backend.ctx
    ctx.flush()
    monkeypatch.setattr(ctx, "arena", np.zeros(8 * ctx.align_words, np.uint32))
    s0 = ctx.stats["submits"]
    a = np.random.default_rng(2).standard_normal(64, dtype=np.float32)
    x = xp.asarray(a, device=dev)
    outs = []
    for _ in range(4):
        for off in range(12):       # 12 distinct launches per round, 8 arena slots
            outs.append((x[off:off + 40] + 1.0, a[off:off + 40] + np.float32(1.0)))
    assert ctx.stats["submits"] - s0 >= 4
    for got, ref in outs:
        np.testing.assert_array_equal(_host(got), ref)


def test_repeated_metadata_is_not_written_again(dev, monkeypatch):
    """A same-shaped op after a submit binds the arena slot written before: the submit carries
    no metadata write (each queue.write_buffer costs wgpu a staging buffer), and values hold."""
    ctx = dev.backend.ctx
    a = np.random.default_rng(5).standard_normal(1000, dtype=np.float32)
    b = np.random.default_rng(6).standard_normal(1000, dtype=np.float32)
    x, y = xp.asarray(a, device=dev), xp.asarray(b, device=dev)
    _host(x * y + 0.5)

    class Spy:
        def __init__(self, q):
            self.q, self.arena_writes = q, 0

        def write_buffer(self, buf, *args, **kw):
            self.arena_writes += buf is ctx.arena_buf
            return self.q.write_buffer(buf, *args, **kw)

        def __getattr__(self, name):
            return getattr(self.q, name)

    spy = Spy(ctx.queue)
    monkeypatch.setattr(ctx, "queue", spy)
    for _ in range(3):
        np.testing.assert_array_equal(_host(x * y + 0.5), a * b + np.float32(0.5))
    assert spy.arena_writes == 0
    np.testing.assert_array_equal(_host(x[3:] * y[3:] + 0.5), a[3:] * b[3:] + np.float32(0.5))
    assert spy.arena_writes >= 1      # new views: new metadata, written once


def test_interleaved_matmul_and_elementwise(dev):
    """matmul records through the same pass state: pipelines switch back and forth correctly."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 16)).astype(np.float32)
    x = xp.asarray(a, device=dev)
    z, ref = x, a
    for _ in range(5):
        z = (z @ x) * 0.25
        ref = (ref @ a) * np.float32(0.25)
    np.testing.assert_allclose(_host(z), ref, rtol=1e-4, atol=1e-5)


def test_unreplayable_op_still_correct(dev):
    """An op whose first call was not a single launch (empty output) stays on the general path."""
    x = xp.asarray(np.zeros((0, 3), np.float32), device=dev)
    for _ in range(3):
        assert (x + 1.0).shape == (0, 3)


def test_reduction_plans_replay_on_new_buffers(dev):
    """A reduction called again on same-shaped views replays its launches (a vec4 f32 sum: one
    pass, its partials in a temporary; an unaligned one: two) on the new buffers; aliased inputs
    are never replayed as distinct."""
    ctx = dev.backend.ctx
    rng = np.random.default_rng(8)
    for n in (70_001, 1000):
        arrays = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
        xs = [xp.asarray(a, device=dev) for a in arrays]
        for _ in range(2):
            for x, a in zip(xs, arrays):
                np.testing.assert_allclose(float(xp.sum(x)), a.sum(dtype=np.float64), rtol=1e-5, atol=1e-3)
                assert float(xp.max(x)) == a.max()
                assert float(xp.sum(x[1:])) == pytest.approx(a[1:].sum(dtype=np.float64), rel=1e-5, abs=1e-3)
        plans = [p for k, p in ctx.plans.items() if k[0] == "reduce" and (np.float32 == k[3]) and p]
        assert plans and any(len(p[1]) == 2 for p in plans)      # the unaligned two-pass sum
        if n >= 65536:
            assert any(len(p[1]) == 1 and len(p[0]) == 2 for p in plans)   # single pass: partials, out
    x, y = xs[0], xs[1]
    for u, v, ua, va in ((x, x, arrays[0], arrays[0]), (x, y, arrays[0], arrays[1]), (y, y, arrays[1], arrays[1])):
        np.testing.assert_allclose(float(xp.vecdot(u, v)), np.dot(ua.astype(np.float64), va), rtol=1e-4)


def test_element_reads_share_one_readback_until_a_write(dev):
    """Reading a small array element by element costs one readback; a write to that array
    recorded since (in-place update, slice assignment) makes the next read fetch again, a write
    to another array does not, and values always match NumPy."""
    ctx = dev.backend.ctx
    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    x = xp.asarray(a, device=dev)
    y = x * 2.0
    ya = a * np.float32(2.0)
    r0 = ctx.stats["readbacks"]
    got = [[(float(y[i, j]), float(x[i, j])) for j in range(5)] for i in range(6)]   # interleaved
    assert ctx.stats["readbacks"] - r0 == 2
    np.testing.assert_array_equal(np.array(got, np.float32), np.stack([ya, a], -1))
    z = x + 1.0                       # writes another storage: y's host copy stays good
    assert float(z[0, 0]) == a[0, 0] + np.float32(1.0) and float(y[5, 4]) == ya[5, 4]
    assert ctx.stats["readbacks"] - r0 == 3
    y[2, 3] = 7.5
    ya[2, 3] = 7.5
    assert float(y[2, 3]) == 7.5 and float(y[0, 0]) == ya[0, 0]
    y[1] = x[4]
    ya[1] = a[4]
    assert [float(y[1, j]) for j in range(5)] == list(ya[1])
    y += 1.0
    ya += np.float32(1.0)
    np.testing.assert_array_equal(np.array([[float(y[i, j]) for j in range(5)] for i in range(6)], np.float32), ya)
    big = xp.asarray(rng.standard_normal(20_000).astype(np.float32), device=dev)   # > 64 KiB: plain reads
    r0 = ctx.stats["readbacks"]
    assert float(big[123]) == float(np.asarray(big.to_device("cpu"))[123])
    assert ctx.stats["readbacks"] - r0 == 2


@pytest.mark.parametrize("two_pass", [False, True])
def test_single_pass_reductions_back_to_back(dev, monkeypatch, two_pass):
    """Vec4 full reductions with a 32-bit accumulator run in one pass: each workgroup stores its
    partial, counts itself done on a device counter, and the last one folds the partials and
    zeroes the counter.  Many of them recorded into one pass without a sync (so each launch
    finds the counter its predecessor left), on fresh random data, sizes with an n % 4 tail and
    vec4-aligned offsets, against NumPy in float64 (int: exact); the two-pass form alike."""
    from ruda.backends.wgpu import _base
    monkeypatch.setattr(_base, "SINGLE_PASS", not two_pass)
    ctx = dev.backend.ctx
    rng = np.random.default_rng(31 + two_pass)
    cases = []
    for n in (65_536, 65_541, 300_007, 1 << 20):
        f = rng.standard_normal(n + 8).astype(np.float32)
        i = rng.integers(-(1 << 20), 1 << 20, n + 8).astype(np.int32)
        u = rng.integers(0, 1 << 12, n + 8).astype(np.uint32)
        f[rng.integers(0, n)] = 40.0                 # a known maximum
        p = np.ones(n, np.float32)                   # a product exact in f32: 2**40 * 0.5**30
        at = rng.choice(n, 70, replace=False)
        p[at[:40]], p[at[40:]] = 2.0, 0.5
        cases.append((f, i, u, p, n))
    ctx.synchronize()
    d0 = ctx.stats["dispatches"]
    got = []
    for f, i, u, p, n in cases:
        xf, xi, xu, xpr = (xp.asarray(a, device=dev) for a in (f, i, u, p))
        for _ in range(2):                           # the second time from the plans
            got.append((xp.sum(xf[:n]), xp.max(xf[4:n + 4]), xp.min(xf[8:]), xp.sum(xi[:n], dtype=xp.int32),
                        xp.max(xi), xp.sum(xu[4:n + 4], dtype=xp.uint32), xp.prod(xpr)))
    if not two_pass:
        assert ctx.stats["dispatches"] - d0 <= len(got) * 7 * 2   # no second passes (uploads aside)
    for k, (f, i, u, p, n) in enumerate(cases):
        for r in got[2 * k:2 * k + 2]:
            s, mx, mn, si, mi, su, pr = (_host(v) for v in r)
            np.testing.assert_allclose(s, f[:n].sum(dtype=np.float64), rtol=1e-5, atol=1e-2)
            assert mx == f[4:n + 4].max() and mn == f[8:].min()
            assert int(si) == int(i[:n].sum(dtype=np.int64)) and int(mi) == int(i.max())
            assert int(su) == int(u[4:n + 4].sum(dtype=np.uint64)) % (1 << 32)
            assert pr == 1024.0
            assert (s.dtype, si.dtype, su.dtype, pr.dtype) == (np.float32, np.int32, np.uint32, np.float32)
