"""ruda: one array type, many devices.

``import ruda as xp`` is a Python Array API namespace (standard 2025.12) whose
arrays live on the host ("cpu"), NVIDIA GPUs ("cuda") or any GPU via WebGPU
("wgpu").  See README.md.
"""
import math as _math

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

from ruda import _dtypes  # noqa: E402

# the public dtype objects (ruda._dtypes.DType): never equal to None, unlike NumPy's
bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, complex64, \
    complex128 = map(_dtypes.public, _dtypes.all_dtypes)
bfloat16 = _dtypes.public(_dtypes.bfloat16) if _dtypes.bfloat16 is not None else None
from ruda import _devices  # noqa: E402
from ruda._devices import Device, default_device, set_default_device  # noqa: E402,F401
from ruda._devices import device, available as devices  # noqa: E402,F401
from ruda._array import Array  # noqa: E402,F401
from ruda._info import __array_namespace_info__  # noqa: E402,F401
from ruda._creation import (  # noqa: E402,F401
    arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace, meshgrid,
    ones, ones_like, tril, triu, zeros, zeros_like,
)
from ruda._data_type import astype, can_cast, finfo, iinfo, isdtype, result_type  # noqa: E402,F401
from ruda._elementwise import *  # noqa: E402,F401,F403  (names from UNARY and BINARY)
from ruda._elementwise import clip  # noqa: E402,F401
from ruda._indexing import take, take_along_axis  # noqa: E402,F401
from ruda._linear_algebra import matmul, matrix_transpose, tensordot, vecdot  # noqa: E402,F401
from ruda._manipulation import (  # noqa: E402,F401
    broadcast_arrays, broadcast_shapes, broadcast_to, concat, expand_dims, flip, moveaxis,
    permute_dims, repeat, reshape, roll, squeeze, stack, tile, unstack,
)
from ruda._searching import argmax, argmin, count_nonzero, nonzero, searchsorted, where  # noqa: E402,F401
from ruda._set import isin, unique_all, unique_counts, unique_inverse, unique_values  # noqa: E402,F401
from ruda._sorting import argsort, sort  # noqa: E402,F401
from ruda._statistical import (  # noqa: E402,F401
    all, any, cumulative_prod, cumulative_sum, diff, max, mean, min, prod, std, sum, var,
)
from ruda import _operators  # noqa: E402,F401  (installs Array operators)
from ruda import _methods  # noqa: E402,F401  (installs x.sum(), x.astype(), ...)
from ruda import fft, linalg  # noqa: E402,F401

_devices.read_env()

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None
