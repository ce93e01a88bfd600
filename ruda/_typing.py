"""Type aliases of ruda's public signatures (PEP 604 unions): ``Array``, ``Device``, ``DType``."""
from typing import TypeAlias

from ruda._devices import Device as _Device
from ruda._dtypes import DType as _DType

Scalar: TypeAlias = bool | int | float | complex
DType: TypeAlias = _DType                  # ruda.float32 & co. (NumPy dtypes are accepted too)
Device: TypeAlias = _Device | str          # a Device, or its name ("cpu", "wgpu:0")
Axis: TypeAlias = int | tuple[int, ...] | None   # an axis or axes; None: all of them
