"""A caching pool for large host output buffers.

Collectives return new arrays.  Fresh multi-megabyte NumPy buffers are mmapped
and page-faulted on first touch, which costs as much as the transfer itself, so
outputs of ``RUDA_DIST_POOL_MIN`` bytes (default 1 MiB) or more are carved from
cached blocks, as CuPy's and PyTorch's allocators do on GPUs.  A block is free
again once no array refers to it (CPython reference count back to the pool's
own).  At most ``RUDA_DIST_POOL_MB`` MiB (default 1024; 0 disables) are cached.
A caller may ``reserve`` a view on a block for one (shape, dtype) and hand that same view
out while ``idle`` says nothing else refers to it or its block: host all_reduce keeps
one per cached plan, which skips the pool search and the view creation on each call.
"""
import math
import sys

import numpy as np

from ruda.runtime import env

# read at import: a value that is not such a number warns and the default applies
_MIN = env.number("RUDA_DIST_POOL_MIN", 1 << 20, kind=int, low=0, unit="bytes", at_import=True)
_CAP = int(env.number("RUDA_DIST_POOL_MB", 1024.0, low=0, unit="MiB", at_import=True) * (1 << 20))
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


def _take(nbytes, keep=False):
    """A free cached block of ``nbytes``, else a new one (cached while under the cap); with
    ``keep``, None instead of a block the pool would not cache."""
    global _held
    blocks = _blocks.setdefault(nbytes, [])
    free = _free_refs()
    for i in range(len(blocks)):
        if sys.getrefcount(blocks[i]) <= free:
            return blocks[i]
    if _held + nbytes > _CAP:
        return None if keep else np.empty(nbytes, np.uint8)
    block = np.empty(nbytes, np.uint8)
    blocks.append(block)
    _held += nbytes
    return block


def reserve(shape, dtype):
    """A view of ``shape`` and ``dtype`` on a cached block set aside for the caller, who
    keeps it (in a tuple or list ``t``) and hands it out again whenever ``idle(t, i)``;
    None below the pooling size or at the cap."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    block = _take(nbytes, keep=True) if nbytes >= _MIN else None
    return None if block is None else block.view(dtype).reshape(shape)


def idle(t, i):
    """Whether nothing but ``t`` refers to ``t[i]``, a view from ``reserve``, or its block
    (so the array handed out last time, and every view of it, is gone)."""
    free = _FREE_REFS
    return sys.getrefcount(t[i]) <= free and sys.getrefcount(t[i].base) <= free + 1


def clear():
    """Drop every cached block (arrays still using one keep it alive)."""
    global _held
    _blocks.clear()
    _held = 0
