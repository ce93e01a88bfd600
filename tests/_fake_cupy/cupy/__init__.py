"""NumPy posing as CuPy (see tests/_fake_cupy/README.md)."""
import numpy as _np
from numpy import *  # noqa: F401,F403
from numpy import abs, bool_, max, min, ndarray, round  # noqa: F401

__version__ = "0+fake"
bool = _np.bool_
del errstate  # noqa: F821 - CuPy has none (cupyx.errstate is another thing)


def asarray(a, dtype=None, **kwargs):    # a host -> device copy in CuPy
    return _np.array(a, dtype=dtype, copy=True)


def arange(start, stop=None, step=1, dtype=None):
    """As CuPy's: start and step become dtype's scalars before the fill (out of range raises)."""
    if dtype is not None and _np.dtype(dtype).kind in "iu":
        t = _np.dtype(dtype).type
        t(0 if stop is None else start), t(step)
    return _np.arange(start, stop, step, dtype=dtype)


from . import _core, cuda, fft, linalg  # noqa: E402,F401
