"""The one fake CuPy of the tests: NumPy posing as CuPy (see README.md here).

Two ways in:

* a separate process with this folder on ``PYTHONPATH`` and ``-p fake_cupy_plugin``: ``cupy``
  *is* the fake there, and ruda's cuda backend runs on it (tests/test_cuda_bf16_without_gpu.py);
* in-process, :func:`install` puts a fresh copy of the fake ``cupy``, ``cupyx`` and
  ``cupy_backends`` into ``sys.modules`` for one test (``monkeypatch`` puts back whatever was
  there, a real CuPy included), and :func:`load` gives a fresh copy without installing it.
  Each copy has its own state (device count, compute types, math mode).
"""
import importlib
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
NAMES = ("cupy", "cupyx", "cupy_backends")
MODULES = ("cupy", "cupy._core", "cupy.cuda", "cupy.cuda.device", "cupyx",
           "cupy_backends.cuda.libs.cublas")


def _ours(name):
    return name.split(".")[0] in NAMES


def load():
    """{module name: module} of a fresh fake, imported aside (``sys.modules`` is left as it was)."""
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if _ours(n)}
    sys.path.insert(0, str(HERE))
    fresh = {}
    try:
        for name in MODULES:
            importlib.import_module(name)
        fresh = {n: m for n, m in sys.modules.items() if _ours(n)}
    finally:
        sys.path.remove(str(HERE))
        for n in [n for n in sys.modules if _ours(n)]:
            del sys.modules[n]
        sys.modules.update(saved)
    return fresh


def install(monkeypatch, device_count=1):
    """A fresh fake in ``sys.modules`` until the test ends; returns its ``cupy``.
    ``device_count``: what ``cupy.cuda.runtime.getDeviceCount()`` reports (an exception: raised)."""
    mods = load()
    for name in [n for n in sys.modules if _ours(n)]:
        monkeypatch.delitem(sys.modules, name)
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    cp = mods["cupy"]
    cp.cuda.runtime.device_count = device_count
    return cp
