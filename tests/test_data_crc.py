"""ruda.data's CRC-32 (the C accelerator's, where built) against zlib.crc32."""
import zlib

import numpy as np
import pytest

from ruda._array import _speedups
from ruda.data import _store
from ruda.runtime import checksum

needs_c = pytest.mark.skipif(_speedups is None, reason="the C accelerator is not built "
                             "(or RUDA_PURE_PYTHON=1)")


@needs_c
@pytest.mark.parametrize("tables", [False, True], ids=["fastest", "tables"])
def test_crc32_matches_zlib(tables):
    rng = np.random.default_rng()
    data = memoryview(rng.integers(0, 256, 100_100, dtype=np.uint8).tobytes())
    lengths = list(range(0, 300)) + rng.integers(0, 100_001, 200).tolist() + [100_000]
    for n in lengths:
        off = int(rng.integers(0, 64))
        value = int(rng.integers(0, 1 << 32))
        piece = data[off:off + n]
        assert _speedups.crc32(piece, 0, tables) == zlib.crc32(piece), (n, off)
        assert _speedups.crc32(piece, value, tables) == zlib.crc32(piece, value), (n, off)
    # an uneven split continues the CRC as zlib does
    assert _speedups.crc32(data[777:], _speedups.crc32(data[:777], 0, tables), tables) == \
        zlib.crc32(data)


@needs_c
def test_crc32_buffers_and_errors():
    a = np.arange(70_000, dtype=np.int32)
    assert _speedups.crc32(a) == zlib.crc32(a.tobytes())
    assert _speedups.crc32(b"") == 0 and _speedups.crc32(b"", 123) == 123
    with pytest.raises(TypeError):
        _speedups.crc32("text")
    with pytest.raises((TypeError, BufferError, ValueError)):
        _speedups.crc32(a[::2])             # not contiguous


def test_store_crc_is_zlibs():
    data = np.random.default_rng().integers(0, 256, 5000, dtype=np.uint8).tobytes()
    assert _store.crc32(data) == zlib.crc32(data)
    folding = _speedups is not None and _speedups.CRC32_FOLDING
    assert _store.crc32 is checksum.crc32 is (_speedups.crc32 if folding else zlib.crc32)
