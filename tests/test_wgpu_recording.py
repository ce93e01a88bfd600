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
