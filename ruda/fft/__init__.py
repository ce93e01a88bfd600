"""The fft extension of the array API standard."""
import operator as _operator

from ruda import _dtypes, _hints
from ruda import _validation as _v
from ruda._array import Array as _Array

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
    _v.array(f"fft.{fn}", "x", x)
    cat = _TRANSFORMS[fn][0]
    if x._dtype not in _dtypes.CATEGORIES[cat]:
        raise TypeError(f"ruda.fft.{fn}: x must have a {cat} dtype; got {_dtypes.name(x._dtype)}")
    if norm not in _NORMS:
        raise ValueError(f"ruda.fft.{fn}: norm must be one of {_NORMS}; got {norm!r}")
    if x.ndim == 0:
        raise ValueError(f"ruda.fft.{fn}: x must have at least one dimension")


def _make_1d(fn):
    def transform(x, /, *, n=None, axis=-1, norm="backward"):
        _check(fn, x, norm)
        axis = _v.axis(f"fft.{fn}", axis, x.ndim)
        if n is not None:
            n = _operator.index(n)
            if n < 1:
                raise ValueError(f"ruda.fft.{fn}: n must be positive; got {n}")
        elif fn in ("irfft", "hfft") and x.shape[axis] < 2 and n is None:
            raise ValueError(f"ruda.fft.{fn}: axis {axis} needs at least 2 points; got shape {x.shape}")
        out = getattr(x._device.backend, f"fft_{fn}")(x._data, n=n, axis=axis, norm=norm)
        return _Array._new(out, x._device)

    transform.__name__ = transform.__qualname__ = fn
    return transform


def _make_nd(fn):
    def transform(x, /, *, s=None, axes=None, norm="backward"):
        _check(fn, x, norm)
        if axes is not None:
            axes = tuple(_v.axis(f"fft.{fn}", a, x.ndim, "axes") for a in axes)
            if len(set(axes)) != len(axes):
                raise ValueError(f"ruda.fft.{fn}: axes {axes} repeats an axis")
        if s is not None:
            s = tuple(_operator.index(i) for i in s)
            if axes is None:   # the last len(s) axes, as NumPy did (the backends get both)
                if len(s) > x.ndim:
                    raise ValueError(f"ruda.fft.{fn}: s {s} has more sizes than x has axes; got shape "
                                     f"{x.shape}")
                axes = tuple(range(x.ndim - len(s), x.ndim))
            elif len(s) != len(axes):
                raise ValueError(f"ruda.fft.{fn}: s {s} and axes {axes} differ in length")
            if any(i < 1 and i != -1 for i in s):
                raise ValueError(f"ruda.fft.{fn}: s must hold positive sizes; got {s}")
        out = getattr(x._device.backend, f"fft_{fn}")(x._data, s=s, axes=axes, norm=norm)
        return _Array._new(out, x._device)

    transform.__name__ = transform.__qualname__ = fn
    return transform


for _fn, (_cat, _nd) in _TRANSFORMS.items():
    globals()[_fn] = (_make_nd if _nd else _make_1d)(_fn)
del _fn, _cat, _nd


def _freq(fn, n, d, dtype, device):
    n = _operator.index(n)
    if n < 1:
        raise ValueError(f"ruda.fft.{fn}: n must be positive; got {n}")
    d = _v.python_scalar(d)
    if not _v.is_scalar(d) or isinstance(d, complex | bool):
        raise TypeError(f"ruda.fft.{fn}: d must be a real number; got {d!r}")
    dev = _v.device_or_default(device)
    dt = _v.default_dtype(dev, "real floating") if dtype is None else _v.dtype(f"fft.{fn}", dtype, dev)
    if dt.kind != "f":
        raise TypeError(f"ruda.fft.{fn}: dtype must be a real floating dtype; got {_dtypes.name(dt)}")
    return _Array._new(getattr(dev.backend, f"fft_{fn}")(n, d=float(d), dtype=dt), dev)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq("fftfreq", n, d, dtype, device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _freq("rfftfreq", n, d, dtype, device)


def _shift(fn, x, axes):
    _v.array(f"fft.{fn}", "x", x)
    ax = None if axes is None else _v.axes(f"fft.{fn}", axes, x.ndim, "axes")
    return _Array._new(getattr(x._device.backend, f"fft_{fn}")(x._data, axes=ax), x._device)


def fftshift(x, /, *, axes=None):
    return _shift("fftshift", x, axes)


def ifftshift(x, /, *, axes=None):
    return _shift("ifftshift", x, axes)


_hints.install(globals(), tuple(__all__))
__getattr__ = _hints.module_getattr(__name__)   # NumPy names: a hint in the AttributeError
