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
traceback); skip for a backend gap (``NotImplementedError`` from a device backend) or for a
call SciPy/scikit-learn make through NumPy, which ruda refuses for non-host arrays (no silent
device moves).
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

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
    status, detail = _results(device)[name]
    if status == cases.GAP:
        pytest.skip(f"backend gap: {detail}")
    if status == cases.HOST_ONLY:
        pytest.skip(f"goes through NumPy, which needs host data (ruda does not move arrays "
                    f"implicitly): {detail}")
    if status != cases.PASS:
        pytest.fail(f"{name} on '{device}':\n{detail}", pytrace=False)


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
