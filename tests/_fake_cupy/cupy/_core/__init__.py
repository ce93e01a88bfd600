"""CuPy's per-dtype compute-type table (the float32 slot is what ruda's TF32 switch reads)."""
import numpy as _np

COMPUTE_TYPE_DEFAULT = 1
compute_types = {_np.dtype(_np.float32): COMPUTE_TYPE_DEFAULT}


def get_compute_type(dtype):
    return compute_types[_np.dtype(dtype)]


def set_compute_type(dtype, compute_type):
    assert _np.dtype(dtype) == _np.float32, dtype
    compute_types[_np.dtype(dtype)] = compute_type
