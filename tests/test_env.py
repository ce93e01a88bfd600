"""ruda's environment variables (ruda/runtime/env.py): every switch takes the same spellings,
empty means the default, and a wrong value is named (a ValueError where the variable is read
when it takes effect; a RuntimeWarning and the default where it is read at import, which must
not leave ruda unimportable).  Variables read at import are checked in a fresh process."""
import os
import subprocess
import sys
import types
import warnings

import pytest

from ruda.runtime import env

ON = ["1", "true", "True", "YES", "on", " On "]
OFF = ["0", "false", "FALSE", "no", "off", "Off"]
FLAG_WORDS = "expected 1/0, true/false, yes/no or on/off"


def _python(code, **environ):
    """Run ``code`` in a fresh process from the repository root, with no other RUDA_ variable."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("RUDA_")}
    return subprocess.run([sys.executable, "-c", code], env=dict(e, **environ), capture_output=True,
                          text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(__file__)))


# ------------------------------------------------------------------ the parser
@pytest.mark.parametrize("value", ON + OFF)
def test_flag_spellings(monkeypatch, value):
    monkeypatch.setenv("RUDA_X", value)
    assert env.flag("RUDA_X", value in OFF) is (value in ON)


@pytest.mark.parametrize("value", [None, "", "  "])
def test_flag_unset_or_empty_is_the_default(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("RUDA_X", raising=False)
    else:
        monkeypatch.setenv("RUDA_X", value)
    assert env.flag("RUDA_X", True) is True and env.flag("RUDA_X", False) is False


@pytest.mark.parametrize("value", ["maybe", "2", "enable", "0.0", "t"])
def test_flag_wrong_value_names_it(monkeypatch, value):
    monkeypatch.setenv("RUDA_X", value)
    with pytest.raises(ValueError, match=f"RUDA_X='{value}' is not valid: {FLAG_WORDS}"):
        env.flag("RUDA_X", False)
    # read at import: the same words as a warning at the caller's line, and the default
    with pytest.warns(RuntimeWarning, match=f"RUDA_X='{value}' .*{FLAG_WORDS}; using the default "
                                            r"\(on\)") as w:
        assert env.flag("RUDA_X", True, at_import=True) is True
    assert w[0].filename == __file__


def test_number(monkeypatch):
    monkeypatch.setenv("RUDA_X", " 2.5 ")
    assert env.number("RUDA_X", 1.0, low=0) == 2.5
    monkeypatch.setenv("RUDA_X", "")
    assert env.number("RUDA_X", 1.0, low=0) == 1.0
    monkeypatch.setenv("RUDA_X", "4096")
    assert env.number("RUDA_X", 7, kind=int, low=0) == 4096
    for bad, words in [("abc", "a number of seconds >= 0"), ("-1", "a number of seconds >= 0"),
                       ("nan", "a number of seconds >= 0"), ("inf", "a number of seconds >= 0")]:
        monkeypatch.setenv("RUDA_X", bad)
        with pytest.raises(ValueError, match=f"RUDA_X='{bad}' is not valid: expected {words}"):
            env.number("RUDA_X", 1.0, low=0, unit="seconds")
    monkeypatch.setenv("RUDA_X", "1MB")
    with pytest.raises(ValueError, match="expected an integer number of bytes >= 0"):
        env.number("RUDA_X", 7, kind=int, low=0, unit="bytes")
    with pytest.warns(RuntimeWarning, match=r"RUDA_X='1MB'.*using the default \(7\)"):
        assert env.number("RUDA_X", 7, kind=int, low=0, at_import=True) == 7


# ------------------------------------------------------------------ variables read at import
@pytest.mark.parametrize("value, pure", [("1", True), ("yes", True), ("0", False),
                                         ("false", False), ("off", False), ("no", False),
                                         ("", False)])
def test_pure_python_switch(value, pure):
    p = _python("from ruda.runtime import accelerator, env\n"
                "import importlib.util\n"
                "built = importlib.util.find_spec('ruda._speedups') is not None\n"
                "print(accelerator.speedups is None, built)", RUDA_PURE_PYTHON=value)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    off, built = p.stdout.split()
    assert off == str(pure or built == "False")


def test_wrong_value_at_import_warns_at_the_users_line():
    p = _python("import ruda\nfrom ruda.runtime import accelerator, env\n"
                "import importlib.util\n"
                "print(accelerator.speedups is None, importlib.util.find_spec('ruda._speedups') is None)",
                RUDA_PURE_PYTHON="maybe")
    assert p.returncode == 0, p.stderr
    off, unbuilt = p.stdout.split()
    assert off == unbuilt                   # the default: the accelerator where it is built
    assert p.stderr.startswith(f"<string>:1: RuntimeWarning: ruda: RUDA_PURE_PYTHON='maybe' is not "
                               f"valid: {FLAG_WORDS}; using the default (off)"), p.stderr


@pytest.mark.parametrize("value, single", [("1", False), ("on", False), ("0", True),
                                           ("false", True), ("", True), ("bogus", True)])
def test_wgpu_two_pass_switch(value, single):
    pytest.importorskip("wgpu")
    p = _python("from ruda.backends.wgpu import _base\nprint(_base.SINGLE_PASS)",
                RUDA_WGPU_TWO_PASS=value)
    assert p.returncode == 0 and p.stdout.split() == [str(single)], p.stderr
    assert ("RUDA_WGPU_TWO_PASS='bogus' is not valid" in p.stderr) is (value == "bogus"), p.stderr


def test_distributed_settings_at_import():
    code = ("import ruda.distributed\nfrom ruda.distributed import _check, _pool\n"
            "print(_pool._MIN, _pool._CAP, _check.ENABLED)")
    p = _python(code, RUDA_DIST_POOL_MIN="4096", RUDA_DIST_POOL_MB="0.5", RUDA_DIST_CHECK="off")
    assert p.returncode == 0 and p.stdout.split() == ["4096", str(1 << 19), "False"], p.stderr
    p = _python(code, RUDA_DIST_POOL_MIN="1MB", RUDA_DIST_POOL_MB="lots", RUDA_DIST_CHECK="nah")
    assert p.returncode == 0, p.stderr        # importable: each wrong value warns, defaults apply
    assert p.stdout.split() == [str(1 << 20), str(1 << 30), "True"], p.stderr
    for words in ["RUDA_DIST_POOL_MIN='1MB' is not valid: expected an integer number of bytes >= 0",
                  "RUDA_DIST_POOL_MB='lots' is not valid: expected a number of MiB >= 0",
                  f"RUDA_DIST_CHECK='nah' is not valid: {FLAG_WORDS}"]:
        assert f"<string>:1: RuntimeWarning: ruda: {words}" in p.stderr, p.stderr


# ------------------------------------------------------------------ variables read on use
@pytest.mark.parametrize("value", ["nan", "inf", "ten"])
def test_distributed_timeout_must_be_a_finite_number(monkeypatch, value):
    """NaN made every deadline comparison false: the watchdog silently never started."""
    from ruda.distributed import _watchdog
    monkeypatch.setenv("RUDA_DIST_TIMEOUT", value)
    with pytest.raises(ValueError, match=rf"RUDA_DIST_TIMEOUT='{value}' is not valid: expected a "
                                         r"number of seconds"):
        _watchdog.timeout_from_env()
    arg = value if value == "ten" else float(value)
    with pytest.raises(ValueError, match=r"ruda\.distributed\.init: timeout must be a finite number "
                                         rf"of seconds .*; got {arg!r}"):
        _watchdog.checked_timeout(arg)
    monkeypatch.setenv("RUDA_DIST_TIMEOUT", "-1")
    assert _watchdog.timeout_from_env() == -1.0 and _watchdog.checked_timeout(0) == 0.0


def test_wgpu_switch(monkeypatch):
    wb = pytest.importorskip("ruda.backends.wgpu")
    monkeypatch.setattr(wb.WgpuBackend, "_unavailable", None)
    for value in ["0", "off", "False", "no"]:
        monkeypatch.setenv("RUDA_WGPU", value)
        assert wb.WgpuBackend.discover() == []
        assert wb.WgpuBackend.unavailable_reason() == f"disabled by RUDA_WGPU={value}"
    for value in ["1", "on", ""]:
        monkeypatch.setenv("RUDA_WGPU", value)
        assert wb._enabled()
    monkeypatch.setenv("RUDA_WGPU", "maybe")
    with pytest.raises(ValueError, match=f"RUDA_WGPU='maybe' is not valid: {FLAG_WORDS}"):
        wb._enabled()
    # discovery (at import too) finds no device and keeps the words for "wgpu is not available"
    assert wb.WgpuBackend.discover() == []
    assert "RUDA_WGPU='maybe' is not valid" in wb.WgpuBackend.unavailable_reason()


def test_tune_mode_and_budget(monkeypatch):
    from ruda.runtime import tune
    for value, mode in [(v, "on") for v in ON] + [(v, "off") for v in OFF] + [
            ("force", "force"), ("FORCE", "force"), ("", "on"), ("Off", "off")]:
        monkeypatch.setenv("RUDA_TUNE", value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert tune.mode() == mode, value
    monkeypatch.setenv("RUDA_TUNE", "bogus")
    with pytest.raises(ValueError, match="RUDA_TUNE='bogus' is not valid: expected off, on or force"):
        tune.mode()
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "0.25")
    assert tune.default_budget() == 0.25
    monkeypatch.setenv("RUDA_TUNE_BUDGET", "")
    assert tune.default_budget() == 2.0 and tune.default_budget(1.0) == 1.0
    for bad in ("abc", "-1"):
        monkeypatch.setenv("RUDA_TUNE_BUDGET", bad)
        with pytest.raises(ValueError, match=f"RUDA_TUNE_BUDGET='{bad}' is not valid: expected a "
                                             f"number of seconds >= 0"):
            tune.default_budget()


def test_recording_switch(monkeypatch):
    from ruda.nn.models._recorded import Recordings
    made = []

    class Probe(Recordings):        # records the shape it was asked for instead of recording
        def __init__(self, model, B, max_len, greedy):
            made.append(B)
            self.key, self.caches, self.mask = (B, max_len, greedy), [], {}

    backend = types.SimpleNamespace(records=True)
    model = types.SimpleNamespace(recordable=lambda: True,
                                  device=types.SimpleNamespace(backend=backend))
    for value in OFF:
        monkeypatch.setenv("RUDA_RECORDING", value)
        assert Probe.get(model, 1, 8, None, True) is None
    assert made == []
    for value in ON + [""]:
        monkeypatch.setenv("RUDA_RECORDING", value)
        model._recordings = None
        assert Probe.get(model, 2, 8, None, True) is not None
    assert made == [2] * (len(ON) + 1)
    monkeypatch.setenv("RUDA_RECORDING", "sometimes")
    with pytest.raises(ValueError, match=f"RUDA_RECORDING='sometimes' is not valid: {FLAG_WORDS}"):
        Probe.get(model, 1, 8, None, True)


def test_cuda_aware_mpi_switch(monkeypatch):
    from ruda.distributed import _route
    ctx = types.SimpleNamespace(MPI=types.SimpleNamespace(Query_cuda_support=lambda: False))
    for value, aware in [("1", True), ("on", True), ("0", False), ("off", False), ("", False)]:
        monkeypatch.setenv("RUDA_DIST_CUDA_AWARE_MPI", value)
        assert _route.cuda_aware(ctx) is aware
    monkeypatch.setenv("RUDA_DIST_CUDA_AWARE_MPI", "y")
    with pytest.raises(ValueError, match="RUDA_DIST_CUDA_AWARE_MPI='y' is not valid"):
        _route.cuda_aware(ctx)


def test_wgpu_wait():
    """RUDA_WGPU_WAIT takes spin or block, else opening the device names it."""
    code = ("import ruda as xp\n"
            "try:\n"
            "    xp.ones(2, device='wgpu')\n"
            "except ValueError as e:\n"
            "    print(e)\n")
    r = _python(code, RUDA_WGPU_WAIT="garbage")
    if "no adapter" in r.stdout or "not available" in r.stdout:
        pytest.skip("no wgpu adapter")
    assert "RUDA_WGPU_WAIT='garbage' is not valid: expected spin or block" in r.stdout, r
    for mode in ("spin", "block"):
        r = _python("import ruda as xp; print(float(xp.sum(xp.ones(3, device='wgpu'))))",
                    RUDA_WGPU_WAIT=mode)
        assert r.stdout.strip() == "3.0", r.stderr[-2000:]
