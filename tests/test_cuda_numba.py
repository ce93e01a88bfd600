"""Numba CUDA kernels of the cuda backend: under Numba's simulator (any machine with Numba,
small inputs) and on a GPU through ruda.repeat."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ruda
from ruda._devices import unavailable

CUDA_REASON = unavailable("cuda")


def _has_numba():
    try:
        import numba  # noqa: F401
        return True
    except Exception:
        return False


SIM_CODE = textwrap.dedent("""
    import numpy as np
    from ruda.backends.cuda import _numba
    assert _numba.available() and _numba._simulator()
    rng = np.random.default_rng(int(__import__("sys").argv[1]))
    for n, m in [(1, 1), (7, 3), (40, 5), (0, 4)]:
        x = rng.standard_normal((n, m))
        reps = rng.integers(0, 4, size=n)
        ends = np.cumsum(reps)
        out = np.full((int(ends[-1]) if n else 0, m), np.nan)
        if n and out.size:
            grid, block = _numba.repeat_grid(n, m)
            _numba.launch("repeat_rows", grid, block, x, ends - reps, reps, out)
        np.testing.assert_array_equal(out, np.repeat(x, reps, axis=0))
    print("ok")
""")


@pytest.mark.skipif(not _has_numba(), reason="Numba is not installed (pip install numba)")
def test_numba_kernels_under_the_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    seed = str(np.random.default_rng().integers(1 << 30))
    r = subprocess.run([sys.executable, "-c", SIM_CODE, seed], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(CUDA_REASON is not None, reason=f"no cuda device: {CUDA_REASON}")
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_repeat_with_array_repeats_on_cuda(rng, dtype):
    from ruda.backends.cuda import _numba
    a = (rng.standard_normal((6, 5, 4)) * 3).astype(dtype)
    x = ruda.asarray(a, device="cuda")
    before = _numba.STATS["launches"]
    for axis in (0, 1, 2, None):
        n = a.size if axis is None else a.shape[axis]
        reps = rng.integers(0, 4, size=n)
        got = ruda.repeat(x, ruda.asarray(reps, device="cuda"), axis=axis)
        np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), np.repeat(a, reps, axis=axis))
    got = ruda.repeat(x, ruda.asarray(np.int64(2), device="cuda"), axis=1)
    np.testing.assert_array_equal(np.asarray(got.to_device("cpu")), np.repeat(a, 2, axis=1))
    if _has_numba() and _numba.disabled is None:
        assert _numba.STATS["launches"] > before, "the Numba kernel did not run"
    elif _numba.disabled is not None:
        pytest.skip(f"Numba's CUDA target failed here; the CuPy path ran instead: {_numba.disabled}")
