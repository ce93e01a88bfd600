"""scikit-learn and SciPy accept ruda arrays through their array-API dispatch.

With ``sklearn.set_config(array_api_dispatch=True)`` and ``SCIPY_ARRAY_API=1``, the estimators
and functions that support the standard (PCA with every array-API solver, Ridge and
RidgeClassifier with svd, LinearDiscriminantAnalysis, the scalers, metrics, pairwise kernels;
scipy.special, scipy.stats, scipy.fft, scipy.cluster) must give NumPy's results on ruda arrays,
as ruda arrays on the input's device.

``SCIPY_ARRAY_API`` only takes effect if it is set before SciPy is first imported, and other
test modules may import SciPy earlier in this process, so the cases
(``tests/_sklearn_scipy_cases.py``) run in one child process per device with the variable set;
each case is reported here as its own test.  Outcomes: pass; fail (with the child's
traceback); an expected failure for a backend gap listed in tests/expected_gaps.py.  A call
that SciPy makes through NumPy (``np.asarray`` of its input) on a non-host device runs under
``ruda.allow_host_conversion()`` in the cases and is recorded; ``test_scipy_calls_on_device``
holds those records to the lists in ``tests/_scipy_cases.py`` (which the README quotes).
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import _scipy_cases
import _sklearn_scipy_cases as cases

_CASES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sklearn_scipy_cases.py")
_MISSING = [m for m in ("sklearn", "scipy") if importlib.util.find_spec(m) is None]
_RESULTS = {}   # device string -> {case: (status, detail)}


def _results(dev):
    key = str(dev)
    if key not in _RESULTS:
        env = dict(os.environ, SCIPY_ARRAY_API="1")
        proc = subprocess.run([sys.executable, _CASES_PATH, key], capture_output=True, text=True,
                              env=env, timeout=600)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")]
        if proc.returncode != 0 or not lines:
            _RESULTS[key] = RuntimeError(
                f"the case runner failed on '{key}' (exit {proc.returncode}):\n"
                f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        else:
            _RESULTS[key] = json.loads(lines[-1][len("RESULTS "):])
    res = _RESULTS[key]
    if isinstance(res, Exception):
        pytest.fail(str(res), pytrace=False)
    return res


@pytest.mark.skipif(bool(_MISSING), reason=f"{' and '.join(_MISSING)} not installed "
                                            "(pip install '.[test]')")
@pytest.mark.parametrize("name", list(cases.CASES))
def test_sklearn_scipy_case(device, name):
    status, detail, _, _ = _results(device)[name]
    if status == cases.GAP:
        pytest.xfail(f"backend gap: {detail}")
    if status != cases.PASS:
        pytest.fail(f"{name} on '{device}':\n{detail}", pytrace=False)


@pytest.mark.skipif(bool(_MISSING), reason=f"{' and '.join(_MISSING)} not installed "
                                            "(pip install '.[test]')")
def test_scipy_calls_on_device(device):
    """Which SciPy calls stay on the device and which go through NumPy, as measured by the cases:
    every call in ``ON_DEVICE`` was made and needed no host copy; every call that needed one is
    in ``THROUGH_NUMPY`` (on the host, NumPy conversion is no copy: none is recorded)."""
    res = [r for r in _results(device).values() if r[0] == cases.PASS]
    calls = {c for r in res for c in r[2] if not c.startswith("sklearn.")}
    host = {c for r in res for c in r[3]}
    if device.kind == "cpu":
        assert not host, host
        return
    assert host <= _scipy_cases.THROUGH_NUMPY, \
        f"SciPy calls through NumPy on '{device}' not listed in THROUGH_NUMPY (and the README): " \
        f"{sorted(host - _scipy_cases.THROUGH_NUMPY)}"
    stayed = calls - host
    assert _scipy_cases.ON_DEVICE <= stayed, \
        f"listed in ON_DEVICE but not made or not on '{device}': {sorted(_scipy_cases.ON_DEVICE - stayed)}"
    assert stayed <= _scipy_cases.ON_DEVICE, \
        f"SciPy calls on '{device}' not listed in ON_DEVICE: {sorted(stayed - _scipy_cases.ON_DEVICE)}"


def test_array_api_compat_helpers(device):
    """The array-api-compat helpers that scikit-learn and SciPy call on every input."""
    array_api_compat = pytest.importorskip("array_api_compat")
    import ruda
    x = ruda.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)
    assert array_api_compat.array_namespace(x) is ruda
    assert array_api_compat.is_array_api_obj(x)
    assert not array_api_compat.is_numpy_array(x)
    assert array_api_compat.device(x) == device
    assert array_api_compat.size(x) == 6
    assert array_api_compat.to_device(x, device) is x
    y = array_api_compat.to_device(x, "cpu")
    assert isinstance(y, ruda.Array) and y.device == "cpu" and y.shape == (2, 3)
    assert [r.shape for r in x] == [(3,), (3,)]
