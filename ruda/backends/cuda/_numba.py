"""Numba CUDA kernels of the cuda backend: kernels that read best as Python.

Optional: ``available()`` is False without Numba (then the backend keeps its CuPy
path).  The kernels are plain ``numba.cuda.jit`` functions, so they also run under
Numba's simulator (``NUMBA_ENABLE_CUDASIM=1``) on NumPy arrays, which is how CI
tests them without a GPU (tests/test_cuda_numba.py, small inputs).

On a GPU they take CuPy arrays (``__cuda_array_interface__``, no copies) and run
on CuPy's current stream (``launch`` wraps it with ``numba.cuda.external_stream``).
"""
_numba_cuda = None
_error = None


def available():
    """Whether Numba's CUDA target imports here (simulator included)."""
    global _numba_cuda, _error
    if _numba_cuda is None and _error is None:
        try:
            from numba import cuda
            _numba_cuda = cuda
        except Exception as e:  # ImportError, or a Numba that does not support this NumPy
            _error = e
    return _numba_cuda is not None


_kernels = {}
cuda = None     # numba.cuda, set on first use (kernels refer to it as a module global, as the simulator needs)


def _repeat_rows(x, starts, reps, out):
    """out[starts[i] + k, :] = x[i, :] for k < reps[i]: one thread per (input row, column)."""
    j, i = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        s = starts[i]
        v = x[i, j]
        for k in range(reps[i]):
            out[s + k, j] = v


def kernels():
    """The jitted kernels, built on first use."""
    global cuda
    if _kernels:
        return _kernels
    if not available():
        raise ImportError(f"ruda: Numba's CUDA target is not available ({_error})")
    cuda = _numba_cuda
    _kernels["repeat_rows"] = cuda.jit(_repeat_rows)
    return _kernels


def launch(name, grid, block, *args, stream_ptr=None):
    """Run kernel ``name``; on a GPU on the CUDA stream ``stream_ptr`` (CuPy's current one)."""
    k = kernels()[name]
    STATS["launches"] += 1
    if stream_ptr is not None and not _simulator():
        stream = _numba_cuda.external_stream(stream_ptr)
        k[grid, block, stream](*args)
    else:
        k[grid, block](*args)


def _simulator():
    import os
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def repeat_grid(n_rows, n_cols):
    """Launch configuration of ``repeat_rows`` for an (n_rows, n_cols) input (x: columns, coalesced)."""
    bx, by = 32, 8
    return (max(1, -(-n_cols // bx)), max(1, -(-n_rows // by))), (bx, by)


STATS = {"launches": 0}
disabled = None     # why the Numba path is off after a failed first launch (None: on)
