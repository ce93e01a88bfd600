"""tests/test_cuda_bf16.py through ruda's real cuda backend on NumPy posing as CuPy (no GPU).

A separate process (a fake ``cupy`` must be the one imported): see tests/_fake_cupy/README.md.
Checks the frontend -> backend -> ``_bf16`` routes, GEMM operand layouts and kernels' logic;
the GPU run of tests/test_cuda_bf16.py checks CuPy and the device.
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from ruda._devices import unavailable

HERE = pathlib.Path(__file__).parent


@pytest.mark.skipif(unavailable("cuda") is None, reason="a cuda device runs tests/test_cuda_bf16.py itself")
@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ for the bfloat16 kernels")
def test_cuda_bf16_suite_on_numpy_posing_as_cupy():
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE / "_fake_cupy"), str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "fake_cupy_plugin",
           "-k", "not torch", str(HERE / "test_cuda_bf16.py")]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, cwd=str(HERE.parent))
    out = p.stdout + p.stderr
    if "FAKE-CUPY-UNUSABLE" in out:
        pytest.skip(out[out.index("FAKE-CUPY-UNUSABLE"):].splitlines()[0])
    assert p.returncode == 0, out[-6000:]
    assert " skipped" not in out.splitlines()[-1], out[-3000:]
