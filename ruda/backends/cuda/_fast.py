"""Fast paths: ruda's own kernels in front of CuPy's for the cases where they are faster.

``binary(name, impl)`` (add, subtract, multiply, divide: ``_kernels.BINARY``) and ``sum(impl)``
return a function that launches a kernel from ``_kernels`` when the operands fit (contiguous, 16-byte aligned, one dtype, same shape or one 0-d
operand) and calls ``impl`` (CuPy) otherwise.  The Python path is kept lean:
kernels and launch configurations are memoized, so a small op costs one
``cupy.empty`` and one ``RawKernel`` launch on top of the checks.
"""
import numpy as np
import cupy

from ruda.backends.cuda import _kernels

_empty = cupy.empty
_int64 = np.int64
_getDevice = cupy.cuda.runtime.getDevice
try:
    _MULTI = cupy.cuda.runtime.getDeviceCount() > 1
except Exception:  # no driver or no GPU: the backend is never instantiated
    _MULTI = False

_sms = {}          # device id -> multiprocessor count
_launch = {}       # (n elements per vector, device id) -> (grid, block, int64 n) memo, bounded
_LAUNCH_MAX = 4096
ARG_MIN_CHUNK = 4096      # argmax/argmin of few long rows: chunks of at least this many elements ...
ARG_SPLIT_BLOCKS = 128    # ... over about this many blocks in all (at least 4 a row, else a block a row)
_KERNELS = {}      # (op, dtype, variant, device id) -> RawKernel
_FORCE_FALLBACK = False   # tests and benchmarks flip this to compare the fast paths with CuPy
STATS = {"fast": 0}       # launches of ruda's own kernels (tests check the fast paths ran)


def reset():
    """Forget loaded kernels and launch configurations (after a change of ``_kernels.CONFIG``)."""
    _KERNELS.clear()
    _launch.clear()
    _kernels._MODULES.clear()


def _device():
    return _getDevice() if _MULTI else 0


def _grid(nvec, dev, kind):
    """Grid size for ``nvec`` 16-byte vectors: enough blocks, capped for the grid-stride loop."""
    sms = _sms.get(dev)
    if sms is None:
        sms = _sms[dev] = cupy.cuda.Device(dev).attributes["MultiProcessorCount"]
    cfg = _kernels.CONFIG[kind]
    block = cfg["block"]
    need = -(-nvec // block) if nvec else 1
    return max(1, min(need, sms * cfg["blocks_per_sm"])), block


def _config(n, itemsize, dev, kind="binary"):
    key = (n, itemsize, dev, kind)
    c = _launch.get(key)
    if c is None:
        grid, block = _grid(n * itemsize // 16, dev, kind)
        c = ((grid,), (block,), _int64(n))
        if len(_launch) >= _LAUNCH_MAX:
            _launch.clear()
        _launch[key] = c
    return c


def _aligned(a):
    return not a.data.ptr & 15


def binary(name, impl):
    """Binary op ``name`` (one of ``_kernels.BINARY``): ruda's kernel where the operands fit, else
    ``impl``."""
    if name not in _kernels.BINARY:
        raise ValueError(f"ruda: no fast cuda kernel for {name!r} (only {sorted(_kernels.BINARY)})")

    def kernel(dt, variant, dev):
        k = _KERNELS.get((name, dt, variant, dev))
        if k is None:
            k = _KERNELS[(name, dt, variant, dev)] = _kernels.module("binary", name, dt).get_function(
                f"ruda_{name}_{variant}")
        return k

    supported = frozenset(dt for dt in _kernels.CTYPES if _kernels.supports_binary(name, dt))

    def op(a, b):
        dt = a.dtype
        if dt in supported and b.dtype == dt and not _FORCE_FALLBACK:
            sa, sb = a.shape, b.shape
            if sa == sb:
                variant, shape, big = "vv", sa, a
                ok = a._c_contiguous and b._c_contiguous and _aligned(a) and _aligned(b)
            elif not sb:
                variant, shape, big = "vs", sa, a
                ok = a._c_contiguous and _aligned(a)
            elif not sa:
                variant, shape, big = "sv", sb, b
                ok = b._c_contiguous and _aligned(b)
            else:
                ok = False
            if ok:
                n = big.size
                out = _empty(shape, dt)
                if n:
                    dev = _device()
                    grid, block, n64 = _config(n, dt.itemsize, dev)
                    kernel(dt, variant, dev)(grid, block, (a, b, out, n64))
                    STATS["fast"] += 1
                return out
        return impl(a, b)

    op.__name__ = name
    op.__wrapped__ = impl
    return op


def sum(impl):
    """Full sums (every axis) of contiguous arrays: ruda's two-stage kernel, else ``impl``."""
    def get(dt, dev):
        k = _KERNELS.get(("sum", dt, "", dev))
        if k is None:
            m = _kernels.module("sum", "sum", dt)
            k = _KERNELS[("sum", dt, "", dev)] = (m.get_function("ruda_sum_stage1"),
                                                  m.get_function("ruda_sum_stage2"))
        return k

    supported = frozenset(_kernels.SUM_ACC)

    def sum(x, axis=None, dtype=None, keepdims=False):
        dt = x.dtype
        if (dt in supported and (dtype is None or dtype == dt) and not _FORCE_FALLBACK
                and (axis is None or len(axis) == x.ndim) and x.size
                and x._c_contiguous and _aligned(x)):
            dev = _device()
            n = x.size
            grid, block, n64 = _config(n, dt.itemsize, dev, "sum")
            s1, s2 = get(dt, dev)
            partial = _empty(grid[0], np.float64)
            s1(grid, block, (x, n64, partial))
            out = _empty((1,) * x.ndim if keepdims else (), dt)
            s2((1,), (1024,), (partial, np.int32(grid[0]), out))
            STATS["fast"] += 1
            return out
        return impl(x, axis=axis, dtype=dtype, keepdims=keepdims)

    sum.__wrapped__ = impl
    return sum


def arg_reduce(name, impl):
    """argmax/argmin (``name``) of C-contiguous float32/float64 arrays over the last axis or all
    of them: ruda's kernel, a block per row (one launch, NumPy's first-NaN rule), or for few long
    rows a block per chunk and a merge (two); else ``impl``."""
    def op(x, axis=None, keepdims=False):
        if (x.dtype in _kernels.FLOATS and not _FORCE_FALLBACK and x.size and x._c_contiguous
                and (axis is None or axis == x.ndim - 1)):
            dev = _device()
            k = _KERNELS.get((name, x.dtype, "rows", dev))
            if k is None:
                k = _KERNELS[(name, x.dtype, "rows", dev)] = \
                    _kernels.module("arg", name, x.dtype).get_function(f"ruda_{name}_rows")
            n = x.size if axis is None else x.shape[-1]
            rows = x.size // n
            out = _empty(rows, np.int64)
            block = _kernels.CONFIG["arg"]["block"]
            nsplit = min(-(-n // ARG_MIN_CHUNK), ARG_SPLIT_BLOCKS // rows)
            if nsplit >= 4:         # few long rows: a block per chunk, then a warp per row
                chunk = -(-n // nsplit)
                nsplit = -(-n // chunk)
                pair = _KERNELS.get((name, x.dtype, "split", dev))
                if pair is None:
                    mod = _kernels.module("arg", name, x.dtype)
                    pair = _KERNELS[(name, x.dtype, "split", dev)] = (
                        mod.get_function(f"ruda_{name}_split"), mod.get_function(f"ruda_{name}_merge"))
                pv, pi = _empty((rows, nsplit), x.dtype), _empty((rows, nsplit), np.int64)
                pair[0]((nsplit, rows), (block,), (x, _int64(n), _int64(chunk), pv, pi))
                pair[1]((rows,), (32,), (pv, pi, np.int32(nsplit), out))
            else:
                k((rows,), (block,), (x, _int64(n), out))
            STATS["fast"] += 1
            if axis is None:
                return out.reshape((1,) * x.ndim if keepdims else ())
            return out.reshape(x.shape[:-1] + ((1,) if keepdims else ()))
        return impl(x, axis=axis, keepdims=keepdims)

    op.__name__ = name
    op.__wrapped__ = impl
    return op
