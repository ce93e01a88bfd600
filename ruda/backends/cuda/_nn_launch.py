"""What the fused nn kernels on cuda share: compiling a generated module once per configuration
and device, and passing arrays (bfloat16 travels as its uint16 bits)."""
import numpy as np

from ruda import _dtypes
from ruda.runtime.kernels import nn_cuda as gen

U16 = np.dtype(np.uint16)
BF16 = _dtypes.bfloat16
_FUNCS = {}            # (configuration..., device id) -> kernel function


def _cp():
    import cupy
    return cupy


def function(key, make_source, name):
    """The compiled kernel ``name`` of the module ``make_source()`` on the current device."""
    cp = _cp()
    dev = cp.cuda.runtime.getDevice()
    fn = _FUNCS.get((key, dev))
    if fn is None:
        from ruda.backends.cuda import _kernels
        fn = _FUNCS[(key, dev)] = _kernels.compile_source(make_source()).get_function(name)
    return fn


def dname(a):
    """The generators' dtype name of ``a`` (float32, float64, bfloat16, float16), or None
    (memoized per dtype: NumPy's ``dtype.name`` is Python code, ~5 us a call)."""
    if a is None:
        return None
    dt = a.dtype
    name = _NAMES.get(dt, _NAMES)
    if name is _NAMES:
        name = _NAMES[dt] = gen.np_name(dt)
    return name


_NAMES = {}
HALVES = ("bfloat16", "float16")      # the 16-bit types: stored as bits, computed in float32


def compute_dtype(dt, dtype):
    """The dtype the kernels of generator dtype ``dt`` compute in: float32 for the 16-bit
    types, else ``dtype`` (the array's own)."""
    return np.dtype(np.float32) if dt in HALVES else dtype


def arg(a):
    """A kernel argument: bfloat16 arrays travel as their uint16 bits."""
    if a is None:
        return np.uint64(0)
    return a.view(U16) if BF16 is not None and a.dtype == BF16 else a


def contiguous(a):
    if a is None or a.flags.c_contiguous:
        return a
    cp = _cp()
    if BF16 is not None and a.dtype == BF16:
        return cp.ascontiguousarray(a.view(U16)).view(BF16)
    return cp.ascontiguousarray(a)


def empty(shape, dtype):
    cp = _cp()
    if BF16 is not None and dtype == BF16:
        return cp.empty(shape, U16).view(BF16)
    return cp.empty(shape, dtype)


def shaped(a, shape):
    """``a.reshape(shape)``; bfloat16 through its uint16 bits (as every bfloat16 array here)."""
    if BF16 is not None and a.dtype == BF16:
        return a.view(U16).reshape(shape).view(BF16)
    return a.reshape(shape)


def aligned(*arrays):
    return all(a is None or not a.data.ptr & 15 for a in arrays)


def grid(n, block=256):
    """Blocks of ``block`` threads for a grid-stride loop over ``n`` items: enough to cover
    them, at most 8 per multiprocessor."""
    return max(1, min(-(-n // block), sms() * 8))


def rows_grid(rows, L):
    """The 2-d grid of the row kernels (256 threads a block, both axes looped in the kernels):
    x over a row's L positions, a block for every 2048 (8 a thread, at most 64 blocks), y over
    the rows, at most 4096 blocks: a block per 256 positions and row would schedule hundreds of
    thousands of blocks of a few hundred bytes for one large im2col."""
    return (max(1, min(-(-L // 2048), 64)), max(1, min(rows, 4096)))


def sms():
    """Multiprocessor count of the current device (memoized: CuPy's attributes query them all)."""
    cp = _cp()
    dev = cp.cuda.runtime.getDevice()
    n = _FUNCS.get(("sms", dev))
    if n is None:
        n = _FUNCS[("sms", dev)] = cp.cuda.Device(dev).attributes["MultiProcessorCount"]
    return n
