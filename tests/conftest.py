"""Shared fixtures: every device-parametrized test runs on each available device.

``device`` is parametrized over ``ruda.devices()`` (cpu always; cuda and wgpu
where present).  ``RUDA_TEST_DEVICES=cpu,wgpu`` restricts the set.
"""
import os
import traceback

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import ruda
import expected_gaps

# Property tests: modest example counts, no deadline (GPU dispatch latency varies), derandomized
# for reproducible CI unless RUDA_HYPOTHESIS_RANDOM=1; RUDA_HYPOTHESIS_EXAMPLES overrides the count.
settings.register_profile(
    "ruda", max_examples=int(os.environ.get("RUDA_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
    derandomize=not os.environ.get("RUDA_HYPOTHESIS_RANDOM"), database=None, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ruda"))


def _device_params():
    found = [str(d) for d in ruda.devices()]
    only = os.environ.get("RUDA_TEST_DEVICES")
    if only:
        want = [s.strip() for s in only.split(",") if s.strip()]
        found = [d for d in found if d in want or d.split(":")[0] in want]
    return found


DEVICES = _device_params()
_TESTS = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CREATION = os.path.abspath(ruda._creation.__file__)


@pytest.fixture(params=DEVICES)
def device(request):
    return ruda.device(request.param)


@pytest.fixture(scope="session")
def wgpu_device():
    """The first wgpu device (tests of that backend's internals); skips where there is none."""
    pytest.importorskip("wgpu")
    try:
        return ruda.device("wgpu")
    except ValueError as e:
        pytest.skip(f"no wgpu device: {e}")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def flushes_subnormals(device):
    """Whether the device flushes float subnormals to zero (WGSL allows it; NVIDIA's Vulkan driver
    does): results with subnormal operands or results are then the adapter's, not NumPy's."""
    return bool(getattr(device.backend, "flushes_subnormals", False))


def to_numpy(x):
    """Host NumPy copy of a ruda array (explicit transfer)."""
    return np.asarray(x.to_device("cpu"))


def pytest_collection_modifyitems(config, items):
    """``RUDA_TEST_DEVICE_TESTS=1`` keeps only the tests that run on a device (those taking the
    ``device`` or ``wgpu_device`` fixture, and the test_wgpu* files): CI's second pass, on wgpu
    with shader-f64/int64 withheld, runs none of the host-only tests again."""
    if os.environ.get("RUDA_TEST_DEVICE_TESTS", "") in ("", "0"):
        return
    keep = [it for it in items if {"device", "wgpu_device"} & set(getattr(it, "fixturenames", ()))
            or it.path.name.startswith("test_wgpu")]
    if len(keep) < len(items):
        config.hook.pytest_deselected(items=[it for it in items if it not in set(keep)])
        items[:] = keep


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A backend gap listed in tests/expected_gaps.py is an expected failure with its reason;
    any other gap, like any other error, fails the test."""
    outcome = yield
    exc = outcome.excinfo[1] if outcome.excinfo else None
    reasons = _listed_gaps(exc)
    if reasons:
        outcome.force_exception(pytest.xfail.Exception(f"backend gap: {reasons[0]}"))
    elif _own_data_lacks_dtype(exc):
        outcome.force_exception(pytest.skip.Exception(
            f"the test's own data needs a dtype this device lacks: {exc}", _use_item_location=True))


def _own_data_lacks_dtype(exc):
    """A test that makes its own data in a dtype the device lacks (float64 or int64 on a
    browser-class wgpu adapter, ``RUDA_WGPU_WITHOUT=shader-f64,shader-int64``): the refusal
    came from a creation call (``ruda.asarray``, ``ruda.zeros``...) made by test code itself.
    The same refusal from inside any other ruda function is a failure."""
    if not isinstance(exc, TypeError) or "lacks the shader-" not in str(exc):
        return False
    frames = [f.f_code.co_filename for f, _ in traceback.walk_tb(exc.__traceback__)]
    last = max((i for i, f in enumerate(frames) if f.startswith(_TESTS)), default=None)
    return last is not None and last + 1 < len(frames) and frames[last + 1] == _CREATION


def _listed_gaps(exc):
    """The listed reasons for the backend gaps that make up ``exc`` (hypothesis may group
    several), or [] when any part of it is not a listed gap."""
    if isinstance(exc, BaseExceptionGroup):
        leaves = [g for e in exc.exceptions for g in (_listed_gaps(e) or [None])]
        return [] if None in leaves else leaves
    reason = expected_gaps.expected(exc)
    return [reason] if reason else []
