"""CRC-32 with zlib's polynomial, for bytes that ruda stores and checks.

``crc32(data, value=0)`` is the C accelerator's carry-less-multiply folding where the CPU has
PCLMULQDQ (about 3x zlib's speed, the GIL released for large buffers), else ``zlib.crc32``
(the accelerator's table fallback is slower than zlib's own).  Same results either way.
"""
import os
import zlib


def _folding():
    if os.environ.get("RUDA_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from ruda import _speedups      # a C extension that imports no ruda module
    except ImportError:                 # not built: zlib
        return None
    return _speedups.crc32 if getattr(_speedups, "CRC32_FOLDING", False) else None


crc32 = _folding() or zlib.crc32
