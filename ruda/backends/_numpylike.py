"""Ops written once for array modules with NumPy's API: NumPy (host) and CuPy (cuda).

``ops_for(mod)`` returns them bound to ``mod``; a backend's ``_ops`` module takes them with
``globals().update(ops_for(mod))`` and defines only what differs on its device.
``c99_complex(mod)`` holds the complex special values a module's kernels miss (CuPy's; NumPy
needs none), for the backends of such modules to take the same way.
"""
import contextlib
import math

from ruda.backends import store_shape


def _value_fits(x, key, value):
    """ValueError unless ``value`` broadcasts to ``x[key]`` under NumPy's rule, for keys with
    bool masks or bool scalars (CuPy stores such a value partly or not at all, silently)."""
    keys = key if isinstance(key, tuple) else (key,)
    def boolean(k):
        return isinstance(k, bool) or getattr(getattr(k, "dtype", None), "kind", "") == "b"
    masks = [k for k in keys if boolean(k) and getattr(k, "ndim", 0) > 0]
    if masks and len(keys) == 1:
        shape = (int(masks[0].sum()),) + tuple(x.shape[masks[0].ndim:])   # the mask's count
    elif not masks and any(boolean(k) for k in keys):
        shape = tuple(x[key].shape)
    else:
        return
    store_shape(value.shape, shape)


def _zero_signs(mod, x, out, axis):
    """NumPy's SIMD quicksort (AVX-512) can give equal zeros each other's sign, so its result is
    not a permutation of x; each row gets back as many -0.0 as it had, first (any order of
    equal values is a valid unstable sort)."""
    neg = mod.signbit(x) & (x == 0)
    if not neg.any():
        return
    zero = out == 0
    first = mod.cumsum(zero, axis=axis) <= neg.sum(axis=axis, keepdims=True)
    out[zero & first] = -0.0
    out[zero & ~first] = 0.0


def ops_for(mod):
    # CuPy's kernels do not warn and CuPy has no errstate
    errstate = getattr(mod, "errstate", None) or (lambda **_: contextlib.nullcontext())

    def getitem(x, key):
        return x[key]

    strict = mod.__name__ != "numpy"        # NumPy refuses a value that does not fit itself

    def setitem(x, key, value):
        if strict and getattr(value, "ndim", 0):
            _value_fits(x, key, value)
        x[key] = value

    def astype(x, dtype, copy=True):
        return x.astype(dtype, copy=copy)

    def arange(start, stop, step, dtype):
        return mod.arange(start, stop, step, dtype=dtype)

    def empty(shape, dtype):
        return mod.empty(shape, dtype=dtype)

    def eye(n_rows, n_cols, k, dtype):
        return mod.eye(n_rows, n_cols, k=k, dtype=dtype)

    def linspace(start, stop, num, dtype, endpoint):
        return mod.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)

    def tril(x, k):
        return mod.tril(x, k)

    def triu(x, k):
        return mod.triu(x, k)

    def isin(x1, x2, invert=False):
        return mod.isin(x1, x2, invert=invert)

    # reductions and views straight to the module: the frontend passes normalized axes and
    # concrete dtypes, so array-api-compat's argument handling is not needed on these hot paths
    def sum(x, axis, dtype, keepdims=False):
        return mod.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)

    def prod(x, axis, dtype, keepdims=False):
        return mod.prod(x, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(x, axis, keepdims=False):
        return mod.max(x, axis=axis, keepdims=keepdims)

    def mean(x, axis, keepdims=False):
        """mean; complex: each part of the sum divided by the count (NumPy and CuPy divide by
        the complex count, which turns the other part of an infinite one into NaN)."""
        if x.dtype.kind != "c":
            return mod.mean(x, axis=axis, keepdims=keepdims)
        s = mod.asarray(mod.sum(x, axis=axis, keepdims=keepdims))
        n = math.prod(x.shape[a] for a in (range(x.ndim) if axis is None else axis))
        with errstate(invalid="ignore"):                        # no values: NaN + NaN j
            mod.divide(s.real, n, out=s.real)
            mod.divide(s.imag, n, out=s.imag)
        return s

    def min(x, axis, keepdims=False):
        return mod.min(x, axis=axis, keepdims=keepdims)

    # NumPy needs kind="stable" (its default is not); CuPy's sort is always stable and takes no kind
    kinds = {True: "stable", False: "quicksort"} if mod.__name__ == "numpy" else {True: None, False: None}

    def sort(x, axis=-1, descending=False, stable=True):
        # descending sorts the reversed axis and reverses back: equal values (+-0) keep their order
        # and NaN (the largest) comes first, the order of argsort(descending=True)
        if descending:
            return mod.flip(sort(mod.flip(x, axis), axis, False, stable), axis)
        out = mod.sort(x, axis=axis, kind=kinds[stable])
        if not stable and mod.__name__ == "numpy" and x.dtype.kind == "f":
            _zero_signs(mod, x, out, axis)
        return out

    # complex expm1 and log1p accurate near 0, where exp(z) - 1 and log(1 + z) (NumPy's and
    # CuPy's) lose the digits: expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y and
    # log1p(x (2 + x) + y^2) / 2 + i atan2(y, 1 + x); the rest (and NaN/inf parts) as exp / log1p give
    def expm1(x):
        """Complex: exp(x) - 1 (C99's special values; e^a sin b without overflow), its real part
        where x and expm1(a) are finite as expm1(a) cos b - 2 sin^2(b / 2), which keeps the
        digits near 0 that e^a cos b - 1 cancels (written into the parts: 1j * v would turn a
        -0 imaginary part into +0 and inf into NaN)."""
        if x.dtype.kind != "c":
            return mod.expm1(x)
        re, im = x.real, x.imag
        with errstate(all="ignore"):
            out = mod.asarray(mod.exp(x))         # NumPy: 0-d in, a scalar out
            out -= 1
            em1 = mod.expm1(re)
            near = em1 * mod.cos(im) - 2 * mod.sin(im / 2) ** 2 + 0.0     # + 0.0: -0 is +0
            mod.copyto(out.real, near, where=mod.isfinite(x) & mod.isfinite(em1))
        return out

    def log1p(x):
        if x.dtype.kind != "c":
            return mod.log1p(x)
        re, im = x.real, x.imag
        with errstate(all="ignore"):
            near = (abs(re) < 0.5) & (abs(im) < 0.5)            # NaN parts are not near
            out = mod.asarray(mod.log1p(x))
            # written into the parts: + 1j * v would turn a -0 imaginary part into +0
            mod.copyto(out.real, 0.5 * mod.log1p(re * (2 + re) + im * im), where=near)
            out.imag[...] = mod.arctan2(im, 1 + re)     # NumPy's: CuPy's 1 + z turns -0 j into +0
            return out

    def tanh(x):
        out = mod.tanh(x)
        if x.dtype.kind == "c":
            out = mod.asarray(out)                    # NumPy's 0-d result is a scalar
            # the standard: tanh(+-inf + yj) is +-1 + 0j with y's sign for finite y (C99's, NumPy's and
            # CuPy's imaginary zero takes the sign of sin 2y)
            at_inf = mod.isinf(x.real) & mod.isfinite(x.imag)
            mod.copyto(out.imag, mod.copysign(mod.zeros_like(x.imag), x.imag), where=at_inf)
        return out

    def tan(x):
        out = mod.tan(x)
        if x.dtype.kind == "c":
            out = mod.asarray(out)
            # the standard's tan is -i tanh(iz): tan(x +- inf j) is 0 with x's sign +- 1j (C99's, NumPy's
            # and CuPy's real zero takes the sign of sin 2x)
            at_inf = mod.isinf(x.imag) & mod.isfinite(x.real)
            mod.copyto(out.real, mod.copysign(mod.zeros_like(x.real), x.real), where=at_inf)
        return out

    def permute_dims(x, axes):
        return x.transpose(axes)

    def matmul(x1, x2):
        # (..., m, k) @ (k, n) as one 2-D product over the folded leading axes: NumPy and CuPy
        # would loop over them in small products (several times slower for a batch of rows)
        if x2.ndim == 2 and x1.ndim > 2 and x1.size and x1.flags.c_contiguous:
            y = mod.matmul(x1.reshape(-1, x1.shape[-1]), x2)
            return y.reshape(x1.shape[:-1] + (x2.shape[-1],))
        return mod.matmul(x1, x2)

    def sign(x):
        """sign; complex: x / |x| of x scaled by a power of two (its larger part into [0.5, 1)),
        so that |x| and the quotients stay normal where x's parts are subnormal or huge (x / |x|
        gave NaN or 0 there); 0 where x is 0, NaN where a part is."""
        if x.dtype.kind != "c":
            return mod.sign(x)
        with errstate(all="ignore"):
            re, im = x.real, x.imag
            e = -mod.frexp(mod.maximum(mod.abs(re), mod.abs(im)))[1]   # 0 at 0, inf and NaN
            yr, yi = mod.ldexp(re, e), mod.ldexp(im, e)
            h = mod.hypot(yr, yi)
            zero = h == 0
            h = mod.where(zero, h.dtype.type(1), h)
            out = mod.empty_like(x)
            out.real[...] = yr / h
            out.imag[...] = yi / h
            mod.copyto(out, 0, where=zero)                            # sign(+-0 +- 0j) is 0 + 0j
        return out

    return {f.__name__: f for f in (getitem, setitem, astype, arange, empty, eye, linspace, tril,
                                     triu, isin, sum, prod, max, mean, min, sort, expm1, log1p, tan, tanh,
                                     permute_dims, matmul, sign)}


# The ops that accumulate (or call LAPACK) and so compute half dtypes in float32.
HALF_OPS = ("sum", "prod", "mean", "var", "std", "cumulative_sum", "cumulative_prod", "matmul",
            "tensordot", "vecdot", "clip") + tuple("linalg_" + n for n in (
                "cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm",
                "matrix_power", "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
                "vector_norm", "trace", "outer", "cross"))


def half_by_f32(mod, halves, own, compat):
    """The ops of :data:`HALF_OPS` (``own``'s where it defines them, else array-api-compat's
    ``compat``) taking half operands (dtypes ``halves``) as float32 copies, a half ``dtype``
    argument as float32, and rounding their float32 results once to the half dtype asked for
    (the operands' where none is; an explicit other dtype is kept).  float32 accumulation."""
    from ruda.backends import _map_native     # the package imports this module
    halves = frozenset(halves)
    f32 = mod.dtype("float32")
    nd = mod.ndarray
    scalar = getattr(mod, "generic", nd)

    def back(r, target):
        if target is None:
            return r
        # NumPy gives 0-d results as scalars
        return _map_native(r, lambda a: mod.asarray(a).astype(target) if a.dtype == f32 else a,
                           lambda a: isinstance(a, (nd, scalar)))

    def up(a, dtype_arg=False):
        if a.__class__ is nd:
            return a.astype(f32) if a.dtype in halves else a
        return f32 if dtype_arg and a in halves else a

    def wrap(fn):
        def op(*args, **kwargs):
            x = args[0]
            dt = kwargs.get("dtype")
            if dt is None and len(args) > 2 and isinstance(args[2], mod.dtype):
                dt = args[2]                                 # sum(x, axis, dtype, keepdims)
            target = dt if dt is not None else x.dtype
            if target not in halves and x.dtype not in halves:
                return fn(*args, **kwargs)
            r = fn(*[up(a, i == 2) for i, a in enumerate(args)],
                   **{k: up(a, k == "dtype") for k, a in kwargs.items()})
            return back(r, target if target in halves else None)
        op.__name__ = fn.__name__
        return op

    def source(name):
        if own.get(name) is not None:
            return own[name]
        if name.startswith("linalg_"):
            return getattr(compat.linalg, name[7:], None)
        return getattr(compat, name, None)

    return {n: wrap(source(n)) for n in HALF_OPS if source(n) is not None}


def complex_log(mod):
    """``log`` of ``mod`` whose complex real part keeps its digits near |z| = 1, for a module that
    takes log(hypot(x, y)) there (CuPy's thrust kernels; NumPy's C99 clog needs none):
    log1p((u - 1)(u + 1) + v^2) / 2 with u, v the larger and smaller of |x|, |y|."""
    def log(x):
        out = mod.log(x)
        if x.dtype.kind != "c":
            return out
        a, b = abs(x.real), abs(x.imag)
        u, v = mod.maximum(a, b), mod.minimum(a, b)
        m = mod.hypot(a, b)
        near = (m > 0.7) & (m < 1.4)                  # NaN and inf parts are not near
        out = mod.asarray(out)
        mod.copyto(out.real, 0.5 * mod.log1p((u - 1) * (u + 1) + v * v), where=near)   # (keeps -0 j)
        return out
    return log


def c99_complex(mod, ops=None):
    """``log``, ``log1p``, ``log2``, ``log10``, ``tan``, ``tanh`` and ``acosh`` of ``mod`` with C99's
    special values for complex input (each wraps ``ops[name]`` where given, else ``mod``'s).

    For a module whose complex kernels return NaN + NaN j where C99 (and the standard) do not:
    CuPy's, from FreeBSD msun through thrust, give NaN + NaN j for log, log1p, log2 and log10 of
    (+-inf + NaN j) and (NaN +- inf j) (C99: +inf + NaN j), tanh of (+-0 + inf j) and
    (+-0 + NaN j) (C99: +-0 + NaN j), tan (-i tanh(iz)) of (inf or NaN +- 0j) (NaN +- 0j) and
    acosh of (+-0 + NaN j) (C99: NaN + pi/2 j).  Each
    wrapper overwrites exactly those elements (two masked copies, no host synchronization).
    NumPy follows C99 already and takes none of these.
    """
    def inf_and_nan(x):
        re, im = x.real, x.imag
        return (mod.isinf(re) & mod.isnan(im)) | (mod.isnan(re) & mod.isinf(im))

    def fixed(name, special, real, imag):     # None: keep that part of x
        base = (ops or {}).get(name) or getattr(mod, name)

        def op(x):
            out = base(x)
            if x.dtype.kind == "c":
                out = mod.asarray(out)                # a 0-d result may be a scalar (NumPy's)
                mask = special(x)
                mod.copyto(out.real, x.real if real is None else real, where=mask)
                mod.copyto(out.imag, x.imag if imag is None else imag, where=mask)
            return out

        op.__name__ = name
        return op

    def scaled_log(name, factor):
        """NumPy's complex log2 and log10: each part of log times a real factor (CuPy's times a
        complex one: inf * (c + 0j) has a NaN imaginary part)."""
        def op(x):
            if x.dtype.kind != "c":
                return getattr(mod, name)(x)
            out = mod.asarray(log(x))
            out.real[...] *= factor
            out.imag[...] *= factor
            return out
        op.__name__ = name
        return op

    log = fixed("log", inf_and_nan, math.inf, math.nan)
    return {
        "log": log,
        "log1p": fixed("log1p", inf_and_nan, math.inf, math.nan),
        "log2": scaled_log("log2", 1 / math.log(2)),
        "log10": scaled_log("log10", 1 / math.log(10)),
        "tan": fixed("tan", lambda x: (x.imag == 0) & ~mod.isfinite(x.real), math.nan, None),
        "tanh": fixed("tanh", lambda x: (x.real == 0) & ~mod.isfinite(x.imag), None, math.nan),
        "acosh": fixed("acosh", lambda x: (x.real == 0) & mod.isnan(x.imag), math.nan, math.pi / 2),
    }
