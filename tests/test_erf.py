"""``ruda.erf`` (an extension elementwise function) on every device against ``math.erf``.

Tolerances, in units in the last place of the exact result rounded to the dtype: float64 4 ulp
(measured: 0 on cpu, 1 on wgpu); float32 3 ulp where the namespace ops compute it (measured 2.3
on lavapipe) and 8 ulp on cpu, whose fused kernel evaluates Eigen's float32 rational (absolute
error below 5e-7; measured 7.9 near |x| = 3); tiny and subnormal float32 inputs, where erf is
2/sqrt(pi) x, within 2 ulp on every device.
"""
import math

import numpy as np
import pytest

import ruda as xp
from conftest import flushes_subnormals, to_numpy
from strategies import supported

SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan]


def _inputs(rng, dt):
    tiny = 1e-300 if dt == np.float64 else 1e-30
    mags = np.concatenate([rng.uniform(0, 6, 300), np.geomspace(tiny, 1, 60),
                           [0.5, 0.999, 1.0, 1.001, 2.0, 3.3, 5.9, 6.1, 9.9, 10.0, 10.1, 27.0]])
    return (mags * np.where(rng.random(mags.size) < 0.5, -1, 1)).astype(dt)


def _ulps(got, x, dt):
    want = np.array([math.erf(v) for v in x.astype(np.float64)])
    ulp = np.spacing(np.abs(want).astype(dt)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / ulp


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_erf_against_math(device, rng, dt):
    if np.dtype(dt) not in supported(device, "real floating"):
        pytest.skip(f"{np.dtype(dt)} is not supported on {device}")
    x = _inputs(rng, dt)
    got = xp.erf(xp.asarray(x, device=device))
    assert got.dtype == dt and got.device == device and got.shape == x.shape
    limit = 4 if dt == np.float64 else (8 if device.kind == "cpu" else 3)
    err = _ulps(to_numpy(got), x, dt)
    assert err.max() <= limit, (x[np.argmax(err)], err.max())


def test_erf_tiny_and_subnormal_inputs(device):
    """erf(x) = 2/sqrt(pi) x to 2 ulp for float32 x below 1e-30, subnormal x included (the host
    kernel's x * P(0) went subnormal before the division: erf(-1.1754944e-38) was 22 ulp off),
    and the half dtypes there rounded once."""
    f32 = np.finfo(np.float32)
    mags = [np.geomspace(float(f32.tiny), 1e-30, 40), [float(f32.tiny), 2.0799654e-38]]
    if not flushes_subnormals(device):
        mags.append(np.geomspace(float(f32.smallest_subnormal), float(f32.tiny), 40))
    mags = np.concatenate(mags).astype(np.float32)
    x = np.concatenate([mags, -mags])
    got = xp.erf(xp.asarray(x, device=device))
    assert got.dtype == np.float32
    err = _ulps(to_numpy(got), x, np.float32)
    assert err.max() <= 2, (x[np.argmax(err)], err.max())
    for name in ("float16", "bfloat16"):
        dt = getattr(xp, name, None)
        if dt is None:
            continue
        if name == "bfloat16":
            import ml_dtypes
        # ml_dtypes' finfo (xp.bfloat16 exists only with ml_dtypes): NumPy's own finfo takes
        # bfloat16 only in some NumPy versions
        fi = ml_dtypes.finfo(np.dtype(dt)) if name == "bfloat16" else np.finfo(np.float16)
        lo = float(fi.tiny if flushes_subnormals(device) else fi.smallest_subnormal)
        v = np.geomspace(lo, float(fi.tiny) * 64, 30)
        h = to_numpy(xp.astype(xp.asarray(np.concatenate([v, -v]), device="cpu"), dt))
        got = to_numpy(xp.erf(xp.asarray(h, device=device)))
        assert got.dtype == np.dtype(dt)
        want = np.array([math.erf(t) for t in h.astype(np.float64)]).astype(np.dtype(dt))
        assert (got == want).all(), (name, h[got != want], got[got != want], want[got != want])


def test_erf_special_values(device):
    for dt in supported(device, "real floating"):
        got = to_numpy(xp.erf(xp.asarray(SPECIAL, dtype=dt, device=device)))
        assert got.dtype == dt
        assert got[0] == 0 and not np.signbit(got[0]), got
        assert got[1] == 0 and np.signbit(got[1]), got       # erf(-0) = -0
        assert got[2] == 1 and got[3] == -1 and np.isnan(got[4]), got
        # shapes: 0-d and empty keep theirs
        assert xp.erf(xp.asarray(0.5, dtype=dt, device=device)).shape == ()
        assert xp.erf(xp.zeros((0, 3), dtype=dt, device=device)).shape == (0, 3)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_erf_half_dtypes_round_once(device, name):
    dt = getattr(xp, name, None)
    if dt is None:
        pytest.skip(f"{name} needs ml_dtypes")
    v = np.concatenate([np.linspace(-4, 4, 161), [0.0, -0.0, 1e-3]])
    got = xp.erf(xp.astype(xp.asarray(v.astype(np.float32), device=device), dt))
    assert got.dtype == dt
    host = to_numpy(got)
    x = to_numpy(xp.astype(xp.asarray(v, device="cpu"), dt)).astype(np.float64)
    want = np.array([math.erf(t) for t in x]).astype(np.dtype(dt)).astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.dtype(dt))).astype(np.float64)
    assert (np.abs(host.astype(np.float64) - want) <= ulp).all()   # float32 math, rounded once


def test_erf_refuses_other_dtypes_and_non_arrays(device):
    for dt in (xp.int32, xp.bool, xp.complex64):
        with pytest.raises(TypeError, match=r"ruda\.erf: x must have a real floating-point dtype; "
                                            rf"got {np.dtype(dt).name}"):
            xp.erf(xp.ones(2, dtype=dt, device=device))
    with pytest.raises(TypeError, match=r"ruda\.erf: x must be a ruda array; got list"):
        xp.erf([0.5])


def test_nn_erf_is_the_namespace_erf(device, rng):
    import ruda.nn as nn
    dt = supported(device, "real floating")[-1]
    x = xp.asarray(rng.normal(0, 2, 50), dtype=dt, device=device)
    assert (to_numpy(nn.erf(x)) == to_numpy(xp.erf(x))).all()
