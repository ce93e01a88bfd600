"""``ruda.allow_host_conversion()`` / ``RUDA_ALLOW_HOST_CONVERSION=1``: NumPy-only code on device
arrays, by an explicit opt-in.  Off (the default), ``np.asarray`` of a device array raises
TypeError; on, it returns a host copy and warns naming the line that called NumPy.  (SciPy
under the opt-in: the ``host_conversion_opt_in`` case in tests/_scipy_cases.py.)"""
import inspect
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import ruda as xp
from strategies import rand, supported


def _line():
    return inspect.currentframe().f_back.f_lineno


def test_default_refuses_and_names_the_opt_in(device):
    x = xp.asarray([1.0, 2.0], device=device)
    if device.kind == "cpu":
        with warnings.catch_warnings():
            warnings.simplefilter("error")       # host arrays: no copy, no warning
            np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])
        return
    with pytest.raises(TypeError, match=rf"needs a host array.*'{device}'.*to_device\('cpu'\).*"
                                        r"ruda.allow_host_conversion\(\) or RUDA_ALLOW_HOST_CONVERSION=1"):
        np.asarray(x)


def test_opt_in_gives_a_host_copy_and_warns_at_the_caller(device):
    if device.kind == "cpu":
        pytest.skip("host arrays convert without a copy")
    rng = np.random.default_rng(3)
    for dt in supported(device):
        a = rand(rng, (3, 4), dt)
        x = xp.asarray(a, device=device)
        with xp.allow_host_conversion(), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            h, line = np.asarray(x), _line()
        assert type(h) is np.ndarray and h.dtype == dt
        np.testing.assert_array_equal(h, a)
        (w,) = seen
        assert w.category is xp.HostConversionWarning and issubclass(w.category, UserWarning)
        assert (w.filename, w.lineno) == (__file__, line), (w.filename, w.lineno)
        assert f"{__file__}:{line}" in str(w.message) and f"'{device}'" in str(w.message)
        x[0, 0] = x[1, 1]
        np.testing.assert_array_equal(h, a)        # a copy: the device array is its own
    x = xp.asarray([1.5, 2.5], device=device)
    with xp.allow_host_conversion(), warnings.catch_warnings():
        warnings.simplefilter("ignore", xp.HostConversionWarning)
        assert np.asarray(x, dtype=np.float32).dtype == np.float32
        np.testing.assert_array_equal(np.array(x, copy=True), [1.5, 2.5])
        with pytest.raises(ValueError, match=rf"copy=False.*'{device}'.*host copy"):
            np.asarray(x, copy=False)
        with pytest.raises(TypeError, match="the buffer protocol needs a host array"):
            x.__buffer__(0)                          # only __array__ is opted in


def test_opt_in_scope(device):
    if device.kind == "cpu":
        pytest.skip("host arrays convert without a copy")
    x = xp.asarray([1.0], device=device)

    @xp.allow_host_conversion()
    def through_numpy(a):
        return np.asarray(a)

    with xp.allow_host_conversion(), warnings.catch_warnings():
        warnings.simplefilter("ignore", xp.HostConversionWarning)
        with xp.allow_host_conversion(False):      # forbidden again inside
            with pytest.raises(TypeError, match="needs a host array"):
                np.asarray(x)
        np.asarray(x)
        seen = []                                  # a thread starts with the process setting
        t = threading.Thread(target=lambda: seen.append(_refused(x)))
        t.start()
        t.join()
        assert seen == [True]
    with pytest.raises(TypeError, match="needs a host array"):
        np.asarray(x)                              # the block is over
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xp.HostConversionWarning)
        np.testing.assert_array_equal(through_numpy(x), [1.0])
    with pytest.raises(TypeError, match=r"ruda.allow_host_conversion: enabled must be True or False; got 1"):
        with xp.allow_host_conversion(1):
            pass


def _refused(x):
    try:
        np.asarray(x)
    except TypeError:
        return True
    return False


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, **env), cwd=os.path.dirname(os.path.dirname(__file__)))


def test_environment_variable(device):
    if device.kind == "cpu":
        pytest.skip("host arrays convert without a copy")
    code = (f"import numpy as np, ruda\nx = ruda.asarray([1.0, 2.0], device='{device}')\n"
            f"print(np.asarray(x).tolist())\n")
    p = _python(code, RUDA_ALLOW_HOST_CONVERSION="1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[1.0, 2.0]"
    assert "<string>:3: HostConversionWarning" in p.stderr, p.stderr
    p = _python(code, RUDA_ALLOW_HOST_CONVERSION="0")
    assert p.returncode != 0 and "needs a host array" in p.stderr
    # read at import: a value that is not a switch warns at the import and keeps the default
    p = _python(code, RUDA_ALLOW_HOST_CONVERSION="maybe")
    assert p.returncode != 0 and "needs a host array" in p.stderr, p.stderr
    assert ("<string>:1: RuntimeWarning: ruda: RUDA_ALLOW_HOST_CONVERSION='maybe' is not valid: "
            "expected 1/0, true/false, yes/no or on/off") in p.stderr, p.stderr


def test_scipy_through_numpy_under_the_environment_variable(device):
    """special.erf goes through NumPy: under RUDA_ALLOW_HOST_CONVERSION=1 it runs on a device
    array (with the result on ruda's default device) and warns at SciPy's line."""
    pytest.importorskip("scipy")
    if device.kind == "cpu":
        pytest.skip("host arrays convert without a copy")
    code = ("import math, numpy as np, ruda\nfrom scipy import special\n"
            f"x = ruda.asarray([0.1, -0.5, 2.0], device='{device}')\n"
            f"with ruda.default_device('{device}'):\n    y = special.erf(x)\n"
            "print(y.device, np.allclose(y.to_device('cpu'), [math.erf(v) for v in (0.1, -0.5, 2.0)]))\n")
    p = _python(code, RUDA_ALLOW_HOST_CONVERSION="1", SCIPY_ARRAY_API="1")
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [str(device), "True"], p.stdout
    assert f"{os.sep}scipy{os.sep}special{os.sep}" in p.stderr and "HostConversionWarning" in p.stderr
    p = _python(code, SCIPY_ARRAY_API="1")
    assert p.returncode != 0 and "needs a host array" in p.stderr
