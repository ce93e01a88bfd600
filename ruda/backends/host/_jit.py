"""Numba kernels compiled twice from one function: for Numba's OpenMP team (``prange`` loops in
parallel) and serially (``prange`` as ``range``).

``kernel(*args)`` runs the parallel build, except in a process forked after ruda's import,
where Numba's OpenMP layer would end the process ("fork() called from a process already using
GNU OpenMP", as in a ``multiprocessing`` pool on Linux): there it runs the serial build, as
``kernel.serial(*args)`` always does (decode-sized work, where waking the team costs more than
the loop). ``kernel.one_thread(*args)`` runs the parallel build on the calling thread alone."""
import threading
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

    def one_thread(self, *args):
        """The parallel build with Numba's team cut to this thread (for work that the host's
        workers spread): Numba vectorizes a ``prange`` body that it leaves scalar in the serial
        build (a float32 silu loop: ~7x). Serial in a forked child, and where Numba's threading
        layer is its workqueue, which ends the process when two threads launch at once."""
        if _workers.forked or _LAYER_SAFE[0] is False:
            return self.serial(*args)
        if _LAYER_SAFE[0] is None:          # the first launch picks the layer: one at a time
            with _FIRST:
                if _LAYER_SAFE[0] is None:
                    r = self._alone(*args)
                    _LAYER_SAFE[0] = _nb.threading_layer() != "workqueue"
                    return r
            return self.one_thread(*args)
        return self._alone(*args)

    def _alone(self, *args):
        was = _nb.get_num_threads()         # per thread
        if was == 1:
            return self.parallel(*args)
        _nb.set_num_threads(1)
        try:
            return self.parallel(*args)
        finally:
            _nb.set_num_threads(was)


_FIRST = threading.Lock()
_LAYER_SAFE = [None]        # whether Numba's threading layer takes launches from several threads


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

