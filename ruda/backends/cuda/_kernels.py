"""NVRTC for the cuda backend: compile CUDA C through CuPy, cache binaries, and ruda's own
vectorized kernels (their source: :mod:`ruda.runtime.kernels.fast_cuda`).

Compiled with NVRTC through CuPy's compiler with ``-ftz=false`` (IEEE subnormals,
as NumPy; CuPy's RawModule always adds ``-ftz=true``).  Two-level cache:
``_MODULES`` (in-process) holds loaded modules; binaries are kept on disk in
``platformdirs.user_cache_dir("ruda")/cuda`` (or ``$RUDA_CUDA_CACHE``), named by
the SHA-256 of source, options, architecture and NVRTC version.

This module imports CuPy; it is only imported once CuPy imports.
"""
import hashlib
import os
import tempfile

import cupy
from cupy.cuda import compiler as _compiler
from cupy.cuda import function as _function

from ruda.runtime import env
from ruda.runtime.kernels.fast_cuda import (  # noqa: F401  (the kernels' tables, for _fast and the bench)
    BINARY, CONFIG, CTYPES, FLOATS, SUM_ACC, source, supports_binary,
)

_MODULES = {}   # (kind, name, dtype, config items, device id) -> loaded module
OPTIONS = ("--std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-fmad=true")


def cache_dir():
    d = env.text("RUDA_CUDA_CACHE")
    if not d:
        try:
            import platformdirs
            d = os.path.join(platformdirs.user_cache_dir("ruda"), "cuda")
        except ImportError:
            d = os.path.join(os.path.expanduser("~"), ".cache", "ruda", "cuda")
    return d


def _arch():
    try:
        return _compiler._get_arch()
    except Exception:  # a CuPy without the private helper
        return cupy.cuda.Device().compute_capability


def compile_source(src, options=OPTIONS):
    """Load CUDA C ``src`` as a module on the current device: in-process memo, then disk, then NVRTC."""
    arch = _arch()
    dev = cupy.cuda.runtime.getDevice()
    key = (src, options, arch, dev)
    m = _MODULES.get(key)
    if m is not None:
        return m
    try:
        nvrtc = cupy.cuda.nvrtc.getVersion()
    except Exception:
        nvrtc = None
    digest = hashlib.sha256(repr((src, options, arch, nvrtc)).encode()).hexdigest()
    path = os.path.join(cache_dir(), digest + ".bin")
    m = None
    try:
        with open(path, "rb") as f:
            binary = f.read()
    except OSError:
        binary = None
    if binary:
        try:
            m = _function.Module()
            m.load(binary)
        except Exception:  # noqa: BLE001 - a damaged file (CUDA_ERROR_INVALID_IMAGE): compile
            m = None       # afresh and replace it, rather than fail on it in every process
            try:
                os.unlink(path)
            except OSError:
                pass
    if m is None:
        binary, _ = _compiler.compile_using_nvrtc(src, options=options, arch=arch, cache_in_memory=True)
        _store(path, binary)
        m = _function.Module()
        m.load(binary)
    _MODULES[key] = m
    return m


def _store(path, binary):
    """Write ``binary`` to ``path`` atomically (a temporary file, then ``os.replace``)."""
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ruda-", suffix=".tmp", dir=os.path.dirname(path))
        with os.fdopen(fd, "wb") as f:
            f.write(binary)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass   # an unwritable cache only costs a recompile next time
    finally:
        if tmp is not None:     # the write or the replace failed: leave no temporary behind
            try:
                os.unlink(tmp)
            except OSError:
                pass


def module(kind, name, dtype, config=None):
    """The compiled module of a kernel family."""
    return compile_source(source(kind, name, dtype, config))
