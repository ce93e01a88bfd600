"""What every op family of the wgpu backend shares: the IR kernel cache, the kernel-choice
thresholds, and taking memory and launching kernels through the queue (``self.ctx``).

Memory an op takes is declared with its role: ``_new`` for an array the op may return,
``_temp`` for a temporary (a reduction's partials); a plan being recorded (``_plan``) learns
the roles from these calls.
"""
import math

import numpy as np

from ruda.backends.wgpu._array import IR, WArray, contiguous_strides
from ruda.runtime import env, ir
from ruda.runtime.wgsl import VEC_UNROLL, WG

_K = {}   # op key -> ir.Kernel
VEC4_MIN = 1 << 16   # elements: from here on, unit-stride 4-byte maps and full reductions use vec4 kernels
RED_PARTS = 1024     # vec4 full reductions: at most this many partials (workgroups) in the first pass
#                      (a flat optimum: a few hundred to a few thousand do alike; far more is slower)
RED_BLOCK = 4 * WG * VEC_UNROLL   # ... which take the elements in blocks of this many, round robin
# ... and the last one folds them (RUDA_WGPU_TWO_PASS=1: a second pass does; read at import, so
# a value that is not a switch warns and keeps the single pass)
SINGLE_PASS = not env.flag("RUDA_WGPU_TWO_PASS", False, at_import=True)
I = ir.INDEX         # noqa: E741  (the IR index type, short as in the kernels)
NP_OF = {v: k for k, v in IR.items()}
OUT, TEMP = "out", "temp"   # roles of the memory an op takes (see _plan)


def np_of(irdt):
    return NP_OF[irdt]


class Base:
    """Memory and launches (mixin of the backend; ``self.ctx`` is its queue)."""

    def _alloc_array(self, shape, dtype, role):
        shape = tuple(int(s) for s in shape)
        ctx = self.ctx
        st = ctx.alloc(math.prod(shape) * ctx.renderer.itemsize[IR[np.dtype(dtype)]])
        if ctx.capture is not None:
            ctx.capture.take(st, role)
        return WArray(st, shape, contiguous_strides(shape), 0, np.dtype(dtype))

    def _new(self, shape, dtype):
        """A new C-contiguous array the op may return."""
        return self._alloc_array(shape, dtype, OUT)

    def _temp(self, shape, dtype):
        """A new C-contiguous array the op uses inside and never returns."""
        return self._alloc_array(shape, dtype, TEMP)

    def _launch(self, kernel, arrays, strides, shape, params=(), extras=None):
        views = [(a.offset, tuple(s)) for a, s in zip(arrays, strides)]
        self.ctx.launch(kernel, [a.st for a in arrays], views, tuple(shape), params, extras)

    def _index_dtype(self):
        return np.dtype(np.int64) if self.has_i64 else np.dtype(np.int32)

    def _contig(self, x):
        return x if x.is_contiguous() else self.copy(x)
