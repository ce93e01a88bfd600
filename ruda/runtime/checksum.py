"""CRC-32 with zlib's polynomial, for bytes that ruda stores and checks.

``crc32(data, value=0)`` is the C accelerator's carry-less-multiply folding where the CPU has
PCLMULQDQ (about 3x zlib's speed, the GIL released for large buffers), else ``zlib.crc32``
(the accelerator's table fallback is slower than zlib's own).  Same results either way.
"""
import zlib

from ruda.runtime.accelerator import speedups

crc32 = speedups.crc32 if getattr(speedups, "CRC32_FOLDING", False) else zlib.crc32
