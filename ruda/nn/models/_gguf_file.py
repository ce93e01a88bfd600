"""A GGUF file's header, parsed with ``struct`` over the memory-mapped bytes.

``GGUFFile(path)`` gives ``fields`` ({key: Python value}, as ``gguf.ReaderField.contents()``)
and ``tensors`` (name, GGUF dims, ``gguf.GGMLQuantizationType`` and a NumPy view of the data
shaped as ``gguf.GGUFReader`` shapes it: float and int types as their dtype in row-major
order, block-quantized types as uint8 rows of blocks).  It reads the same format as the gguf
package's reader, which walks every metadata value through NumPy memmap slices: a vocabulary of
49,152 tokens and as many merges took it about 6 s, here about 0.1 s.  The gguf package still
supplies the type tables and the dequantizers.  Little-endian files (GGUF v2 and v3) only.
"""
import struct
from typing import NamedTuple

import numpy as np

_MAGIC = 0x46554747          # b"GGUF" read as a little-endian uint32
# GGUF value types: 0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool, 8 string, 9 array,
# 10 u64, 11 i64, 12 f64
_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
           12: "d"}
_NUMPY = {0: np.uint8, 1: np.int8, 2: np.uint16, 3: np.int16, 4: np.uint32, 5: np.int32,
          6: np.float32, 7: np.bool_, 10: np.uint64, 11: np.int64, 12: np.float64}
_STRING, _ARRAY = 8, 9


class Tensor(NamedTuple):
    name: str
    shape: tuple          # GGUF order: the fastest-varying dimension first
    tensor_type: object   # gguf.GGMLQuantizationType
    data: np.ndarray


class GGUFFile:
    def __init__(self, path):
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType
        from gguf.quants import quant_shape_to_byte_shape
        self.path = path
        self.data = np.memmap(path, mode="r")
        self._buf = memoryview(self.data)
        self._off = 0
        magic, version = self._unpack("<II")
        if magic != _MAGIC:
            raise ValueError("not a GGUF file (bad magic)")
        if version not in (2, 3):
            raise ValueError(f"GGUF version {version} (this reader takes 2 and 3, little-endian)")
        n_tensors, n_fields = self._unpack("<QQ")
        self.fields = {}
        for _ in range(n_fields):
            key = self._string()
            (vtype,) = self._unpack("<I")
            self.fields[key] = self._value(vtype)
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            (nd,) = self._unpack("<I")
            dims = self._unpack(f"<{nd}Q")
            ttype, offset = self._unpack("<IQ")
            infos.append((name, dims, ttype, offset))
        align = int(self.fields.get("general.alignment", 32))
        if align <= 0 or align & (align - 1):
            raise ValueError(f"general.alignment {align} is not a power of two")
        start = -(-self._off // align) * align
        floats = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "I8": np.int8,
                  "I16": np.int16, "I32": np.int32, "I64": np.int64}
        self.tensors = []
        for name, dims, ttype, offset in infos:
            t = GGMLQuantizationType(ttype)
            n = int(np.prod(dims, dtype=np.int64))
            shape = tuple(reversed(dims))
            if t.name in floats:
                dt = np.dtype(floats[t.name])
                count = n
            else:
                block, size = GGML_QUANT_SIZES[t]
                dt, count = np.dtype(np.uint8), n * size // block
                shape = quant_shape_to_byte_shape(shape, t)
            pos = start + offset
            if pos + count * dt.itemsize > self.data.size:
                raise ValueError(f"tensor {name!r} runs past the end of the file")
            a = np.frombuffer(self._buf, dtype=dt, count=count, offset=pos).reshape(shape)
            self.tensors.append(Tensor(name, tuple(dims), t, a))

    def _unpack(self, fmt):
        vals = struct.unpack_from(fmt, self._buf, self._off)
        self._off += struct.calcsize(fmt)
        return vals

    def _string(self):
        (n,) = struct.unpack_from("<Q", self._buf, self._off)
        start = self._off + 8
        self._off = start + n
        return str(self._buf[start:self._off], "utf-8")

    def _value(self, vtype):
        if vtype == _STRING:
            return self._string()
        if vtype in _SCALAR:
            return self._unpack("<" + _SCALAR[vtype])[0]
        if vtype != _ARRAY:
            raise ValueError(f"unknown GGUF value type {vtype}")
        etype, count = self._unpack("<IQ")
        if etype in _NUMPY:
            a = np.frombuffer(self._buf, dtype=_NUMPY[etype], count=count, offset=self._off)
            self._off += a.nbytes
            return a.tolist()
        return [self._value(etype) for _ in range(count)]
