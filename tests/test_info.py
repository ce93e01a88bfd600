"""The inspection API (``__array_namespace_info__``) and ``python -m ruda info``."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import ruda as xp
from test_promotion import KINDS, NAMES

info = xp.__array_namespace_info__()


def test_namespace_metadata():
    assert xp.__array_api_version__ == "2025.12"
    assert isinstance(xp.__version__, str)
    for c in ("e", "inf", "nan", "pi"):
        assert isinstance(getattr(xp, c), float)
    assert xp.newaxis is None


def test_capabilities():
    caps = info.capabilities()
    assert isinstance(caps, dict)
    for key in ("boolean indexing", "data-dependent shapes", "max dimensions"):
        assert key in caps
    assert isinstance(caps["boolean indexing"], bool) and isinstance(caps["data-dependent shapes"], bool)
    assert caps["max dimensions"] is None or caps["max dimensions"] >= 8


def test_default_device_and_devices(device):
    assert info.default_device() in info.devices()
    assert device in info.devices()
    assert all(isinstance(d, xp.Device) for d in info.devices())


def test_dtypes_per_device(device):
    all_ = info.dtypes(device=device)
    assert isinstance(all_, dict) and all_
    assert set(all_) <= set(NAMES)
    assert {"bool", "int32", "float32"} <= set(all_)          # every backend has these
    for name, dt in all_.items():
        assert dt == getattr(xp, name)
        x = xp.asarray(np.zeros(2, dtype=dt) + (np.arange(2) % 2).astype(dt), device=device)
        assert x.dtype == dt                                      # it really holds that dtype
    for kind, names in KINDS.items():
        got = info.dtypes(device=device, kind=kind)
        assert set(got) == {n for n in names if n in all_}, kind
    both = info.dtypes(device=device, kind=("bool", "real floating"))
    assert set(both) == {n for n in all_ if n in ("bool", "float32", "float64")}
    with pytest.raises(ValueError, match="unknown kind 'floats'"):
        info.dtypes(device=device, kind="floats")


def test_default_dtypes(device):
    d = info.default_dtypes(device=device)
    assert set(d) == {"real floating", "complex floating", "integral", "indexing"}
    supported = set(info.dtypes(device=device).values())
    for kind, dt in d.items():
        assert dt in supported, kind
    assert d["real floating"] in (xp.float32, xp.float64)
    assert d["integral"] in (xp.int32, xp.int64) and d["indexing"] in (xp.int32, xp.int64)
    if xp.complex128 in supported or xp.complex64 in supported:
        assert d["complex floating"] == (xp.complex128 if d["real floating"] == xp.float64 else xp.complex64)
    # the defaults are what creation functions use
    assert xp.zeros(2, device=device).dtype == d["real floating"]
    assert xp.arange(3, device=device).dtype == d["integral"]
    assert xp.argmax(xp.asarray([1.0, 3.0, 2.0], device=device)).dtype == d["indexing"]


def test_python_m_ruda_info():
    if importlib.util.find_spec("ruda.__main__") is None:
        pytest.skip("python -m ruda does not exist yet")
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "ruda", "info"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert xp.__version__ in text and "2025.12" in text
    lines = text.splitlines()
    assert f"default device: {info.default_device()}" in text
    for d in xp.devices():
        heads = [ln for ln in lines if ln.startswith(f"{d}:")]
        assert len(heads) == 1, (d, heads)               # each device once
        rest = heads[0][len(f"{d}:"):].strip()
        assert rest and not rest.startswith(d.kind), heads[0]   # not "wgpu: wgpu:0 ..."
        block = text[text.index(heads[0]):]
        dtype_line = next(ln for ln in block.splitlines()[1:] if ln.strip().startswith("dtypes:"))
        assert all(n in dtype_line for n in info.dtypes(device=d)), dtype_line
    for kind in ("cuda", "wgpu"):
        if not any(d.kind == kind for d in xp.devices()):   # listed as unavailable, with a reason
            assert any(ln.startswith(f"{kind}:") and "unavailable (" in ln for ln in lines), text


def _run(env, *args, code=None):
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "ruda", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env),
                          timeout=300)


@pytest.mark.parametrize("value", ["gpu", "wgpu:7", "cpu:1"])
def test_a_bad_ruda_device_is_named_and_info_still_reports(value):
    """The default device's error names RUDA_DEVICE; `python -m ruda info`, the command to run
    then, reports it and goes on."""
    r = _run({"RUDA_DEVICE": value}, code="import ruda as xp; xp.ones(3)")
    assert r.returncode == 1 and f"ValueError: ruda: RUDA_DEVICE='{value}' (the default device): " \
        in r.stderr, r.stderr[-2000:]
    r = _run({"RUDA_DEVICE": value}, "info")
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"default device: none (ruda: RUDA_DEVICE='{value}'" in r.stdout
    assert "cpu:" in r.stdout


def test_wgpu_backend_that_matches_no_adapter_says_which_exist():
    if "wgpu" not in [d.kind for d in xp.devices()]:
        pytest.skip("no wgpu adapter")
    r = _run({"RUDA_WGPU_BACKEND": "nosuchapi"},
             code="import ruda as xp; xp.ones(3, device='wgpu')")
    assert r.returncode == 1 and "RUDA_WGPU_BACKEND='nosuchapi' matches no adapter; present: " \
        in r.stderr, r.stderr[-2000:]


def test_demo_runs_on_an_adapter_without_float64():
    if "wgpu" not in [d.kind for d in xp.devices()]:
        pytest.skip("no wgpu adapter")
    r = _run({"RUDA_DEVICE": "wgpu", "RUDA_WGPU_WITHOUT": "shader-f64,shader-int64"}, "demo")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "device 'wgpu'" in r.stdout and "residual" in r.stdout and "mean" in r.stdout


def test_a_backend_that_fails_to_import_otherwise_is_reported(monkeypatch):
    """A backend module raising something else than ImportError (a native library's OSError)
    is reported by unavailable(), which `info` prints, as discovery already does."""
    from ruda import backends
    monkeypatch.setitem(backends._REGISTRY, "broken", "ruda._no_such_module_for_tests:B")
    monkeypatch.setattr(backends.importlib, "import_module",
                        lambda name: (_ for _ in ()).throw(OSError("libfoo.so: cannot open")))
    monkeypatch.delitem(backends._broken, "broken", raising=False)
    try:
        assert backends.unavailable("broken") == "its backend failed (OSError: libfoo.so: cannot open)"
    finally:
        backends._broken.pop("broken", None)
