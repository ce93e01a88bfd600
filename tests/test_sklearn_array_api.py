"""scikit-learn's own array-API estimator checks on ruda arrays, on every device.

``sklearn.utils.estimator_checks.check_array_api_input(..., check_values=True)`` runs for every
estimator instance scikit-learn tests whose tags declare array-API support, in float64 and
float32, with ``array_namespace="ruda"`` on each device: fitted attributes and method outputs
must be ruda arrays on the input's device with NumPy's values.  scikit-learn brings results
back to NumPy with ``move_to``, i.e. ``np.from_dlpack(x, device="cpu")``: DLPack's explicit
host copy, which is what lets these checks run on wgpu and cuda arrays.

``SCIPY_ARRAY_API=1`` must be set before SciPy is imported, so the checks run in one child
process per device (this file run as a script), as in tests/test_sklearn_scipy.py; each
(estimator, dtype) is reported here as its own test.  Failures that are scikit-learn's are
listed in ``SKLEARN_XFAILS`` with the reason: such a case must fail on ruda in the listed way
*and* fail with ``array_api_strict`` too (the child runs the same check with it), else the test
fails.  Every other case must pass.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import traceback
import warnings

import pytest

_MISSING = [m for m in ("sklearn", "scipy", "array_api_strict") if importlib.util.find_spec(m) is None]
_DTYPES = ("float64", "float32")

# estimator -> (why it fails, the exception type, a regex its message matches).  scikit-learn's
# own suite expects these failures too (PER_ESTIMATOR_XFAIL_CHECKS) or cannot run the check.
SKLEARN_XFAILS = {
    "LabelEncoder": (
        "a target transformer: fit takes y alone, and the check calls fit(X, y)",
        "TypeError", r"fit\(\) takes 2 positional arguments"),
    "PCA": (
        "make_classification's X has rank 8 of 10 columns (2 redundant features): the last two "
        "components span a zero-variance subspace that any SVD may pick differently, and score "
        "inverts a singular covariance (scikit-learn xfails it: 'linalg.inv fails because input "
        "is singular'); tests/test_sklearn_scipy.py checks PCA on well-conditioned data",
        "AssertionError", r""),
}



# --- the child process ----------------------------------------------------------------------
def _instances():
    """(id, estimator) for every instance scikit-learn runs check_array_api_input on."""
    from sklearn.utils import get_tags
    from sklearn.utils._test_common.instance_generator import (
        _tested_estimators, _yield_instances_for_check)
    from sklearn.utils.estimator_checks import check_array_api_input
    out, seen = [], {}
    for est in _tested_estimators():
        if not get_tags(est).array_api_support:
            continue
        for inst in _yield_instances_for_check(check_array_api_input, est):
            name = type(inst).__name__
            inner = getattr(inst, "estimator", None)
            if hasattr(inner, "get_params"):
                name += f"({type(inner).__name__})"
            seen[name] = seen.get(name, 0) + 1
            out.append((name if seen[name] == 1 else f"{name}#{seen[name]}", inst))
    return out


def _outcome(fn):
    from unittest import SkipTest
    try:
        fn()
        return ["pass", "", ""]
    except SkipTest as e:
        return ["skip", "SkipTest", str(e)]
    except Exception as e:  # noqa: BLE001 - every failure is reported with its traceback
        return ["fail", type(e).__name__, f"{e}\n{traceback.format_exc()[-3000:]}"]


def _run(device):
    from sklearn.utils.estimator_checks import check_array_api_input

    def check(name, inst, ns, dev, dtype):
        return _outcome(lambda: check_array_api_input(name, inst, array_namespace=ns, device_name=dev,
                                                      dtype_name=dtype, check_values=True))
    results = {}
    for name, inst in _instances():
        for dtype in _DTYPES:
            res = check(name, inst, "ruda", device, dtype)
            if name.split("#")[0] in SKLEARN_XFAILS:   # the same check with array_api_strict
                res.append(check(name, inst, "array_api_strict", "CPU_DEVICE", dtype))
            results[f"{name}-{dtype}"] = res
    return results


def _child(*args):
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True,
                          text=True, env=env, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")]
    if proc.returncode != 0 or not lines:
        return RuntimeError(f"the check runner failed ({' '.join(args)}, exit {proc.returncode}):\n"
                            f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULTS "):])


# --- the tests ------------------------------------------------------------------------------
# (run as the child, this module lists and runs the checks itself: no grandchild)
_CASES = [] if _MISSING or __name__ == "__main__" else _child("--list")
_RESULTS = {}   # device string -> {case: outcome}


def _results(device):
    key = str(device)
    if key not in _RESULTS:
        _RESULTS[key] = _child(key)
    res = _RESULTS[key]
    if isinstance(res, Exception):
        pytest.fail(str(res), pytrace=False)
    return res


def test_every_array_api_estimator_is_listed():
    """The checks found estimators to run (a listing failure fails here, not silently)."""
    if _MISSING:
        pytest.skip(f"{', '.join(_MISSING)} not installed (pip install '.[test]')")
    if isinstance(_CASES, Exception):
        pytest.fail(str(_CASES), pytrace=False)
    names = {c.rsplit("-", 1)[0] for c in _CASES}
    assert len(names) >= 15 and {"Ridge", "StandardScaler", "LinearDiscriminantAnalysis"} <= names, names
    listed = set(SKLEARN_XFAILS)
    assert listed <= names, f"listed here but no longer checked by scikit-learn: {listed - names}"


@pytest.mark.skipif(bool(_MISSING), reason=f"{' and '.join(_MISSING)} not installed (pip install '.[test]')")
@pytest.mark.parametrize("case", _CASES if isinstance(_CASES, list) else [])
def test_check_array_api_input(device, case):
    status, etype, detail, *strict = _results(device)[case]
    if status == "skip":
        pytest.skip(detail)
    name = case.rsplit("-", 1)[0].split("#")[0]
    if name in SKLEARN_XFAILS:
        reason, want_type, pattern = SKLEARN_XFAILS[name]
        assert status == "fail" and etype == want_type and re.search(pattern, detail), \
            f"{case} on '{device}': expected scikit-learn's {want_type} ({reason}); got {status}:\n{detail}"
        s_status, s_type, s_detail = strict[0]
        assert s_status == "fail" and s_type == want_type, \
            f"{case}: array_api_strict gives {s_status} {s_type}, so the failure is not scikit-learn's:\n{s_detail}"
        pytest.xfail(f"scikit-learn's: {reason} (array_api_strict fails it too)")
    assert status == "pass", f"{case} on '{device}': {etype}\n{detail}"


if __name__ == "__main__":
    if os.environ.get("SCIPY_ARRAY_API") != "1" or "scipy" in sys.modules:
        sys.exit("SCIPY_ARRAY_API=1 must be set before SciPy is imported")
    warnings.simplefilter("ignore")     # the estimators' convergence warnings; outcomes are printed
    if sys.argv[1] == "--list":
        out = [f"{name}-{dtype}" for name, _ in _instances() for dtype in _DTYPES]
    else:
        out = _run(sys.argv[1])
    print("RESULTS " + json.dumps(out))
