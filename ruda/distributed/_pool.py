"""A caching pool for large host output buffers.

Collectives return new arrays.  Fresh multi-megabyte NumPy buffers are mmapped
and page-faulted on first touch, which costs as much as the transfer itself, so
outputs of ``RUDA_DIST_POOL_MIN`` bytes (default 1 MiB) or more are carved from
cached blocks, as CuPy's and PyTorch's allocators do on GPUs.  A block is free
again once no array refers to it (CPython reference count back to the pool's
own).  At most ``RUDA_DIST_POOL_MB`` MiB (default 1024; 0 disables) are cached.
"""
import math
import os
import sys

import numpy as np

_MIN = int(os.environ.get("RUDA_DIST_POOL_MIN", 1 << 20))
_CAP = int(float(os.environ.get("RUDA_DIST_POOL_MB", 1024)) * (1 << 20))
_blocks = {}            # nbytes -> [uint8 ndarray, ...]
_held = 0
_FREE_REFS = None       # refcount of a block that only the pool holds


def _free_refs():
    global _FREE_REFS
    if _FREE_REFS is None:
        probe = [np.empty(1, np.uint8)]
        _FREE_REFS = sys.getrefcount(probe[0])
    return _FREE_REFS


def empty(shape, dtype):
    """An uninitialized host array of ``shape`` and ``dtype``, reusing a free block if any."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < _MIN:
        return np.empty(shape, dtype)
    block = _take(nbytes)
    return block.view(dtype).reshape(shape)


def _take(nbytes):
    global _held
    blocks = _blocks.setdefault(nbytes, [])
    free = _free_refs()
    for i in range(len(blocks)):
        if sys.getrefcount(blocks[i]) <= free:
            return blocks[i]
    block = np.empty(nbytes, np.uint8)
    if _held + nbytes <= _CAP:
        blocks.append(block)
        _held += nbytes
    return block


def clear():
    """Drop every cached block (arrays still using one keep it alive)."""
    global _held
    _blocks.clear()
    _held = 0
