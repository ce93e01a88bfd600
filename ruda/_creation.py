"""Creation functions."""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from ruda import _devices, _dtypes
from ruda import _validation as v
from ruda._array import Array, new as _new
from ruda._data_type import promote_all
from ruda._typing import Device, DType, Scalar
from ruda.backends import arange_length, dlpack_device_name

_HOST_FAST = frozenset(_dtypes.all_dtypes)

_DLPACK_KINDS = {1: "cpu", 3: "cpu", 2: "cuda", 13: "cuda"}  # kDLCPU, kDLCUDAHost, kDLCUDA, kDLCUDAManaged
_PY_KIND = {builtins.bool: None, int: "integral", float: "real floating", complex: "complex floating"}


def _dtype_or(fn, dtype, dev, default):
    return default if dtype is None else v.dtype(fn, dtype, dev)


def _scalar_default(dev, value):
    if isinstance(value, builtins.bool):
        return _dtypes.bool
    kind = _PY_KIND.get(type(value)) or _PY_KIND.get(v._scalar_type("full", value))
    return v.default_dtype(dev, kind)


def _host_default(dev, host):
    """Map NumPy's inferred dtype for Python data to the device's defaults: the dtypes Python
    scalars give (float64, complex128, int64); narrower ones came from NumPy scalars in the
    data (``[np.float32(1), np.float32(2)]``) and stay, as in NumPy."""
    dt = host.dtype
    if dt == np.float64:
        return v.default_dtype(dev, "real floating")
    if dt == np.complex128:
        return v.default_dtype(dev, "complex floating")
    if dt == np.int64:
        return v.default_dtype(dev, "integral")
    return dt


def _fits_default(fn, host, dt, dev):
    """OverflowError unless integers ``host`` fit ``dt``, ``dev``'s default integer dtype."""
    info = np.iinfo(dt)
    lo, hi = int(host.min()), int(host.max())
    if lo < info.min or hi > info.max:
        bad = lo if lo < info.min else hi
        raise OverflowError(f"ruda.{fn}: {bad} is out of range of {dt}, the default integer "
                            f"dtype on device '{dev}'{dev.backend.unsupported_reason(_dtypes.int64)}")


def _in_range(fn, arg, value, dt):
    """OverflowError unless the Python int ``value`` fits the integer dtype ``dt``."""
    info = np.iinfo(dt)
    if not info.min <= value <= info.max:
        raise OverflowError(f"ruda.{fn}: {arg} {value} is out of range for {_dtypes.name(dt)}")


def asarray(obj: Any, /, *, dtype: DType | None = None, device: Device | None = None,
            copy: bool | None = None) -> Array:
    if obj.__class__ is np.ndarray and dtype is device is copy is None and obj.dtype in _HOST_FAST \
            and _devices.default() is _devices.CPU:
        return _new(obj, _devices.CPU)
    dev = None if device is None else _devices.device(device)
    if obj.__class__ is Array:
        return _asarray_array(obj, dtype, dev, copy)
    if isinstance(obj, list | tuple) and _holds_arrays(obj):
        home = dev or _first_array(obj)._device   # arrays in a sequence keep their device and dtype
        return _stack_nested(obj, None if dtype is None else v.dtype("asarray", dtype, home), home)
    foreign = None if isinstance(obj, np.ndarray) else _dlpack_device(obj)
    if dev is None:   # another library's device array stays on its device
        dev = foreign if foreign is not None and foreign.kind != "cpu" else _devices.default()
    if dtype is not None:
        dtype = v.dtype("asarray", dtype, dev)
    if foreign is dev and dev.kind != "cpu":
        native = dev.backend.from_dlpack(obj, copy=copy)   # copies here when copy=True
        return _asarray_array(Array._new(native, dev), dtype, dev, None if copy else copy)
    if copy is False and foreign is not None:    # a host producer's __array__ may take no copy=
        try:                                      # (torch's): share through DLPack instead
            obj = np.from_dlpack(obj)
        except (TypeError, BufferError, RuntimeError):
            pass
    python_data = not isinstance(obj, np.ndarray | np.generic) and not hasattr(obj, "__array__") \
        and not hasattr(obj, "__buffer__") and not isinstance(obj, memoryview | bytearray | bytes)
    try:
        host = np.asarray(obj, dtype=dtype, copy=copy) if copy is not None or dtype is not None \
            else np.asarray(obj)
    except OverflowError as e:
        raise OverflowError(f"ruda.asarray: {e}") from None
    except ValueError as e:  # ragged nested sequences; copy=False that needs a copy
        raise ValueError(f"ruda.asarray: {str(e).splitlines()[0]}") from None
    except TypeError as e:   # another library's array NumPy cannot take (torch's bfloat16)
        raise TypeError(f"ruda.asarray: NumPy cannot convert this {type(obj).__name__} ({e}); "
                        f"convert it to a dtype NumPy has (float32, ...) first") from None
    if not host.dtype.isnative:     # big-endian data (FITS, network formats): the same values
        if copy is False:
            raise ValueError("ruda.asarray: copy=False, but the data is in non-native byte order")
        host = host.astype(host.dtype.newbyteorder("="))
    if host.dtype == object or host.dtype.kind in "USVMm" and not _dtypes.is_dtype(host.dtype):
        if python_data and host.dtype == object and _has_big_int(obj):
            raise OverflowError("ruda.asarray: Python integer out of range of every integer dtype")
        raise TypeError(f"ruda.asarray: cannot make an array of {type(obj).__name__} "
                        f"(NumPy inferred dtype {host.dtype})")
    if dtype is None:
        dt = _host_default(dev, host) if python_data else host.dtype
        if dt != host.dtype:
            if dt.kind in "iu" and host.size:
                _fits_default("asarray", host, dt, dev)
            host = host.astype(dt)
        elif not dev.backend.supports(dt):
            v.dtype("asarray", dt, dev)
    if dev.kind == "cpu":
        if not host.flags.writeable and copy is None and python_data:
            host = host.copy()
        return Array._new(host, dev)
    if copy is False:
        raise ValueError(f"ruda.asarray: copy=False, but the data is on the host and the "
                         f"device is '{dev}'")
    return Array._new(dev.backend.from_host(host), dev)


def _dlpack_device(obj):
    """The ruda Device of an object exporting DLPack, or None."""
    if not hasattr(obj, "__dlpack_device__"):
        return None
    kind, index = obj.__dlpack_device__()[:2]
    src = _DLPACK_KINDS.get(int(kind))
    if src is None:
        return None
    return _devices.device(src if src == "cpu" else f"{src}:{index}")


def _holds_arrays(obj):
    return any(o.__class__ is Array or isinstance(o, list | tuple) and _holds_arrays(o) for o in obj)


def _first_array(obj):
    for o in obj:
        if o.__class__ is Array:
            return o
        if isinstance(o, list | tuple) and _holds_arrays(o):
            return _first_array(o)


def _stack_nested(obj, dtype, dev):
    """asarray of nested sequences holding ruda arrays of ``dev``: stacked on the device, no host copy."""
    from ruda._manipulation import stack
    items = [_stack_nested(o, None, dev) if isinstance(o, list | tuple) and _holds_arrays(o)
             else o for o in obj]
    arrays = [i for i in items if i.__class__ is Array]
    for a in arrays:
        if a._device is not dev:
            raise ValueError(f"ruda.asarray: the sequence holds an array on '{a._device}', but "
                             f"device='{dev}'; move it explicitly with .to_device()")
    dt = promote_all("asarray", [a._dtype for a in arrays], dev)
    for i in _scalars(i for i in items if i.__class__ is not Array):   # sublists of scalars too
        dt = v.scalar_dtype("asarray", i, dt, dev)
    out = stack([i if i.__class__ is Array else asarray(i, dtype=dt, device=dev) for i in items])
    return out if dtype is None or out._dtype == dtype else asarray(out, dtype=dtype)


def _scalars(items):
    for i in items:
        if isinstance(i, list | tuple):
            yield from _scalars(i)
        else:
            yield i


def _has_big_int(obj):
    if isinstance(obj, int):
        return not -2**63 <= obj < 2**64
    return isinstance(obj, list | tuple) and any(_has_big_int(o) for o in obj)


def _asarray_array(x, dtype, dev, copy, fn="asarray"):
    if dev is None:
        dev = x._device
    if dev is not x._device and copy is False:
        raise ValueError(f"ruda.{fn}: copy=False, but the array is on '{x._device}' "
                         f"and device='{dev}' was asked for: that needs a copy")
    dt = x._dtype if dtype is None else v.dtype(fn, dtype, dev)
    if dt != x._dtype and copy is False:
        raise ValueError(f"ruda.{fn}: copy=False, but casting {_dtypes.name(x._dtype)} to "
                         f"{_dtypes.name(dt)} needs a copy")
    if dev is x._device and dt == x._dtype and not copy:
        return x
    from ruda._data_type import astype     # (its checks: no complex to real)
    return astype(x, dt, device=dev, copy=dev is x._device or dt != x._dtype, fn=fn)


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: DType | None = None, device: Device | None = None) -> Array:
    dev = v.device_or_default(device)
    start, stop, step = map(v.python_scalar, (start, stop, step))
    for name, val in (("start", start), ("stop", stop), ("step", step)):
        if val is not None and (not v.is_scalar(val) or isinstance(val, complex)):
            raise TypeError(f"ruda.arange: {name} must be a real Python number; got {type(val).__name__}")
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("ruda.arange: step must not be zero")
    for name, val in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(val, float) and not np.isfinite(val):
            raise ValueError(f"ruda.arange: {name} must be finite; got {val}")
    is_float = any(isinstance(a, float) for a in (start, stop, step))
    default = v.default_dtype(dev, "real floating" if is_float else "integral")
    dt = _dtype_or("arange", dtype, dev, default)
    if dt.kind == "b" or (dt.kind in "iu" and is_float):
        return _arange_converted(start, stop, step, dt, dev)
    if dtype is not None and dt.kind in "iu" and isinstance(start, int):
        _in_range("arange", "start", start, dt)     # NumPy's check: the first value must fit
    if dtype is None and dt.kind in "iu" and not is_float:
        r = range(start, stop, step)        # a narrow default (int32): its ends must fit
        if r:
            _fits_default("arange", np.array([r[0], r[-1]], dtype=object), dt, dev)
    return Array._new(dev.backend.arange(start, stop, step, dt), dev)


def _arange_converted(start, stop, step, dt, dev):
    """arange of bool, or of an integer dtype from float arguments, as NumPy: start and
    start + step converted to ``dt`` as Python numbers (int() truncates), then value i is
    first + i * (second - first); bool holds at most two values.  The device fills the integer
    arange these give."""
    n = arange_length(start, stop, step)
    if dt.kind == "b":
        if n > 2:
            raise TypeError(f"ruda.arange: a bool arange holds at most 2 values (NumPy's rule); "
                            f"this one would hold {n}")
        host = np.array([builtins.bool(start), builtins.bool(start + step)][:n], dtype=dt)
        return Array._new(dev.backend.from_host(host), dev)
    if n == 0:
        return Array._new(dev.backend.empty((0,), dt), dev)
    info = np.iinfo(dt)

    def converted(name, value):
        if not info.min <= int(value) <= info.max:
            raise OverflowError(f"ruda.arange: {name} {value!r} is out of range for {_dtypes.name(dt)}")
        return int(value)

    first = converted("start", start)
    delta = converted("start + step", start + step) - first if n > 1 else 1
    if delta == 0:
        return Array._new(dev.backend.full((n,), first, dt), dev)
    last = first + (n - 1) * delta
    if not info.min <= last <= info.max:        # NumPy's fill wraps around: its values
        return Array._new(dev.backend.from_host(np.arange(start, stop, step, dtype=dt)), dev)
    # a stop half a step past the last value: NumPy counts (stop - start) / step in float64
    stop = last + (delta if delta in (1, -1) else delta // 2)
    return Array._new(dev.backend.arange(first, stop, delta, dt), dev)


def empty(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev = v.device_or_default(device)
    dt = _dtype_or("empty", dtype, dev, v.default_dtype(dev, "real floating"))
    return Array._new(dev.backend.empty(v.shape("empty", shape), dt), dev)


def _filled(fn, shape, value, dtype, dev):
    dev = v.device_or_default(dev)
    if isinstance(value, np.generic) and dtype is None and _dtypes.is_dtype(value.dtype):
        dtype = value.dtype   # a NumPy scalar fills with its own dtype, as in NumPy
    value = v.python_scalar(value)
    if not v.is_scalar(value):
        raise TypeError(f"ruda.{fn}: fill_value must be a Python scalar; got {type(value).__name__}")
    dt = _dtype_or(fn, dtype, dev, None) if dtype is not None else _scalar_default(dev, value)
    if isinstance(value, complex) and dt.kind != "c":
        raise TypeError(f"ruda.{fn}: a complex fill_value needs a complex dtype; got {_dtypes.name(dt)}")
    if isinstance(value, float) and dt.kind in "iub":
        if dt.kind != "b":
            raise TypeError(f"ruda.{fn}: a float fill_value needs a floating dtype; got {_dtypes.name(dt)}")
    if dt.kind == "b":
        value = builtins.bool(value)    # any nonzero number is True (2**64 included)
    elif dt.kind in "iu" and not isinstance(value, builtins.bool):
        _in_range(fn, "fill_value", value, dt)
    return Array._new(dev.backend.full(v.shape(fn, shape), value, dt), dev)


def full(shape: int | tuple[int, ...], fill_value: Scalar, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    return _filled("full", shape, fill_value, dtype, device)


def zeros(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev = v.device_or_default(device)
    dt = _dtype_or("zeros", dtype, dev, v.default_dtype(dev, "real floating"))
    return Array._new(dev.backend.full(v.shape("zeros", shape), False if dt.kind == "b" else 0, dt), dev)


def ones(shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev = v.device_or_default(device)
    dt = _dtype_or("ones", dtype, dev, v.default_dtype(dev, "real floating"))
    return Array._new(dev.backend.full(v.shape("ones", shape), True if dt.kind == "b" else 1, dt), dev)


def _like(fn, x, dtype, device):
    v.array(fn, "x", x)
    dev = x._device if device is None else _devices.device(device)
    dt = x._dtype if dtype is None else v.dtype(fn, dtype, dev)
    return dev, dt


def empty_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev, dt = _like("empty_like", x, dtype, device)
    return Array._new(dev.backend.empty(x.shape, dt), dev)


def zeros_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev, dt = _like("zeros_like", x, dtype, device)
    return Array._new(dev.backend.full(x.shape, False if dt.kind == "b" else 0, dt), dev)


def ones_like(x: Array, /, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev, dt = _like("ones_like", x, dtype, device)
    return Array._new(dev.backend.full(x.shape, True if dt.kind == "b" else 1, dt), dev)


def full_like(x: Array, /, fill_value: Scalar, *, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev, dt = _like("full_like", x, dtype, device)
    return _filled("full_like", x.shape, fill_value, dt, dev)


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: DType | None = None, device: Device | None = None) -> Array:
    dev = v.device_or_default(device)
    n_rows = v.integer("eye", "n_rows", n_rows)
    n_cols = n_rows if n_cols is None else v.integer("eye", "n_cols", n_cols)
    if n_rows < 0 or n_cols < 0:
        raise ValueError(f"ruda.eye: sizes must be non-negative; got {n_rows}, {n_cols}")
    dt = _dtype_or("eye", dtype, dev, v.default_dtype(dev, "real floating"))
    return Array._new(dev.backend.eye(n_rows, n_cols, v.integer("eye", "k", k), dt), dev)


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: DType | None = None, device: Device | None = None, endpoint: bool = True) -> Array:
    dev = v.device_or_default(device)
    start, stop = v.python_scalar(start), v.python_scalar(stop)
    for name, val in (("start", start), ("stop", stop)):
        if not v.is_scalar(val):
            raise TypeError(f"ruda.linspace: {name} must be a Python number; got {type(val).__name__}")
    num = v.integer("linspace", "num", num)
    if num < 0:
        raise ValueError(f"ruda.linspace: num must be non-negative; got {num}")
    is_complex = isinstance(start, complex) or isinstance(stop, complex)
    default = v.default_dtype(dev, "complex floating" if is_complex else "real floating")
    dt = _dtype_or("linspace", dtype, dev, default)
    if is_complex and dt.kind != "c":
        raise TypeError(f"ruda.linspace: complex bounds need a complex dtype; got {_dtypes.name(dt)}")
    return Array._new(dev.backend.linspace(start, stop, num, dt, builtins.bool(endpoint)), dev)


def meshgrid(*arrays: Array, indexing: str = "xy") -> tuple[Array, ...]:
    if indexing not in ("xy", "ij"):
        raise ValueError(f"ruda.meshgrid: indexing must be 'xy' or 'ij'; got {indexing!r}")
    for i, a in enumerate(arrays):
        v.array("meshgrid", f"arrays[{i}]", a)
        if a.ndim != 1:
            raise ValueError(f"ruda.meshgrid: arrays[{i}] must be 1-D; got shape {a.shape}")
    if not arrays:
        return ()
    dev = v.same_device("meshgrid", *arrays)
    dts = {a._dtype for a in arrays}
    if len(dts) > 1:
        raise ValueError(f"ruda.meshgrid: arrays must share one dtype; got "
                         f"{', '.join(_dtypes.name(d) for d in dts)}")
    out = dev.backend.meshgrid(*[a._data for a in arrays], indexing=indexing)
    return tuple(Array._new(o, dev) for o in out)


def _tri(fn, x, k):
    """k checked, and clamped to the diagonals x has (k past them keeps all or nothing), so
    that any Python int reaches a backend as a small one."""
    v.array(fn, "x", x)
    if x.ndim < 2:
        raise ValueError(f"ruda.{fn}: x must have at least 2 dimensions; got shape {x.shape}")
    return max(-x.shape[-2] - 1, min(x.shape[-1] + 1, v.integer(fn, "k", k)))


def tril(x: Array, /, *, k: int = 0) -> Array:
    return Array._new(x._device.backend.tril(x._data, _tri("tril", x, k)), x._device)


def triu(x: Array, /, *, k: int = 0) -> Array:
    return Array._new(x._device.backend.triu(x._data, _tri("triu", x, k)), x._device)


def from_dlpack(x: Any, /, *, device: Device | None = None,
                copy: bool | None = None) -> Array:
    """An array of DLPack producer ``x``'s data on ``device`` (default: the producer's).

    On the producer's device the data is shared (``copy=True`` copies).  ``device`` naming
    another device moves the data explicitly: from a host producer through a zero-copy host view,
    to the host by asking the producer for a host copy (DLPack 1.0 ``dl_device=(kDLCPU, 0)``,
    which also reaches devices ruda cannot hold), else through the host.
    """
    if x.__class__ is Array:
        return _asarray_array(x, None, None if device is None else _devices.device(device), copy,
                              "from_dlpack")
    try:
        return _from_dlpack(x, device, copy)
    except RuntimeError as e:       # NumPy's (and CuPy's) DLPack import knows no bfloat16
        if "dtype" not in str(e).lower():
            raise
        raise BufferError(f"ruda.from_dlpack: x's dtype ({getattr(x, 'dtype', 'unknown')}) does "
                          f"not travel over DLPack here ({e}); convert x to float32 first, or "
                          f"pass its bits as uint16 and view them as ruda.bfloat16 on the host") from None


def _from_dlpack(x, device, copy):
    if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
        raise TypeError(f"ruda.from_dlpack: x must support DLPack (__dlpack__ and __dlpack_device__); "
                        f"got {type(x).__name__}")
    if copy is not None and copy.__class__ is not builtins.bool:
        raise TypeError(f"ruda.from_dlpack: copy must be True, False or None; got {copy!r}")
    kind, index = (int(k) for k in x.__dlpack_device__()[:2])
    src_kind = _DLPACK_KINDS.get(kind)
    here = f"DLPack device {(kind, index)} {dlpack_device_name((kind, index))}"
    dest = None if device is None else _devices.device(device)
    if dest is None:
        if src_kind is None:
            raise BufferError(f"ruda.from_dlpack: x is on {here}, which ruda cannot hold; pass "
                              f"device='cpu' to ask the producer for a host copy")
        dest = _devices.device(src_kind if src_kind == "cpu" else f"{src_kind}:{index}")
    if src_kind == dest.kind and (src_kind == "cpu" or index == dest.backend.index):
        return Array._new(dest.backend.from_dlpack(x, copy=copy), dest)
    if copy is False:
        raise ValueError(f"ruda.from_dlpack: copy=False, but x is on {here} and device='{dest}' was "
                         f"asked for: that needs a copy")
    if src_kind == "cpu":    # a host producer: a zero-copy view, uploaded to dest
        return Array._new(np.from_dlpack(x), _devices.CPU).to_device(dest)
    try:                     # the producer's own host copy (DLPack 1.0 cross-device export)
        host = np.from_dlpack(x, device="cpu")
    except (BufferError, TypeError, ValueError, NotImplementedError) as e:
        if src_kind is None:
            raise BufferError(f"ruda.from_dlpack: x is on {here}, which ruda cannot hold, and its "
                              f"producer gave no host copy ({type(e).__name__}: {e})") from None
        src = _devices.device(f"{src_kind}:{index}")    # an older producer: import, then move
        return Array._new(src.backend.from_dlpack(x), src).to_device(dest)
    if not host.flags.writeable:
        host = host.copy()
    out = Array._new(host, _devices.CPU)
    return out if dest is _devices.CPU else out.to_device(dest)


# with the C accelerator, ruda/_accelerate.py lists the functions here it gives a host fast path
# keyword errors name the standard's spelling of a NumPy keyword (ruda/_hints.py)
from ruda import _hints  # noqa: E402
_hints.install(globals(), ("arange", "asarray", "empty", "empty_like", "eye", "from_dlpack",
                        "full", "full_like", "linspace", "meshgrid", "ones", "ones_like", "tril",
                        "triu", "zeros", "zeros_like"))
