"""The inspection API: ruda.__array_namespace_info__()."""
from ruda import _devices, _dtypes
from ruda import _validation as v

_KIND_ORDER = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
               "complex floating", "numeric")


class Info:
    """What ruda offers on this machine: capabilities, devices, dtypes per device."""

    __slots__ = ()

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return _devices.default()

    def devices(self):
        return _devices.available()

    def default_dtypes(self, *, device=None):
        dev = v.device_or_default(device)
        return {k: _dtypes.public(d) for k, d in dev.backend.default_dtypes().items()}

    def dtypes(self, *, device=None, kind=None):
        dev = v.device_or_default(device)
        have = [d for d in dev.backend.dtypes() if d in _dtypes.all_dtypes]
        if kind is None:
            return {_dtypes.name(d): _dtypes.public(d) for d in have}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        for k in kinds:
            if isinstance(k, str) and k not in _dtypes.KINDS:
                raise ValueError(f"ruda.__array_namespace_info__().dtypes: unknown kind {k!r}; "
                                 f"expected one of {', '.join(_KIND_ORDER)}")
        sel = set()
        for k in kinds:
            sel.update(_dtypes.KINDS[k] if isinstance(k, str) else (_dtypes.as_numpy(k),))
        return {_dtypes.name(d): _dtypes.public(d) for d in have if d in sel}


def __array_namespace_info__() -> Info:
    return Info()
