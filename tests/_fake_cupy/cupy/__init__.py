"""NumPy posing as CuPy (see tests/_fake_cupy/README.md)."""
import numpy as _np
from numpy import *  # noqa: F401,F403
from numpy import abs, bool_, max, min, ndarray, round  # noqa: F401

__version__ = "0+fake"
bool = _np.bool_
del errstate  # noqa: F821 - CuPy has none (cupyx.errstate is another thing)


def asarray(a, dtype=None, **kwargs):    # a host -> device copy in CuPy
    return _np.array(a, dtype=dtype, copy=True)


from . import _core, cuda, fft, linalg  # noqa: E402,F401
