"""Opt-in host copies for NumPy-only code: ``np.asarray`` of a device array.

By default ``np.asarray(x)`` (``x.__array__``) of an array that is not on the host raises
TypeError, as CuPy and PyTorch do: nothing moves between devices by itself.  Code that goes
through NumPy (many SciPy functions, older libraries) can be allowed to run on device arrays:

* ``with ruda.allow_host_conversion(): ...`` for a block (the current thread or asyncio task;
  ``allow_host_conversion(False)`` forbids again inside it), or
* ``RUDA_ALLOW_HOST_CONVERSION=1`` in the environment when ruda is imported (the whole process).

Then ``__array__`` of a device array returns a host copy and warns (:class:`HostConversionWarning`)
naming the call site: the first frame outside ruda, i.e. the code that called NumPy.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import warnings
from collections.abc import Iterator

from ruda import _dtypes
from ruda.runtime import env

_ENV = "RUDA_ALLOW_HOST_CONVERSION"
_RUDA_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class HostConversionWarning(UserWarning):
    """A device array was copied to the host for NumPy (allowed by ``ruda.allow_host_conversion``)."""


# read at import: a value that is not a switch warns and leaves host copies forbidden
_allowed = contextvars.ContextVar("ruda_host_conversion",
                                  default=env.flag(_ENV, False, at_import=True))


@contextlib.contextmanager
def allow_host_conversion(enabled: bool = True) -> Iterator[None]:
    """Within the block, ``np.asarray`` of a device array makes a host copy, with a
    :class:`HostConversionWarning` naming the call site (``enabled=False``: raise TypeError,
    the default).  Usable as a decorator too."""
    if enabled.__class__ is not bool:
        raise TypeError(f"ruda.allow_host_conversion: enabled must be True or False; got {enabled!r}")
    token = _allowed.set(enabled)
    try:
        yield
    finally:
        _allowed.reset(token)


def to_numpy(x, dtype, copy):
    """``x.__array__(dtype, copy)`` for ``x`` not on the host: a host copy when allowed."""
    if not _allowed.get():
        raise TypeError(f"ruda: converting to a NumPy array needs a host array; this array is on "
                        f"'{x.device}': call x.to_device('cpu') first (or allow host copies with "
                        f"ruda.allow_host_conversion() or {_ENV}=1)")
    if copy is False:
        raise ValueError(f"ruda: converting to a NumPy array with copy=False: this array is on "
                         f"'{x.device}', so a NumPy array of it is a host copy")
    frame, level = sys._getframe(0), 1       # the first frame outside ruda called NumPy
    while frame is not None and frame.f_code.co_filename.startswith(_RUDA_DIR):
        frame, level = frame.f_back, level + 1
    site = "?" if frame is None else \
        f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"
    warnings.warn(f"ruda: host copy of an array on '{x.device}' (shape {x.shape}, "
                  f"{_dtypes.name(x._dtype)}) for NumPy at {site}, allowed by "
                  f"ruda.allow_host_conversion / {_ENV}",
                  HostConversionWarning, stacklevel=level)
    host = x.to_device("cpu")._data
    return host if dtype is None or host.dtype == dtype else host.astype(dtype)
