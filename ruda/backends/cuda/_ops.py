"""CuPy implementations of ops that array-api-compat's CuPy namespace does not provide as ruda needs them.

Imported only once CuPy imports.  Every function receives validated native
(``cupy.ndarray``) arrays and plain Python parameters (see ruda/backends/__init__.py).
"""
import functools
import math

import array_api_compat.cupy as _ccp
import cupy as cp
import numpy as np

from ruda import _dtypes
from ruda.backends import arange_fill, arange_length
from ruda.backends._numpylike import c99_complex, complex_log, half_by_f32, ops_for
from ruda.backends.cuda import _ir, _numba
from ruda.runtime import ir

_SHARED = dict(ops_for(cp), log=complex_log(cp))
globals().update(_SHARED)
globals().update(c99_complex(cp, _SHARED))   # complex log*, tan, tanh, acosh: C99's special values


def _exact_scalar(value, dtype):
    """A 0-d array holding exactly ``value`` (bit copy from the host: CuPy's fill turns -0.0 into
    +0.0 with a memset, and passes Python ints to its kernels as int64).  CuPy fills through
    ``fill`` also in ``cupy.asarray`` of 0-d host arrays, ``cupy.full`` and ``x[key] = scalar``."""
    s = cp.empty((), dtype=dtype)
    s.set(np.asarray(value, dtype=dtype))   # synchronous for pageable host memory
    return s


def full(shape, fill_value, dtype):
    exact = dtype.kind in "iu" and not isinstance(fill_value, bool) and not -2**63 <= fill_value < 2**63
    if dtype.kind in "fc" and fill_value == 0:
        h = np.asarray(fill_value, dtype=dtype)
        exact = bool(np.signbit(h.real) or np.signbit(h.imag))
    if exact:
        return cp.broadcast_to(_exact_scalar(fill_value, dtype), shape).copy()
    return cp.full(shape, fill_value, dtype=dtype)


def _negative_zero(v):
    return v == 0 and math.copysign(1.0, v) < 0


def linspace(start, stop, num, dtype, endpoint):
    """cupy.linspace, also for complex bounds (CuPy takes real ones only), and with an exact -0.0 end.

    Complex: the real and imaginary parts are spaced separately, which is NumPy's arithmetic
    (a real ramp times a complex step).  CuPy stores the endpoint with ``x[-1] = stop``, a memset
    for any zero, so a -0.0 ``stop`` is written again from an exact scalar.
    """
    if dtype.kind == "c":
        start, stop = complex(start), complex(stop)
        out = cp.empty((num,), dtype)
        part = np.dtype(dtype.char.lower())
        out.real = linspace(start.real, stop.real, num, part, endpoint)
        out.imag = linspace(start.imag, stop.imag, num, part, endpoint)
        return out
    out = cp.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)
    if endpoint and num > 1 and _negative_zero(stop):
        out[-1] = _exact_scalar(stop, dtype)
    return out


def arange(start, stop, step, dtype):
    """NumPy's fill (``ruda.backends.arange_fill``; CuPy's is start + i * step)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        info = np.iinfo(dtype)
        if info.min <= stop <= info.max and info.min <= step <= info.max:
            return cp.arange(start, stop, step, dtype=dtype)
        # the values fit dtype but the stop or step does not (uint8 down to -1, or by -1), and
        # CuPy casts them: count in int64, or (uint64 past 2**63) fill on the host as NumPy does
        if dtype != np.uint64 or max(start, stop) <= np.iinfo(np.int64).max:
            return cp.arange(start, stop, step, dtype=np.int64).astype(dtype)
        return cp.asarray(np.arange(start, stop, step, dtype=dtype))
    n = arange_length(start, stop, step)
    wide, first, second, delta = arange_fill(start, step, dtype)
    out = cp.arange(n, dtype=wide) * delta[()] + first.astype(wide)[()]   # two kernels: not fused
    out[:2] = cp.asarray(np.stack([first, second]).astype(wide)[:n])
    return out.astype(dtype, copy=False)


# Float floor_divide, remainder and pow as IR kernels (ruda.runtime.cuda_c) compiled with IEEE
# subnormals: CuPy compiles its kernels with -ftz=true, which made float32 3.4e38 % 4e-45 NaN and
# float32 powers below 2**-126 zero.  floor_divide and remainder are NumPy's npy_divmod with the
# standard's results where exactly one operand of floor_divide is infinite; pow is CUDA's.
@functools.lru_cache(maxsize=None)
def _float_kernel(op, dt, ndim):
    args = (ir.Arg("x0", dt, ndim), ir.Arg("x1", dt, ndim), ir.Arg("out", dt, ndim, True))
    value = ir.op(op, ir.load(0, dt), ir.load(1, dt))
    return ir.Kernel(f"ruda_{op}", args, (), ndim, ir.Map((ir.Store(2, ir.Strided(), value),)))


def _float_binary(op, x1, x2):
    if x1.dtype == cp.float16:      # as NumPy's half loops: in float32, rounded once
        return _float_binary(op, x1.astype(cp.float32), x2.astype(cp.float32)).astype(cp.float16)
    x1, x2 = cp.broadcast_arrays(x1, x2)
    out = cp.empty(x1.shape, x1.dtype)
    if out.size:
        flat = [a.reshape(1) if a.ndim == 0 else a for a in (x1, x2, out)]
        _ir.launch(_float_kernel(op, _ir.IR_DTYPE[out.dtype], flat[2].ndim), flat[2].shape, flat)
    return out


def floor_divide(x1, x2):
    if x1.dtype.kind == "f":
        return _float_binary("floordiv", x1, x2)
    return cp.floor_divide(x1, x2)


def remainder(x1, x2):
    if x1.dtype.kind == "f":
        return _float_binary("mod", x1, x2)
    return cp.remainder(x1, x2)


def pow(x1, x2):
    if x1.dtype.kind == "f":
        return _float_binary("pow", x1, x2)
    return cp.pow(x1, x2)


# NumPy's argmax/argmin: the first NaN wins.  CuPy's float reductions return the index of *a* NaN,
# which one depending on the reduction tree, so NaN positions are searched apart (first True).
def _arg_nan_first(fn, x, axis, keepdims):
    i = fn(x, axis=axis, keepdims=keepdims)
    if x.dtype.kind != "f":
        return i
    nan = cp.isnan(x)
    return cp.where(nan.any(axis=axis, keepdims=keepdims), cp.argmax(nan, axis=axis, keepdims=keepdims), i)


def argmax(x, axis=None, keepdims=False):
    return _arg_nan_first(cp.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _arg_nan_first(cp.argmin, x, axis, keepdims)


# NumPy's shifts for every count: past the width or negative, left shifts give 0 and right shifts
# 0 / the sign fill.  CuPy computes a plain C << or >>, undefined there, so counts are clamped first.
def _shift_count(x2):
    bits = x2.dtype.itemsize * 8
    past = (x2 >= bits) if x2.dtype.kind == "u" else (x2 < 0) | (x2 >= bits)
    return past, cp.where(past, x2.dtype.type(bits - 1), x2)


def bitwise_left_shift(x1, x2):
    past, n = _shift_count(x2)
    return cp.where(past, x1.dtype.type(0), cp.left_shift(x1, n))


def bitwise_right_shift(x1, x2):
    past, n = _shift_count(x2)
    r = cp.right_shift(x1, n)      # a signed count of width-1 is the sign fill
    return cp.where(past, x1.dtype.type(0), r) if x1.dtype.kind == "u" else r


def reshape(x, shape, copy=None):
    if copy:
        return cp.reshape(x, shape).copy()
    if copy is False:
        y = x.view()
        try:
            y.shape = shape
        except AttributeError as e:
            raise ValueError(f"cannot reshape without a copy (copy=False): {e}") from None
        return y
    return cp.reshape(x, shape)


def repeat(x, repeats, axis=None):
    """numpy.repeat, also for repeats given as a device array (CuPy accepts only ints and lists).

    With Numba, one scatter kernel (``_numba.repeat_rows``) writes each input row to its
    output rows; without it (or if Numba's CUDA target fails to start), a gather through
    cumsum/searchsorted/take.  Both read the output length back (one scalar), as nonzero does.
    """
    if not isinstance(repeats, cp.ndarray):
        return cp.repeat(x, repeats, axis=axis)
    if axis is None:
        x = x.ravel()
        axis = 0
    n = x.shape[axis]
    reps = repeats.astype(cp.int64, copy=False)
    if reps.size == 1:     # broadcast to the axis, also to a length-0 one (the standard's rule)
        reps = cp.broadcast_to(reps.reshape(()), (n,))
    if reps.shape[0] != n:
        raise ValueError(f"ruda.repeat: repeats must have 1 or {n} entries (the length of the axis); "
                         f"got {reps.shape[0]}")
    if n and bool((reps < 0).any()):
        raise ValueError(f"repeats must be non-negative; got {int(reps.min())}")
    ends = cp.cumsum(reps)
    total = int(ends[-1]) if n else 0
    if _numba.disabled is None and _numba.available() and not _numba._simulator():
        moved = cp.moveaxis(x, axis, 0)
        m = math.prod(moved.shape[1:])
        rows = cp.ascontiguousarray(moved).reshape(n, m)
        out = cp.empty((total, m), x.dtype)
        if n and m and total:
            reps_c = cp.ascontiguousarray(reps)
            try:
                grid, block = _numba.repeat_grid(n, m)
                _numba.launch("repeat_rows", grid, block, rows, ends - reps_c, reps_c, out,
                              stream_ptr=cp.cuda.get_current_stream().ptr)
            except Exception as e:   # Numba's CUDA target unusable here: keep the CuPy path
                _numba.disabled = f"{type(e).__name__}: {e}"
                return repeat(x, repeats, axis=axis)
        return cp.moveaxis(out.reshape((total,) + moved.shape[1:]), 0, axis)
    idx = cp.searchsorted(ends, cp.arange(total, dtype=cp.int64), side="right")
    return cp.take(x, idx, axis=axis)


def linalg_solve(x1, x2):
    """cupy.linalg.solve with the standard's broadcasting of the stack dimensions (CuPy wants them
    equal) and empty operands answered without calling cuSOLVER/cuBLAS.  A 1-D ``x2`` is one vector
    for every matrix of ``x1`` (CuPy broadcasts it itself)."""
    if x2.ndim == 1:
        shape = x1.shape[:-1]
    else:
        stack = np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        if x1.shape[:-2] != stack:
            x1 = cp.ascontiguousarray(cp.broadcast_to(x1, stack + x1.shape[-2:]))
        if x2.shape[:-2] != stack:
            x2 = cp.ascontiguousarray(cp.broadcast_to(x2, stack + x2.shape[-2:]))
        shape = x2.shape
    if x1.size == 0 or x2.size == 0:
        return cp.empty(shape, cp.result_type(x1, x2))
    return cp.linalg.solve(x1, x2)


def _complex(a):
    return a if a.dtype.kind == "c" else a.astype(_dtypes.complex_of(a.dtype))


def linalg_eigvals(x):
    """Complex always (the standard); CuPy returns real eigenvalues of real input."""
    return _complex(cp.linalg.eigvals(x))


def linalg_eig(x):
    w, v = cp.linalg.eig(x)
    return _complex(w), _complex(v)


def _nd_fft(name):
    """CuPy's n-dimensional transform given ``s`` as a list: a tuple ``s`` equal to ``x.shape``
    made CuPy skip all resizing (cupy/fft/_fft.py ``_cook_shape``), wrong when ``axes`` sends those
    sizes to other axes."""
    impl = getattr(_ccp.fft, name)

    def transform(x, s=None, axes=None, norm="backward"):
        return impl(x, s=None if s is None else list(s), axes=axes, norm=norm)

    transform.__name__ = transform.__qualname__ = f"fft_{name}"
    return transform


fft_fftn, fft_ifftn, fft_rfftn, fft_irfftn = map(_nd_fft, ("fftn", "ifftn", "rfftn", "irfftn"))


def unstack(x, axis=0):
    lead = (slice(None),) * axis
    return tuple(x[lead + (i,)] for i in range(x.shape[axis]))


# CuPy sorts 1-D float32 / float64 (and what it flattens: unique, isin's table) with a radix sort,
# which orders NaN by its bits: a NaN with its sign bit set (-x of a NaN, 0/0 on an x86 host) came
# first, and isin's binary search then missed values.  Such NaNs are made positive first.
def _positive_nan(x):
    if x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        return cp.where(cp.isnan(x), x.dtype.type(math.nan), x)
    return x


_sort, _isin = sort, isin  # noqa: F821 - from ops_for


def sort(x, axis=-1, descending=False, stable=True):
    return _sort(_positive_nan(x), axis, descending, stable)


def argsort(x, axis=-1, descending=False, stable=True):
    return _ccp.argsort(_positive_nan(x), axis=axis, descending=descending, stable=stable)


def isin(x1, x2, invert=False):
    return _isin(x1, _positive_nan(x2), invert)


def unique_all(x):
    return _ccp.unique_all(_positive_nan(x))


def unique_counts(x):
    return _ccp.unique_counts(_positive_nan(x))


def unique_inverse(x):
    return _ccp.unique_inverse(_positive_nan(x))


def unique_values(x):
    return _ccp.unique_values(_positive_nan(x))


def _from_parts(re, im, dtype):
    """The complex array re + im j (written part by part: + 1j * im would turn -0 into +0)."""
    out = cp.empty(re.shape, dtype)
    out.real[...], out.imag[...] = re, im
    return out


def _complex_divide(a, b):
    """NumPy's complex division (Smith's: by the larger part of the divisor; a zero divisor gives
    each part / +0).  CuPy's scales by |Re b| + |Im b| without special cases: NaN + NaN j where
    that sum overflows and for a zero or infinite divisor, and 4j as -8.9e-17 + 4j."""
    dt = cp.result_type(a, b)
    a, b = a.astype(dt, copy=False), b.astype(dt, copy=False)
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    with np.errstate(all="ignore"):       # (NumPy posing as CuPy in the tests; CuPy never warns)
        by_real = abs(br) >= abs(bi)
        p, q = cp.where(by_real, br, bi), cp.where(by_real, bi, br)
        rat = q / p
        den = p + q * rat                   # divided by, as NumPy: 1 / den is subnormal past 2^126
        re = cp.where(by_real, ar + ai * rat, ar * rat + ai) / den
        im = cp.where(by_real, ai - ar * rat, ai * rat - ar) / den
        zero = p == 0                       # |p| >= |q|: the whole divisor is zero
        re, im = cp.where(zero, ar / abs(br), re), cp.where(zero, ai / abs(br), im)
    return _from_parts(re, im, dt)


def divide(x1, x2):
    if cp.result_type(x1, x2).kind == "c":
        return _complex_divide(x1, x2)
    return _ccp.divide(x1, x2)


def reciprocal(x):
    """Complex: NumPy's loop (1 / x through the larger part of x; 1 / (2 + 0j) is 0.5 - 0j), not
    CuPy's 1 / x by the |Re x| + |Im x| scaling (NaN for infinite or huge x)."""
    if x.dtype.kind != "c":
        return cp.reciprocal(x)
    xr, xi = x.real, x.imag
    with np.errstate(all="ignore"):
        by_real = abs(xi) <= abs(xr)
        p, q = cp.where(by_real, xr, xi), cp.where(by_real, xi, xr)
        r = q / p
        d = p + q * r
        re, im = cp.where(by_real, 1 / d, r / d), cp.where(by_real, -r / d, -1 / d)
    return _from_parts(re, im, x.dtype)


def nextafter(x1, x2):
    """float16: CuPy's gives NaN for an infinite x1; NumPy's x2 where equal, else the largest
    finite value of x1's sign."""
    out = _ccp.nextafter(x1, x2)
    if out.dtype == cp.float16:
        edge = cp.isinf(x1) & ~cp.isnan(x2)
        out = cp.where(edge, cp.where(x1 == x2, x2, cp.copysign(cp.float16(65504), x1)), out).astype(out.dtype)
    return out


# fftfreq and rfftfreq as NumPy's: i * (1 / (n d)) (CuPy's i / (n d) is an ulp apart)
def fft_fftfreq(n, d=1.0, dtype=None):
    i = cp.concatenate((cp.arange(0, (n - 1) // 2 + 1), cp.arange(-(n // 2), 0)))
    return (i * (1.0 / (n * d))).astype(dtype or cp.float64, copy=False)


def fft_rfftfreq(n, d=1.0, dtype=None):
    return (cp.arange(0, n // 2 + 1) * (1.0 / (n * d))).astype(dtype or cp.float64, copy=False)


# float16 (CuPy's dtype): the accumulating ops and cuSOLVER's take float32 copies and round once
# (_numpylike.half_by_f32; bfloat16 has its own routes in _bf16).
globals().update(half_by_f32(cp, (_dtypes.float16,), globals(), _ccp))
