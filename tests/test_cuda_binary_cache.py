"""The cuda backend's disk cache of compiled binaries (ruda/backends/cuda/_kernels.py), on
tests/_fake_cupy with NVRTC and module loading stood in for (no GPU needed): a damaged cached
binary is compiled afresh and replaced, and a failed write leaves no temporary file."""
import importlib
import sys

import pytest

import _fake_cupy

GOOD = b"\x7fELF a cubin"


class _Module:
    """cupy.cuda.function.Module: loads only what the stand-in NVRTC made."""

    def load(self, binary):
        if binary != GOOD:
            raise RuntimeError("CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid")
        self.binary = binary


@pytest.fixture
def kernels(monkeypatch, tmp_path):
    """A fresh ruda.backends.cuda._kernels on the fake CuPy, caching in tmp_path/cache;
    ``kernels.compiled`` counts NVRTC runs."""
    pkg = importlib.import_module("ruda.backends.cuda")     # on the real CuPy (or none)
    _fake_cupy.install(monkeypatch)
    name = "ruda.backends.cuda._kernels"
    # the module imported on the fake is dropped after the test, a real one put back
    monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.setattr(pkg, "_kernels", None, raising=False)
    mod = importlib.import_module(name)
    monkeypatch.setitem(sys.modules, name, mod)
    compiled = []

    def compile_using_nvrtc(src, options=(), arch=None, cache_in_memory=False):
        compiled.append(src)
        return GOOD, None

    monkeypatch.setattr(mod._compiler, "compile_using_nvrtc", compile_using_nvrtc, raising=False)
    monkeypatch.setattr(mod._function, "Module", _Module)
    monkeypatch.setenv("RUDA_CUDA_CACHE", str(tmp_path / "cache"))
    mod.compiled = compiled
    return mod


def test_damaged_binary_is_recompiled(kernels, tmp_path):
    src = "extern \"C\" __global__ void k() {}"
    assert kernels.compile_source(src).binary == GOOD and len(kernels.compiled) == 1
    (path,) = (tmp_path / "cache").iterdir()
    assert path.suffix == ".bin" and path.read_bytes() == GOOD
    kernels._MODULES.clear()                      # a new process: from the disk, no NVRTC
    assert kernels.compile_source(src).binary == GOOD and len(kernels.compiled) == 1
    for damage in (b"garbage", GOOD[:3]):          # another program's bytes, a truncated file
        path.write_bytes(damage)
        kernels._MODULES.clear()
        assert kernels.compile_source(src).binary == GOOD
        assert path.read_bytes() == GOOD           # replaced: the next process loads it
    assert len(kernels.compiled) == 3
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name]


def test_failed_write_leaves_no_temporary_file(kernels, tmp_path):
    src = "extern \"C\" __global__ void k2() {}"
    kernels.compile_source(src)
    (path,) = (tmp_path / "cache").iterdir()
    path.unlink()
    path.mkdir()                                  # os.replace onto a folder fails
    kernels._MODULES.clear()
    assert kernels.compile_source(src).binary == GOOD and len(kernels.compiled) == 2
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [path.name]
    assert list(path.iterdir()) == []
