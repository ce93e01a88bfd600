"""ruda: one array type, many devices.

``import ruda as xp`` is a Python Array API namespace (standard 2025.12) whose
arrays live on the host ("cpu"), NVIDIA GPUs ("cuda") or any GPU via WebGPU
("wgpu").  See README.md.
"""
import math as _math
import sys as _sys

from ruda._version import __version__  # noqa: F401
__array_api_version__ = "2025.12"

from ruda import _dtypes  # noqa: E402

# the public dtype objects (ruda._dtypes.DType): never equal to None, unlike NumPy's
bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float32, float64, complex64, \
    complex128 = map(_dtypes.public, _dtypes.all_dtypes)
float16 = _dtypes.public(_dtypes.float16)        # extension dtypes: ruda.float16, ruda.bfloat16
if _dtypes.bfloat16 is not None:       # else no ruda.bfloat16: a None would read as dtype=None
    bfloat16 = _dtypes.public(_dtypes.bfloat16)
from ruda import _devices  # noqa: E402
from ruda._devices import Device, default_device, set_default_device  # noqa: E402,F401
from ruda._devices import device, available as devices  # noqa: E402,F401
from ruda import _array  # noqa: E402
from ruda._array import Array  # noqa: E402,F401
from ruda._host_conversion import HostConversionWarning, allow_host_conversion  # noqa: E402,F401
from ruda._info import __array_namespace_info__  # noqa: E402,F401
if _array._speedups is not None:   # the C accelerator's fast paths: ruda/_accelerate.py lists them
    from ruda import _accelerate  # noqa: E402
    _accelerate.install()
from ruda._creation import (  # noqa: E402,F401
    arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace, meshgrid,
    ones, ones_like, tril, triu, zeros, zeros_like,
)
from ruda._data_type import astype, can_cast, finfo, iinfo, isdtype, result_type  # noqa: E402,F401
from ruda._elementwise import (  # noqa: E402,F401  (the names of UNARY and BINARY, and clip)
    abs, acos, acosh, add, asin, asinh, atan, atan2, atanh, bitwise_and, bitwise_invert,
    bitwise_left_shift, bitwise_or, bitwise_right_shift, bitwise_xor, ceil, clip, conj, copysign,
    cos, cosh, divide, equal, exp, expm1, floor, floor_divide, greater, greater_equal, hypot, imag,
    isfinite, isinf, isnan, less, less_equal, log, log1p, log2, log10, logaddexp, logical_and,
    logical_not, logical_or, logical_xor, maximum, minimum, multiply, negative, nextafter,
    not_equal, positive, pow, real, reciprocal, remainder, round, sign, signbit, sin, sinh, sqrt,
    square, subtract, tan, tanh, trunc,
)
from ruda._indexing import take, take_along_axis  # noqa: E402,F401
from ruda._linear_algebra import matmul, matrix_transpose, tensordot, vecdot  # noqa: E402,F401
from ruda._manipulation import (  # noqa: E402,F401
    broadcast_arrays, broadcast_shapes, broadcast_to, concat, expand_dims, flip, moveaxis,
    permute_dims, repeat, reshape, roll, squeeze, stack, tile, unstack,
)
from ruda._searching import argmax, argmin, count_nonzero, nonzero, searchsorted, where  # noqa: E402,F401
from ruda._set import isin, unique_all, unique_counts, unique_inverse, unique_values  # noqa: E402,F401
from ruda._sorting import argsort, sort  # noqa: E402,F401
from ruda._special import erf  # noqa: E402,F401
from ruda._statistical import (  # noqa: E402,F401
    all, any, cumulative_prod, cumulative_sum, diff, max, mean, min, prod, std, sum, var,
)
from ruda import _operators  # noqa: E402,F401  (Array's operators)
from ruda import _methods  # noqa: E402,F401  (installs x.sum(), x.astype(), ...)
from ruda import fft, linalg, random  # noqa: E402,F401
from ruda import _hints  # noqa: E402

_array.namespace = _sys.modules[__name__]   # what x.__array_namespace__() returns

_devices.read_env()

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

__all__ = [
    "__array_api_version__", "__array_namespace_info__",
    # data types and constants
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
    "float64", "complex64", "complex128", "e", "inf", "nan", "newaxis", "pi",
    # creation
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # data type functions
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    # elementwise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
    "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan",
    "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign",
    "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
    # indexing, linear algebra, manipulation, searching, sets, sorting, statistics, utilities
    "take", "take_along_axis", "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip",
    "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile", "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values", "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
    # the extensions
    "fft", "linalg", "random",
    # ruda's own: the array and device types, device selection, float16/bfloat16, erf, host conversion
    "Array", "Device", "device", "devices", "default_device", "set_default_device", "float16",
    "bfloat16", "erf",
    "HostConversionWarning", "allow_host_conversion",
]

if _dtypes.bfloat16 is None:
    __all__.remove("bfloat16")

# a NumPy/CuPy/PyTorch name (ruda.concatenate) gets the standard's spelling in its AttributeError
_hinted_getattr = _hints.module_getattr(__name__)


def __getattr__(name):
    if name == "bfloat16":      # (defined above where ml_dtypes is installed)
        raise AttributeError("module 'ruda' has no attribute 'bfloat16': it needs ml_dtypes, "
                             "which is not installed (pip install ruda[bf16])")
    return _hinted_getattr(name)
