"""Numba kernels compiled twice from one function: for Numba's OpenMP team (``prange`` loops in
parallel) and serially (``prange`` as ``range``).

``kernel(*args)`` runs the parallel build, except in a process forked after ruda's import,
where Numba's OpenMP layer would end the process ("fork() called from a process already using
GNU OpenMP", as in a ``multiprocessing`` pool on Linux): there it runs the serial build, as
``kernel.serial(*args)`` always does (decode-sized work, where waking the team costs more than
the loop, and work that the host's own workers spread)."""
import types

from ruda.backends import _workers

try:
    import numba as _nb
except ImportError:          # optional: callers test for None kernels
    _nb = None


class Kernel:
    __slots__ = ("parallel", "serial")

    def __init__(self, parallel, serial):
        self.parallel = parallel
        self.serial = serial

    def __call__(self, *args):
        return (self.serial if _workers.forked else self.parallel)(*args)


def jit(**options):
    """``numba.njit`` with NumPy's error model, as every host kernel compiles: a division by
    zero gives inf, NaN or 0 as in NumPy instead of raising, and loops that divide vectorize
    (Python's model tests each divisor, which keeps them scalar)."""
    return _nb.njit(error_model="numpy", **options)


def parallel_kernel(**options):
    """Decorator: ``Kernel`` of ``jit(parallel=True, **options)`` and its serial twin
    (compiled from a copy named ``<name>_serial``, so that the two cache on disk apart)."""
    def build(fn):
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_serial",
                                  fn.__defaults__, fn.__closure__)
        twin.__qualname__ = fn.__qualname__ + "_serial"
        twin.__doc__ = fn.__doc__
        return Kernel(jit(parallel=True, **options)(fn), jit(**options)(twin))
    return build

