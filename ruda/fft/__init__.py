"""The fft extension of the array API standard.

Each function checks its arguments and calls the backend method ``fft_<name>``.
"""

from ruda import _dtypes, _hints
from ruda import _validation as _v
from ruda._array import Array as _Array
from ruda._data_type import astype as _astype
from ruda._typing import Axis as _Axis, Device as _Device, DType as _DType

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
# function -> (input category, transforms over several axes)
_TRANSFORMS = {
    "fft": ("complex floating-point", False), "ifft": ("complex floating-point", False),
    "fftn": ("complex floating-point", True), "ifftn": ("complex floating-point", True),
    "rfft": ("real floating-point", False), "irfft": ("complex floating-point", False),
    "rfftn": ("real floating-point", True), "irfftn": ("complex floating-point", True),
    "hfft": ("complex floating-point", False), "ihfft": ("real floating-point", False),
}


def _check(fn, x, norm):
    """x, checked; real floating input to a transform of complex input is taken as complex of
    the same precision, as NumPy, CuPy and PyTorch do (the standard says "should be complex")."""
    _v.array(f"fft.{fn}", "x", x)
    cat = _TRANSFORMS[fn][0]
    if x._dtype not in _dtypes.CATEGORIES[cat]:
        if cat == "complex floating-point" and x._dtype in _dtypes.CATEGORIES["real floating-point"]:
            x = _astype(x, _dtypes.complex_of(x._dtype), fn=f"fft.{fn}")
        else:
            cat = "complex or real floating-point" if cat.startswith("complex") else cat
            raise TypeError(f"ruda.fft.{fn}: x must have a {cat} dtype; got {_dtypes.name(x._dtype)}")
    if norm not in _NORMS:
        raise ValueError(f"ruda.fft.{fn}: norm must be one of {_NORMS}; got {norm!r}")
    if x.ndim == 0:
        raise ValueError(f"ruda.fft.{fn}: x must have at least one dimension")
    return x


def _too_short(fn, x, axis):
    """The error of a complex-to-real transform left to its 2 (m - 1) points, too few."""
    return ValueError(f"ruda.fft.{fn}: axis {axis} needs at least 2 points; got shape {x.shape}")


def _padded(x, over, points):
    """x's data; where an axis in ``over`` is empty (the checks let one through only with its
    number of points), zeros with that many points there: x zero-padded, whose transform every
    backend computes (pocketfft's complex-to-real transforms leave theirs unset for an empty axis)."""
    empty = [(a, n) for a, n in zip(over, points) if not x.shape[a]]
    if not empty:
        return x._data
    shape = list(x.shape)
    for a, n in empty:
        shape[a] = n
    return x._device.backend.full(tuple(shape), 0, x._data.dtype)


def _check_1d(fn, x, n, axis, norm):
    """A one-axis transform's checks: (x's data zero-padded where empty, n or None, the
    normalized axis)."""
    x = _check(fn, x, norm)
    axis = _v.axis(f"fft.{fn}", axis, x.ndim)
    if n is not None:
        n = _v.integer(f"fft.{fn}", "n", n)
        if n < 1:
            raise ValueError(f"ruda.fft.{fn}: n must be positive; got {n}")
    elif fn in ("irfft", "hfft") and x.shape[axis] < 2:
        raise _too_short(fn, x, axis)
    elif x.shape[axis] == 0:
        raise ValueError(f"ruda.fft.{fn}: axis {axis} has no points to transform; got shape {x.shape}")
    return _padded(x, (axis,), (n,)), n, axis


def _sequence(fn, arg, value):
    """``s`` or ``axes`` as a tuple (None stays None); a bare int, which NumPy takes for one
    axis, is refused: the standard takes sequences."""
    if value is None or isinstance(value, tuple):
        return value
    try:
        return tuple(value)
    except TypeError:
        raise TypeError(f"ruda.fft.{fn}: {arg} must be a sequence of integers; got "
                        f"{type(value).__name__}") from None


def _check_nd(fn, x, s, axes, norm):
    """A several-axes transform's checks: (x's data zero-padded where empty, s or None, axes or
    None; both given when s is)."""
    x = _check(fn, x, norm)
    given = "axes=()" if axes is not None else "s=()"     # which argument an empty axes came from
    s, axes = _sequence(fn, "s", s), _sequence(fn, "axes", axes)
    if axes is not None:
        axes = tuple(_v.axis(f"fft.{fn}", a, x.ndim, "axes") for a in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"ruda.fft.{fn}: axes {axes} repeats an axis")
    if s is not None:
        s = tuple(_v.integer(f"fft.{fn}", "each size in s", i) for i in s)
        if axes is None:   # the last len(s) axes, as NumPy did (the backends get both)
            if len(s) > x.ndim:
                raise ValueError(f"ruda.fft.{fn}: s {s} has more sizes than x has axes; got shape "
                                 f"{x.shape}")
            axes = tuple(range(x.ndim - len(s), x.ndim))
        elif len(s) != len(axes):
            raise ValueError(f"ruda.fft.{fn}: s {s} and axes {axes} differ in length")
        if any(i < 1 and i != -1 for i in s):
            raise ValueError(f"ruda.fft.{fn}: s must hold positive sizes; got {s}")
    if axes == () and fn in ("rfftn", "irfftn"):
        raise ValueError(f"ruda.fft.{fn}: axes must name at least one axis (the real transform runs "
                         f"over the last one); got {given}")
    if fn == "irfftn" and s is None:       # the last axis gets 2 (m - 1) points
        last = x.ndim - 1 if axes is None else axes[-1]
        if x.shape[last] < 2:
            raise _too_short(fn, x, last)
    for j, a in enumerate(range(x.ndim) if axes is None else axes):
        if x.shape[a] == 0 and (s is None or s[j] == -1):
            raise ValueError(f"ruda.fft.{fn}: axis {a} has no points to transform; got shape "
                             f"{x.shape}")
    a = _padded(x, axes or (), s or ())
    if s is not None and -1 in s:   # -1 keeps the axis' size (NumPy 2): resolved here, as CuPy
        s = tuple(a.shape[ax] if n == -1 else n for ax, n in zip(axes, s))   # reads it as a size
    return a, s, axes


def fft(x: _Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> _Array:
    a, n, axis = _check_1d("fft", x, n, axis, norm)
    return _Array._new(x._device.backend.fft_fft(a, n=n, axis=axis, norm=norm), x._device)


def ifft(x: _Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> _Array:
    a, n, axis = _check_1d("ifft", x, n, axis, norm)
    return _Array._new(x._device.backend.fft_ifft(a, n=n, axis=axis, norm=norm), x._device)


def rfft(x: _Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> _Array:
    a, n, axis = _check_1d("rfft", x, n, axis, norm)
    return _Array._new(x._device.backend.fft_rfft(a, n=n, axis=axis, norm=norm), x._device)


def irfft(x: _Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> _Array:
    a, n, axis = _check_1d("irfft", x, n, axis, norm)
    return _Array._new(x._device.backend.fft_irfft(a, n=n, axis=axis, norm=norm), x._device)


def hfft(x: _Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> _Array:
    a, n, axis = _check_1d("hfft", x, n, axis, norm)
    return _Array._new(x._device.backend.fft_hfft(a, n=n, axis=axis, norm=norm), x._device)


def ihfft(x: _Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> _Array:
    a, n, axis = _check_1d("ihfft", x, n, axis, norm)
    return _Array._new(x._device.backend.fft_ihfft(a, n=n, axis=axis, norm=norm), x._device)


def fftn(x: _Array, /, *, s: tuple[int, ...] | None = None, axes: tuple[int, ...] | None = None,
         norm: str = "backward") -> _Array:
    a, s, axes = _check_nd("fftn", x, s, axes, norm)
    return _Array._new(x._device.backend.fft_fftn(a, s=s, axes=axes, norm=norm), x._device)


def ifftn(x: _Array, /, *, s: tuple[int, ...] | None = None, axes: tuple[int, ...] | None = None,
          norm: str = "backward") -> _Array:
    a, s, axes = _check_nd("ifftn", x, s, axes, norm)
    return _Array._new(x._device.backend.fft_ifftn(a, s=s, axes=axes, norm=norm), x._device)


def rfftn(x: _Array, /, *, s: tuple[int, ...] | None = None, axes: tuple[int, ...] | None = None,
          norm: str = "backward") -> _Array:
    a, s, axes = _check_nd("rfftn", x, s, axes, norm)
    return _Array._new(x._device.backend.fft_rfftn(a, s=s, axes=axes, norm=norm), x._device)


def irfftn(x: _Array, /, *, s: tuple[int, ...] | None = None, axes: tuple[int, ...] | None = None,
           norm: str = "backward") -> _Array:
    a, s, axes = _check_nd("irfftn", x, s, axes, norm)
    return _Array._new(x._device.backend.fft_irfftn(a, s=s, axes=axes, norm=norm), x._device)


def _freq(fn, n, d, dtype, device):
    n = _v.integer(f"fft.{fn}", "n", n)
    if n < 1:
        raise ValueError(f"ruda.fft.{fn}: n must be positive; got {n}")
    d = _v.python_scalar(d)
    if not _v.is_scalar(d) or isinstance(d, complex | bool):
        raise TypeError(f"ruda.fft.{fn}: d must be a real number; got {d!r}")
    if d == 0:
        raise ValueError(f"ruda.fft.{fn}: d (the sample spacing) must not be 0")
    dev = _v.device_or_default(device)
    dt = _v.default_dtype(dev, "real floating") if dtype is None else _v.dtype(f"fft.{fn}", dtype, dev)
    if dt.kind != "f":
        raise TypeError(f"ruda.fft.{fn}: dtype must be a real floating dtype; got {_dtypes.name(dt)}")
    return n, float(d), dt, dev


def fftfreq(n: int, /, *, d: float = 1.0, dtype: _DType | None = None,
            device: _Device | None = None) -> _Array:
    n, d, dt, dev = _freq("fftfreq", n, d, dtype, device)
    return _Array._new(dev.backend.fft_fftfreq(n, d=d, dtype=dt), dev)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: _DType | None = None,
             device: _Device | None = None) -> _Array:
    n, d, dt, dev = _freq("rfftfreq", n, d, dtype, device)
    return _Array._new(dev.backend.fft_rfftfreq(n, d=d, dtype=dt), dev)


def _shift(fn, x, axes):
    """The axes to shift (all for None); none for a 0-d x or axes=(), whose shift is a copy."""
    _v.array(f"fft.{fn}", "x", x)
    return _v.axes(f"fft.{fn}", axes, x.ndim, "axes")


def fftshift(x: _Array, /, *, axes: _Axis = None) -> _Array:
    ax = _shift("fftshift", x, axes)
    return _Array._new(x._device.backend.fft_fftshift(x._data, axes=ax), x._device) if ax else x.__copy__()


def ifftshift(x: _Array, /, *, axes: _Axis = None) -> _Array:
    ax = _shift("ifftshift", x, axes)
    return _Array._new(x._device.backend.fft_ifftshift(x._data, axes=ax), x._device) if ax else x.__copy__()


_hints.install(globals(), tuple(__all__))
__getattr__ = _hints.module_getattr(__name__)   # NumPy names: a hint in the AttributeError
