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
