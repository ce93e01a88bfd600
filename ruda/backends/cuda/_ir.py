"""Launch kernels of the runtime's IR on cuda: render (``ruda.runtime.cuda_c``), compile, pack, launch.

``launch(kernel, shape, arrays, params)`` runs an :mod:`ruda.runtime.ir` kernel over the
iteration ``shape`` with one ``cupy.ndarray`` per ``Kernel.args`` entry.  Each array is
passed at its first element with its own strides (in elements; 0 for broadcast dimensions),
so any view works.  Programs are memoized by kernel (IR kernels are hashable), modules by
source (``_kernels.compile_source``: in-process memo + on-disk binaries).
"""
import numpy as np
import cupy

from ruda.backends.cuda import _kernels
from ruda.runtime import cuda_c, packing

RENDERER = cuda_c.CudaCRenderer()
IR_DTYPE = {np.dtype(k): v for k, v in {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
    "uint16": "u16", "uint32": "u32", "uint64": "u64", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128"}.items()}
_PROGRAMS = {}


def program(kernel):
    p = _PROGRAMS.get(kernel)
    if p is None:
        p = _PROGRAMS[kernel] = RENDERER.render(kernel)
    return p


def launch(kernel, shape, arrays, params=(), extras=None):
    prog = program(kernel)
    if len(arrays) != len(kernel.args):
        raise ValueError(f"ruda.backends.cuda._ir.launch: kernel {kernel.name!r} takes {len(kernel.args)} "
                         f"buffers; got {len(arrays)}")
    views = []
    for a, arg in zip(arrays, kernel.args):
        if IR_DTYPE.get(a.dtype) != arg.dtype:
            raise TypeError(f"ruda.backends.cuda._ir.launch: buffer {arg.name!r} of kernel {kernel.name!r} "
                            f"must be {arg.dtype}; got {a.dtype}")
        strides = tuple(s // a.itemsize for s in a.strides)
        if arg.ndim == 0:
            strides = ()
        elif len(strides) != arg.ndim:
            raise ValueError(f"ruda.backends.cuda._ir.launch: buffer {arg.name!r} needs {arg.ndim} "
                             f"dimensions; got shape {a.shape}")
        views.append((0, strides))
    words = packing.pack(kernel, tuple(shape), views, params, extras)
    g = prog.grid(words)
    if not g:
        return
    meta = cupy.asarray(words)
    fn = _kernels.compile_source(prog.source).get_function(prog.name)
    fn((g,), (prog.block,), (meta, *arrays))
