"""Device objects (equality and hashing with strings), the default device's precedence
(``with ruda.default_device(...)`` > ``ruda.set_default_device`` > ``RUDA_DEVICE`` > cpu) and
errors for unknown devices and for mixing devices, and the backends' queued copy to the host."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ruda as xp
from ruda import _devices
from conftest import DEVICES
from strategies import rand, supported


@pytest.fixture
def clean_default(monkeypatch):
    """Leave the process-wide default device as it was found."""
    monkeypatch.delenv("RUDA_DEVICE", raising=False)
    _devices.read_env()
    xp.set_default_device(None)
    yield
    xp.set_default_device(None)
    monkeypatch.delenv("RUDA_DEVICE", raising=False)
    _devices.read_env()


def _other_device(device):
    others = [d for d in DEVICES if d != str(device)]
    if not others:
        pytest.skip("needs at least two devices")
    return xp.device(others[0])


def test_device_equality_and_hash(device):
    d = xp.device(device)
    s = str(d)
    assert d == s and s == d and d == xp.device(s)
    assert hash(d) == hash(s)
    assert {s: 1}[d] == 1 and {d: 2}[s] == 2
    assert d in {s} and s in {d}
    assert xp.device(d) is d and xp.device(s) is d
    kind = d.kind
    assert s == (kind if d.index == 0 else f"{kind}:{d.index}")   # index 0 is the bare kind
    # equal to its one spelling only, so that equal objects hash alike; device() takes the others
    for other in (f"{kind}:{d.index}", f" {kind.upper()}:{d.index} ", kind, "nonsense", f"{kind}:99"):
        if other != s:
            assert d != other and other != d
    assert xp.device(f"{kind}:{d.index}") is d and xp.device(f" {kind.upper()}:{d.index} ") is d
    assert d != 0 and d != None  # noqa: E711
    assert {kind: 1}.get(d) == (1 if d.index == 0 else None)   # {"wgpu": 1}[x.device]
    assert repr(d) == f"Device('{s}')"
    import pickle
    assert pickle.loads(pickle.dumps(d)) is d
    with pytest.raises(TypeError, match="ruda.device"):
        xp.Device("cpu")


def test_devices_listing(device):
    devs = xp.devices()
    assert devs[0] == "cpu"
    assert device in devs
    assert len(set(devs)) == len(devs)
    assert xp.__array_namespace_info__().devices() == devs


def test_unknown_device_lists_available():
    listing = ", ".join(str(d) for d in xp.devices())
    with pytest.raises(ValueError, match=rf"unknown device 'tpu'; available devices: {listing}"):
        xp.device("tpu")
    with pytest.raises(ValueError, match=rf"unknown device 'cpu:1'.*{listing}"):
        xp.device("cpu:1")
    with pytest.raises(ValueError, match="device must be a ruda.Device or a string"):
        xp.device(3)
    with pytest.raises(ValueError, match="available devices"):
        xp.zeros(3, device="gpu")
    for kind in ("cuda", "wgpu"):
        if not any(str(d).startswith(kind) for d in xp.devices()):
            with pytest.raises(ValueError, match=rf"device '{kind}:7' is not available.*available devices: {listing}"):
                xp.device(f"{kind}:7")


@pytest.mark.parametrize("kind,extra", [("wgpu", r"ruda\[wgpu\]"),
                                        ("cuda", r"ruda\[cuda12\] or ruda\[cuda13\]")])
def test_a_backend_that_cannot_import_names_its_extra(monkeypatch, kind, extra):
    from ruda import backends

    def missing(k):
        raise ImportError(f"No module named {k!r}")
    monkeypatch.setattr(backends, "backend_class", missing)
    assert re.fullmatch(rf"cannot import its backend \(No module named '{kind}'\); install {extra}",
                        backends.unavailable(kind))


def test_default_device_is_cpu_without_configuration(clean_default):
    assert xp.__array_namespace_info__().default_device() == "cpu"
    assert xp.asarray([1.5, 2.5]).device == "cpu"


def test_explicit_device_overrides_default(device, clean_default):
    with xp.default_device("cpu"):
        x = xp.zeros(3, device=device)
        assert x.device == device
        assert xp.asarray(rand(np.random.default_rng(1), (3,), supported(device)[0]), device=device).device == device


def test_default_device_precedence(device, clean_default, monkeypatch):
    other = _other_device(device)
    info = xp.__array_namespace_info__()
    monkeypatch.setenv("RUDA_DEVICE", str(other))
    _devices.read_env()
    assert info.default_device() == other and xp.arange(3).device == other          # env
    xp.set_default_device(device)
    assert info.default_device() == device and xp.ones(2).device == device           # set > env
    with xp.default_device(other) as d:
        assert d == other
        assert info.default_device() == other and xp.linspace(0, 1, 3).device == other   # with > set
        with xp.default_device(device):
            assert xp.eye(2).device == device                                          # innermost wins
        assert xp.full(2, 1.5).device == other
    assert info.default_device() == device
    xp.set_default_device(None)
    assert info.default_device() == other                                             # back to env
    monkeypatch.delenv("RUDA_DEVICE")
    _devices.read_env()
    assert info.default_device() == "cpu"


def test_default_device_block_and_setter_with_one_device(clean_default, monkeypatch):
    """The mechanics that do not need a second device: blocks nest and restore; bad names fail."""
    with xp.default_device("cpu") as d:
        assert d == "cpu" and xp.zeros(1).device == "cpu"
    with pytest.raises(ValueError, match="unknown device 'nope'"):
        xp.set_default_device("nope")
    with pytest.raises(ValueError, match="unknown device 'nope'"):
        with xp.default_device("nope"):
            pass
    monkeypatch.setenv("RUDA_DEVICE", "nope")
    _devices.read_env()
    with pytest.raises(ValueError, match="nope"):
        xp.zeros(2)
    xp.set_default_device("cpu")                 # the setter takes precedence over a bad env
    assert xp.zeros(2).device == "cpu"


def test_ruda_device_env_at_import(device):
    env = dict(os.environ, RUDA_DEVICE=str(device))
    out = subprocess.run([sys.executable, "-c", "import ruda; print(ruda.zeros(2).device)"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(device)


def test_mixing_devices_raises(device):
    other = _other_device(device)
    f = [d for d in supported(device, "real floating") if d in supported(other, "real floating")][0]
    rng = np.random.default_rng(3)
    x = xp.asarray(rand(rng, (3,), f), device=device)
    y = xp.asarray(rand(rng, (3,), f), device=other)
    both = rf"'{device}'.*'{other}'"
    with pytest.raises(ValueError, match=rf"ruda\.add: arrays are on different devices, {both}"):
        xp.add(x, y)
    with pytest.raises(ValueError, match=both):
        x * y
    with pytest.raises(ValueError, match=rf"ruda\.matmul:.*{both}"):
        xp.matmul(xp.reshape(x, (1, 3)), xp.reshape(y, (3, 1)))
    with pytest.raises(ValueError, match=rf"ruda\.concat:.*{both}"):
        xp.concat([x, y])
    with pytest.raises(ValueError, match=rf"ruda\.where:.*'{other}'.*'{device}'|ruda\.where:.*{both}"):
        xp.where(y > 0, x, x)
    with pytest.raises(ValueError, match=rf"__setitem__.*{both}"):
        x[0:2] = y[0:2]
    idx = xp.asarray(np.asarray([0, 1]), device=other)
    with pytest.raises(ValueError, match=rf"ruda\.take:.*{both}"):
        xp.take(x, idx)
    # explicit transfer is the way
    np.testing.assert_allclose(np.asarray((x + y.to_device(device)).to_device("cpu")),
                               np.asarray(x.to_device("cpu")) + np.asarray(y.to_device("cpu")), rtol=1e-6)


def test_a_dtype_the_target_lacks_is_cast_on_the_way(device):
    """asarray/astype with a dtype and another device cast where the source's dtype is, so a
    float64 or int64 cpu array reaches a device without them; to_device alone says what to do;
    result_type takes the arrays' device (its default float beside a Python float)."""
    cpu = xp.device("cpu")
    f64 = xp.asarray(np.asarray([1.5, -2.25, 3e38]), device=cpu)
    i64 = xp.asarray(np.asarray([1, -7, 2**40]), device=cpu)
    f, i = supported(device, "real floating")[0], supported(device, "signed integer")[-1]
    for y in (xp.asarray(f64, dtype=f, device=device), xp.astype(f64, f, device=device)):
        assert y.device == device and y.dtype == f
        np.testing.assert_array_equal(np.asarray(y.to_device(cpu)), np.asarray([1.5, -2.25, 3e38], f))
    y = xp.astype(i64, f, device=device)
    np.testing.assert_array_equal(np.asarray(y.to_device(cpu)), np.asarray([1, -7, 2**40], f))
    with pytest.raises(TypeError, match=r"ruda\.asarray: casting complex complex128 to"):
        xp.asarray(xp.asarray(np.asarray([1j])), dtype=f, device=device)
    if not device.backend.supports(np.dtype(np.float64)):
        with pytest.raises(TypeError, match=r"ruda: to_device: float64 is not supported on"):
            f64.to_device(device)
    ints = xp.asarray(np.asarray([1, 2]), dtype=i, device=device)
    assert xp.result_type(ints, 1.0) == (ints + 1.0).dtype == \
        xp.__array_namespace_info__().default_dtypes(device=device)["real floating"]


def test_to_host_later_reads_the_values_of_its_call(device):
    """The backend's queued copy to the host gives the values the array had when it was asked
    for, even when later work on the device overwrites the array before the read."""
    x = xp.asarray(np.arange(6, dtype=np.int32), device=device)
    read = device.backend.to_host_later(x.native)
    x[...] = xp.asarray(np.full(6, 7, dtype=np.int32), device=device)
    got = read()
    assert isinstance(got, np.ndarray) and got.dtype == np.int32
    np.testing.assert_array_equal(got, np.arange(6))
    np.testing.assert_array_equal(x.to_device("cpu"), np.full(6, 7))
