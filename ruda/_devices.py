"""Device objects and the default device.

A :class:`Device` is hashable and compares equal to its one spelling, ``str(device)``:
"cpu", "cuda", "cuda:1", "wgpu", "wgpu:1" (index 0 is the bare kind), so a dict keyed by that
string finds it.  ``ruda.device()`` also takes "cuda:0" and "wgpu:0" for index 0.
The default device is, from highest precedence: the innermost
``with ruda.default_device(...)`` block, ``ruda.set_default_device(...)``,
the ``RUDA_DEVICE`` environment variable (read when ruda is imported, or
again by ``ruda._devices.read_env()``), else "cpu".
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

from ruda import backends

_devices = {}          # (kind, index) -> Device
_set_default = None
# the innermost `with default_device(...)` block's Device (None outside any)
block_default = contextvars.ContextVar("ruda_default_device", default=None)
_env_default = None    # the Device named by RUDA_DEVICE, read at import (see read_env)
_watchers = []         # callables told the default outside blocks (see watch_default)


class Device:
    __slots__ = ("kind", "index", "_backend", "_key")

    def __new__(cls, *args, **kwargs):
        raise TypeError("ruda.Device objects come from ruda.device(...) or an array's .device")

    @classmethod
    def _make(cls, kind, index):
        self = object.__new__(cls)
        self.kind = kind
        self.index = index
        self._backend = None
        self._key = kind if index == 0 else f"{kind}:{index}"
        return self

    @property
    def backend(self):
        b = self._backend
        if b is None:
            b = self._backend = _instantiate(self.kind, self.index)
        return b

    def __eq__(self, other):
        if other.__class__ is Device:
            return other is self
        if isinstance(other, str):   # its one spelling: equal objects must hash alike
            return other == self._key
        return NotImplemented

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        return self._key

    def __repr__(self):
        return f"Device('{self._key}')"

    def __reduce__(self):
        return (device, (self._key,))


def _parse(spec):
    kind, sep, idx = spec.strip().partition(":")
    kind = kind.lower()
    if kind not in backends.kinds():
        raise ValueError(spec)
    if not sep:
        return kind, 0
    if not idx.isdigit():
        raise ValueError(spec)
    index = int(idx)
    if kind == "cpu" and index != 0:
        raise ValueError(spec)
    return kind, index


def _instantiate(kind, index):
    cls = backends.backend_class(kind)
    if kind == "cpu":
        return cls.instance()
    return cls(index)


def available() -> tuple[Device, ...]:
    """Every usable device, cpu first."""
    out = []
    for kind in backends.kinds():
        for index in _discover(kind):
            out.append(_get(kind, index))
    return tuple(out)


# the backend contract finds a kind's devices and says why there are none
_discover = backends.discover
unavailable = backends.unavailable


def _get(kind, index):
    d = _devices.get((kind, index))
    if d is None:
        d = _devices[(kind, index)] = Device._make(kind, index)
    return d


def device(spec: Device | str) -> Device:
    """The Device for ``spec`` (a Device or a string); ValueError if unknown or absent."""
    if spec.__class__ is Device:
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"ruda: device must be a ruda.Device or a string such as 'cpu', "
                         f"'cuda:0' or 'wgpu'; got {spec!r} of type {type(spec).__name__}")
    try:
        kind, index = _parse(spec)
    except ValueError:
        raise ValueError(f"ruda: unknown device {spec!r}; available devices: "
                         f"{', '.join(map(str, available()))}") from None
    d = _devices.get((kind, index))
    if d is not None:
        return d
    if kind != "cpu" and index not in _discover(kind):
        why = unavailable(kind) or f"{kind} has devices {_discover(kind)}"
        raise ValueError(f"ruda: device {spec!r} is not available ({why}); available devices: "
                         f"{', '.join(map(str, available()))}")
    return _get(kind, index)


CPU = _get("cpu", 0)
CPU.backend  # instantiated eagerly: fast paths wrap host arrays without asking for it


def default():
    d = block_default.get()
    if d is not None:
        return d
    if _set_default is not None:
        return _set_default
    if _env_default.__class__ is Device:
        return _env_default
    return CPU if _env_default is None else _resolve_env()


def _resolve_env():
    global _env_default
    try:
        _env_default = device(_env_default)
    except ValueError as e:      # the device named there is absent or malformed: say where
        raise ValueError(f"ruda: RUDA_DEVICE={_env_default!r} (the default device): "
                         f"{str(e).removeprefix('ruda: ')}") from None
    _tell_watchers()
    return _env_default


def read_env():
    """(Re)read ``RUDA_DEVICE``: done when ruda is imported; call again after changing it."""
    global _env_default
    _env_default = os.environ.get("RUDA_DEVICE") or None
    _tell_watchers()


def set_default_device(dev: Device | str | None) -> None:
    """Set the process-wide default device (None restores RUDA_DEVICE / cpu)."""
    global _set_default
    _set_default = None if dev is None else device(dev)
    _tell_watchers()


def watch_default(callback):
    """Call ``callback(fixed)`` now and whenever the default outside ``with default_device``
    blocks changes: ``fixed`` is a Device, None (nothing set: cpu) or RUDA_DEVICE's spelling not
    yet resolved (a str; :func:`default` resolves it).  The C accelerator keeps its copy so."""
    _watchers.append(callback)
    callback(_fixed_default())


def _fixed_default():
    return _set_default if _set_default is not None else _env_default


def _tell_watchers():
    fixed = _fixed_default()
    for callback in _watchers:
        callback(fixed)


@contextlib.contextmanager
def default_device(dev: Device | str) -> Iterator[Device]:
    """``with ruda.default_device("wgpu"):`` makes ``dev`` the default inside the block."""
    token = block_default.set(device(dev))
    try:
        yield block_default.get()
    finally:
        block_default.reset(token)
