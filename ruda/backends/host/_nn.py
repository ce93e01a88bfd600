"""Fused nn kernels on the host (the names in ``ruda.backends.NN_KERNELS``; None where absent).

Contract: ruda/nn/README.md. ``softmax`` and ``swiglu`` run NumPy's SIMD ufuncs in place over
blocks of rows that stay in the caches, a block per thread (ufuncs release the GIL): one
read of x and one write of the result, where composed NumPy makes five passes. ``layer_norm``
and ``rms_norm`` are Numba row loops (a parallel and a serial build, ``_jit.py``; cached on disk),
accumulating in float64 (``add_rms_norm``: the residual add in the same loop, decoding-sized
rows); where Numba is missing they run blocked NumPy. float32 erf, gelu, elu,
silu, sigmoid, softplus, hardsigmoid, hardswish and glu are single Numba loops without libm calls (exp by Cephes' expf
with 2**n built from its bits, log1p by its atanh series), so LLVM vectorizes them; float64
and Numba-less runs use the NumPy block functions. ``dropout`` draws ruda.random's Philox words
in the same pass (``_philox.py``). bfloat16 computes in float32 and rounds once.
"""
import numpy as np

from ruda import _dtypes
from ruda.backends import _workers
from ruda.backends.host._jit import parallel_kernel

_BF16 = _dtypes.bfloat16
_BLOCK = 1 << 16            # elements of one block of rows (256 KiB of float32)
_SMALL_BLOCK = 1 << 14      # elementwise chains with temporaries: a block and its temporaries in L2
_PARALLEL = 1 << 16         # elements from which the Numba row loops run on the thread team
_SPREAD = 1 << 18           # elements from which the elementwise loops go to the host's workers


def _work(x):
    """(x as float32/float64 C-contiguous, the dtype to return) or (None, None)."""
    if x.dtype == np.float32 or x.dtype == np.float64:     # (ascontiguousarray makes 0-d 1-d)
        return (x if x.flags.c_contiguous else np.ascontiguousarray(x)), x.dtype
    if _BF16 is not None and x.dtype == _BF16:
        return x.astype(np.float32), x.dtype
    return None, None


def _spread(n, fn, per=1):
    """fn(a, b) over [0, n) in one call, or split over the host's workers when n * per (the
    elements) reaches _SPREAD."""
    T = min(_workers.THREADS, n) if n * per >= _SPREAD else 1
    _workers.run(lambda i: fn(n * i // T, n * (i + 1) // T), T)


def _blocks(rows, n, fn, block=_BLOCK):
    """Calls fn(r0, r1) over blocks of rows, spread over threads when the work is large."""
    step = max(1, block // max(1, n))
    spans = [(r, min(rows, r + step)) for r in range(0, rows, step)]
    T = _workers.THREADS
    if len(spans) < 2 * T or T == 1:
        for s in spans:
            fn(*s)
        return
    per = -(-len(spans) // T)
    _workers.run(lambda i: [fn(*s) for s in spans[i * per:(i + 1) * per]], -(-len(spans) // per))


def softmax(x, log):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    out = np.empty_like(xw)

    def run(r0, r1):
        xs, o = xw[r0:r1], out[r0:r1]
        m = xs.max(axis=1, keepdims=True)
        m[m == -np.inf] = 0                   # a row of -inf: 0/0 = NaN, as torch
        np.subtract(xs, m, out=o)
        if log:
            e = np.exp(o)
            o -= np.log(e.sum(axis=1, keepdims=True))
        else:
            np.exp(o, out=o)
            o /= o.sum(axis=1, keepdims=True)

    with np.errstate(invalid="ignore", divide="ignore"):
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


def swiglu(gate, up):
    gw, odt = _work(gate)
    uw, _ = _work(up)
    if gw is None or uw is None or gate.dtype != up.dtype:
        return NotImplemented
    shape = gw.shape
    n = shape[-1] if gw.ndim else 1
    g2, u2 = gw.reshape(-1, n), uw.reshape(-1, n)
    out = np.empty_like(g2)
    if gw.dtype == np.float32 and g2.size <= _BLOCK and _swiglu32_rows is not None:
        _swiglu32_rows(g2, u2, out)
    else:
        def run(r0, r1):
            g, o = g2[r0:r1], out[r0:r1]
            np.negative(g, out=o)
            np.exp(o, out=o)                  # exp(-g): inf for very negative g, then g/inf = -0
            o += 1
            np.divide(g, o, out=o)
            o *= u2[r0:r1]

        with np.errstate(over="ignore"):
            _blocks(g2.shape[0], n, run)
    out = out.reshape(shape)
    return out if odt == out.dtype else out.astype(odt)


# -- norms: Numba row loops (compiled on first call, cached on disk) ------------------------
try:
    import numba as _nb
except ImportError:          # optional: the norms then run blocked NumPy
    _nb = None

if _nb is not None:
    @_nb.njit(inline="always")
    def _ln_row(x, w, b, eps, out, i):
        n = x.shape[1]
        s = 0.0
        for j in range(n):
            s += x[i, j]
        mean = s / n
        v = 0.0
        for j in range(n):
            d = x[i, j] - mean
            v += d * d
        r = 1.0 / np.sqrt(v / n + eps)
        for j in range(n):
            out[i, j] = (x[i, j] - mean) * r * w[j] + b[j]

    @_nb.njit(inline="always")
    def _rms_row(x, w, eps, out, i):
        n = x.shape[1]
        s = 0.0
        for j in range(n):
            s += np.float64(x[i, j]) * x[i, j]
        r = 1.0 / np.sqrt(s / n + eps)
        for j in range(n):
            out[i, j] = x[i, j] * r * w[j]

    # (.serial for decoding: waking the thread team for one row costs far more than the row,
    # and fights BLAS's threads for the cores)
    @parallel_kernel(fastmath=False, cache=True)
    def _ln_rows(x, w, b, eps, out):
        for i in _nb.prange(x.shape[0]):
            _ln_row(x, w, b, eps, out, i)

    @parallel_kernel(fastmath=False, cache=True)
    def _rms_rows(x, w, eps, out):
        for i in _nb.prange(x.shape[0]):
            _rms_row(x, w, eps, out, i)

    @_nb.njit(fastmath=False, cache=True)
    def _add_rms_rows_serial(x, r, w, eps, s, out):
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                s[i, j] = x[i, j] + r[i, j]
            _rms_row(s, w, eps, out, i)

    @parallel_kernel(fastmath=False, cache=True)
    def _l2_rows(x, eps, out):
        """out[i] = x[i] / max(||x[i]||_2, eps), the norm accumulated in float64."""
        for i in _nb.prange(x.shape[0]):
            s = 0.0
            for j in range(x.shape[1]):
                s += np.float64(x[i, j]) * x[i, j]
            r = 1.0 / max(np.sqrt(s), eps)
            for j in range(x.shape[1]):
                out[i, j] = x[i, j] * r

    @parallel_kernel(fastmath=False, cache=True)
    def _gn_rows(x, groups, w, b, eps, out):
        N, C, sp = x.shape
        cg = C // groups
        cnt = cg * sp
        for u in _nb.prange(N * groups):
            n, g = u // groups, u % groups
            s = 0.0
            for ch in range(g * cg, (g + 1) * cg):
                for j in range(sp):
                    s += x[n, ch, j]
            mean = s / cnt
            v = 0.0
            for ch in range(g * cg, (g + 1) * cg):
                for j in range(sp):
                    d = x[n, ch, j] - mean
                    v += d * d
            r = 1.0 / np.sqrt(v / cnt + eps)
            for ch in range(g * cg, (g + 1) * cg):
                sc = r * w[ch]
                sh = b[ch] - mean * sc
                for j in range(sp):
                    out[n, ch, j] = x[n, ch, j] * sc + sh

    # the elementwise loops below run on slices spread over the host's workers (``_spread``,
    # each slice ``one_thread``): they sit between BLAS calls in networks, where the spinning
    # threads of a Numba team would slow the BLAS work that follows

    @parallel_kernel(nogil=True, fastmath=False, cache=True)
    def _affine_planes(x, scale, shift, out, c0):
        """out[p] = x[p] * scale[c] + shift[c] over planes p of x (P, L), plane p of channel
        c = (c0 + p) % C."""
        C = scale.shape[0]
        for p in _nb.prange(x.shape[0]):
            c = (c0 + p) % C
            s, t = scale[c], shift[c]
            xr, orow = x[p], out[p]
            for j in range(x.shape[1]):
                orow[j] = xr[j] * s + t

    @parallel_kernel(nogil=True, fastmath=False, cache=True)
    def _affine_rows(x, scale, shift, out):
        """out[n] = x[n] * scale + shift over the rows of x (N, C): channel_affine of L = 1."""
        for n in _nb.prange(x.shape[0]):
            xr, orow = x[n], out[n]
            for c in range(x.shape[1]):
                orow[c] = xr[c] * scale[c] + shift[c]

    @parallel_kernel(nogil=True, fastmath=False, cache=True)
    def _erf32_flat(x, out, gelu):
        # Eigen's float32 rational (below): no libm call, so LLVM vectorizes the loop
        f = np.float32
        for i in _nb.prange(x.size):
            v = x[i]
            u = v * f(0.7071067811865476) if gelu else v
            u = min(max(u, f(-4.0)), f(4.0))
            z = u * u
            p = f(-2.72614225801306e-10) * z + f(2.77068142495902e-08)
            p = p * z + f(-2.10102402082508e-06)
            p = p * z + f(-5.69250639462346e-05)
            p = p * z + f(-7.34990630326855e-04)
            p = p * z + f(-2.95459980854025e-03)
            p = p * z + f(-1.60960333262415e-02)
            q = f(-1.45660718464996e-05) * z + f(-2.13374055278905e-04)
            q = q * z + f(-1.68282697438203e-03)
            q = q * z + f(-7.37332916720468e-03)
            q = q * z + f(-1.42647390514189e-02)
            e = u * p / q
            r = f(0.5) * v * (f(1.0) + e) if gelu else e
            out[i] = r if v == v else v            # NaN stays NaN

    @_nb.extending.intrinsic
    def _i32_as_f32(typingctx, i):
        """The float32 whose bits are int32 ``i`` (a bitcast LLVM vectorizes)."""
        from numba.core import types
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], ir.FloatType())
        return types.float32(types.int32), codegen

    @_nb.njit(inline="always")
    def _exp32_parts(v):
        """(s, q) with exp(v) = s (1 + q) and expm1(v) = s q + (s - 1) for float32 v, by
        Cephes' expf: v = n ln2 + r, |r| <= ln2 / 2, q = r + r^2 P(r), s = 2**n built from
        its bits (no libm call, so the loops around it vectorize). v is clamped to
        [-87.3, 88.3], where 2**n stays a normal float32."""
        f = np.float32
        v = min(max(v, f(-87.3)), f(88.3))
        n = np.rint(v * f(1.4426950408889634))
        r = v - n * f(0.693359375)
        r = r - n * f(-2.12194440e-4)
        p = f(1.9875691500e-4) * r + f(1.3981999507e-3)
        p = p * r + f(8.3334519073e-3)
        p = p * r + f(4.1665795894e-2)
        p = p * r + f(1.6666665459e-1)
        p = p * r + f(5.0000001201e-1)
        s = _i32_as_f32((np.int32(n) + np.int32(127)) << np.int32(23))
        return s, p * r * r + r

    @_nb.njit(inline="always")
    def _sigmoid32(v):
        """float32 sigmoid; 0 below -88.3 (where it is below 2**-127), so that -inf * it is NaN
        in silu and glu, as torch; NaN stays NaN."""
        s, q = _exp32_parts(-v)
        r = np.float32(1.0) / (np.float32(1.0) + (s * q + s))
        if v <= np.float32(-88.3):
            return np.float32(0.0)
        return r if v == v else v

    @_nb.njit(inline="always")
    def _log1p32_unit(e):
        """log1p(e) for float32 e in [0, 1]: 2 atanh(u), u = e / (2 + e) <= 1/3, by its series
        to u**15 (relative error below 2e-8, no libm call)."""
        f = np.float32
        u = e / (f(2.0) + e)
        z = u * u
        w = f(1.0 / 15) * z + f(1.0 / 13)
        w = w * z + f(1.0 / 11)
        w = w * z + f(1.0 / 9)
        w = w * z + f(1.0 / 7)
        w = w * z + f(1.0 / 5)
        w = w * z + f(1.0 / 3)
        w = w * z + f(1.0)
        return f(2.0) * u * w

    @parallel_kernel(nogil=True, fastmath=False, cache=True)
    def _act32_flat(x, out, kind, p1, p2):
        """float32 elu (kind 0, alpha p1), silu (1), sigmoid (2), softplus (3, beta p1,
        threshold p2), hardsigmoid (4), hardswish (5), relu6 (6), one loop each (so each
        vectorizes); NaN stays NaN."""
        f = np.float32
        a, t, zero, one = f(p1), f(p2), f(0.0), f(1.0)
        if kind == 0:
            for i in _nb.prange(x.size):
                v = x[i]
                s, q = _exp32_parts(min(v, zero))
                r = v if v > zero else a * (s * q + (s - one))
                out[i] = r if v == v else v
        elif kind == 1:
            for i in _nb.prange(x.size):
                v = x[i]
                out[i] = v * _sigmoid32(v)
        elif kind == 2:
            for i in _nb.prange(x.size):
                v = x[i]
                r = _sigmoid32(v)
                out[i] = r if v == v else v
        elif kind == 6:
            for i in _nb.prange(x.size):
                v = x[i]
                r = min(max(v, zero), f(6.0))
                out[i] = r if v == v else v
        elif kind == 4 or kind == 5:
            for i in _nb.prange(x.size):
                v = x[i]
                h = min(max(v + f(3.0), zero), f(6.0)) / f(6.0)
                r = h * v if kind == 5 else h
                out[i] = r if v == v else v
        else:
            for i in _nb.prange(x.size):
                v = x[i]
                bx = v * a
                s, q = _exp32_parts(-abs(bx))
                r = (_log1p32_unit(s * q + s) + max(bx, zero)) / a
                r = v if bx > t else r
                out[i] = r if v == v else v

    @parallel_kernel(fastmath=False, cache=True)
    def _glu32_rows(x, out):
        rows, h = out.shape
        for i in _nb.prange(rows):
            for j in range(h):
                out[i, j] = x[i, j] * _sigmoid32(x[i, h + j])

    @_nb.njit(cache=True)
    def _swiglu32_rows(g, u, out):
        """float32 ``silu(g) * u`` over rows, serially (decode-sized rows: no thread pool)."""
        rows, n = out.shape
        for i in range(rows):
            for j in range(n):
                v = g[i, j]
                out[i, j] = v * _sigmoid32(v) * u[i, j]

    @parallel_kernel(fastmath=False, cache=True)
    def _lse32_rows(x, m, out):
        """float32 logsumexp of each row given its maximum m (NumPy's SIMD max: NaN where the
        row holds one): m + log(sum(exp(x - m))), summed in 16 float64 lanes (so the loop
        vectorizes); a row whose m is NaN or +-inf gives m."""
        rows, n = x.shape
        n16 = n - n % 16
        for i in _nb.prange(rows):
            mf = m[i]
            if mf != mf or mf == np.inf or mf == -np.inf:
                out[i] = mf
                continue
            acc = np.zeros(16, np.float64)
            for j0 in range(0, n16, 16):
                for k in range(16):
                    e, q = _exp32_parts(x[i, j0 + k] - mf)
                    acc[k] += np.float64(e * q + e)
            s = 0.0
            for k in range(16):
                s += acc[k]
            for j in range(n16, n):
                e, q = _exp32_parts(x[i, j] - mf)
                s += np.float64(e * q + e)
            out[i] = np.log(s) + np.float64(mf)

else:
    _ln_rows = _rms_rows = _l2_rows = _gn_rows = _affine_planes = _affine_rows = _erf32_flat = _act32_flat = _glu32_rows = None
    _swiglu32_rows = _add_rms_rows_serial = None
    _lse32_rows = None

_ACT32 = {"elu": 0, "silu": 1, "sigmoid": 2, "softplus": 3, "hardsigmoid": 4,
          "hardswish": 5, "relu6": 6}                                           # _act32_flat's kinds


def _param(p, n, fill, dt):
    return np.full(n, fill, dtype=dt) if p is None else np.ascontiguousarray(p, dtype=dt)


def layer_norm(x, weight, bias, eps):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    w, b = _param(weight, n, 1, xw.dtype), _param(bias, n, 0, xw.dtype)
    out = np.empty_like(xw)
    if _ln_rows is not None:
        (_ln_rows if xw.size >= _PARALLEL else _ln_rows.serial)(xw, w, b, float(eps), out)
    else:
        def run(r0, r1):
            xs = xw[r0:r1].astype(np.float64)
            xs -= xs.mean(axis=1, keepdims=True)
            xs /= np.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps)
            out[r0:r1] = xs * w + b
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


def rms_norm(x, weight, eps):
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    rows, n = xw.shape
    w = _param(weight, n, 1, xw.dtype)
    out = np.empty_like(xw)
    if _rms_rows is not None:
        (_rms_rows if xw.size >= _PARALLEL else _rms_rows.serial)(xw, w, float(eps), out)
    else:
        def run(r0, r1):
            xs = xw[r0:r1].astype(np.float64)
            xs /= np.sqrt((xs * xs).mean(axis=1, keepdims=True) + eps)
            out[r0:r1] = xs * w
        _blocks(rows, n, run)
    return out if odt == out.dtype else out.astype(odt)


def l2_normalize(x, eps):
    xw, odt = _work(x)
    if xw is None or _l2_rows is None:
        return NotImplemented
    out = np.empty_like(xw)
    (_l2_rows if xw.size >= _PARALLEL else _l2_rows.serial)(xw, float(eps), out)
    return out if odt == out.dtype else out.astype(odt)


def add_rms_norm(x, residual, weight, eps):
    """Decoding-sized float32/float64 rows: the residual add (in x's dtype) and rms_norm over
    the last axis in one serial Numba loop; larger work or other dtypes decline (ruda.nn then
    composes the two)."""
    if _add_rms_rows_serial is None or x.dtype not in (np.float32, np.float64) or \
            residual.dtype != x.dtype or x.size >= _PARALLEL:
        return NotImplemented
    n = x.shape[-1]
    x2, r2 = np.ascontiguousarray(x).reshape(-1, n), np.ascontiguousarray(residual).reshape(-1, n)
    s, out = np.empty_like(x2), np.empty_like(x2)
    _add_rms_rows_serial(x2, r2, _param(weight, n, 1, x.dtype), float(eps), s, out)
    return s.reshape(x.shape), out.reshape(x.shape)


# -- beyond the contract's names (None on other devices: ruda.nn composes there) -----------
# Each takes a block x and writes f(x) into o (same shape), in x's dtype, with in-place ufuncs.
def _sigmoid(x, o):
    np.negative(x, out=o)
    np.exp(o, out=o)                # inf for very negative x, then 1/inf = 0
    o += 1
    np.reciprocal(o, out=o)


def _erf_block(x, o, tables):
    """erf on a block by the rational approximations ``tables`` = (T, U, P, Q) (ruda.nn.erf's
    Cephes coefficients): |x| < 1: x T(x^2) / U(x^2); else 1 - exp(-x^2) P(|x|) / Q(|x|)."""
    _T, _U, _P, _Q = tables
    a = np.abs(x)
    z = x * x
    small = a < 1
    zs = np.where(small, z, 0)
    o[...] = x * _poly(_T, zs) / _poly(_U, zs)
    np.clip(a, 1, 10, out=a)
    big = np.exp(-z) * _poly(_P, a) / _poly(_Q, a)
    big = np.where(x < 0, big - 1, 1 - big)
    np.copyto(o, big, where=~small)


# float32 erf: Eigen's rational approximation on [-4, 4] (erf is +-1 in float32 beyond);
# absolute error below 5e-7, a third of the passes of the float64 tables
_ERF32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
            -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
            -1.60960333262415e-02)
_ERF32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
            -7.37332916720468e-03, -1.42647390514189e-02)


def _erf32_block(x, o):
    np.clip(x, -4, 4, out=o)
    z = o * o
    o *= _poly(_ERF32_P, z)
    o /= _poly(_ERF32_Q, z)


def _expm1_neg(x, o):
    """o = expm1(min(x, 0)) by ``2 t / (1 - t)``, ``t = tanh(x / 2)``: NumPy's SIMD tanh, exact
    to a few ulp near 0 (where exp(x) - 1 cancels) and -1 far below."""
    np.minimum(x, 0, out=o)
    o *= 0.5
    np.tanh(o, out=o)
    t = 1 - o
    o *= 2
    o /= t


def _poly(coef, z):
    r = z * z.dtype.type(coef[0]) + z.dtype.type(coef[1])
    for c in coef[2:]:
        r *= z
        r += z.dtype.type(c)
    return r


def _act(name, p1, p2):
    """The block function of activation ``name``."""
    def leaky_relu(x, o):                 # max(x, s x) for s <= 1, min(x, s x) above
        np.multiply(x, x.dtype.type(p1), out=o)
        (np.maximum if p1 <= 1 else np.minimum)(o, x, out=o)

    def elu(x, o):                        # max(x, 0) + alpha expm1(min(x, 0)): no mask
        _expm1_neg(x, o)
        o *= x.dtype.type(p1)
        o += np.maximum(x, 0)

    def erf(x, o):
        if x.dtype == np.float32:
            _erf32_block(x, o)
        else:
            _erf_block(x, o, p2)

    def gelu(x, o):
        erf(x * x.dtype.type(0.7071067811865476), o)
        o += 1
        o *= x
        o *= x.dtype.type(0.5)

    def gelu_tanh(x, o):
        np.multiply(x, x, out=o)
        o *= x.dtype.type(0.044715)
        o += 1
        o *= x
        o *= x.dtype.type(0.7978845608028654)
        np.tanh(o, out=o)
        o += 1
        o *= x
        o *= x.dtype.type(0.5)

    def silu(x, o):
        _sigmoid(x, o)
        o *= x

    def softplus(x, o):
        bx = x * x.dtype.type(p1)
        np.abs(bx, out=o)
        np.negative(o, out=o)
        np.exp(o, out=o)                  # e in (0, 1]; log1p(e) = log(u) - (u - 1 - e) / u
        u = o + 1                         # with u = 1 + e (NumPy's log1p is not SIMD)
        o -= u - 1
        o /= u
        np.log(u, out=u)
        np.subtract(u, o, out=o)
        o += np.maximum(bx, 0)
        o /= x.dtype.type(p1)
        big = bx > p2
        if big.any():
            np.copyto(o, x, where=big)

    def hardsigmoid(x, o):
        np.add(x, 3, out=o)
        np.clip(o, 0, 6, out=o)
        o /= 6

    def hardswish(x, o):
        hardsigmoid(x, o)
        o *= x

    def relu6(x, o):
        np.clip(x, 0, 6, out=o)

    return {"leaky_relu": leaky_relu, "elu": elu, "gelu": gelu, "gelu_tanh": gelu_tanh,
            "silu": silu, "sigmoid": _sigmoid, "softplus": softplus, "hardswish": hardswish,
            "hardsigmoid": hardsigmoid, "erf": erf, "relu6": relu6}.get(name)


def _by_blocks(xw, out, fn):
    x2 = xw.reshape(-1, xw.shape[-1]) if xw.ndim else xw.reshape(1, 1)
    o2 = out.reshape(x2.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        _blocks(x2.shape[0], x2.shape[1], lambda r0, r1: fn(x2[r0:r1], o2[r0:r1]), _SMALL_BLOCK)


def activation(x, name, p1, p2):
    """Elementwise activation ``name`` ("leaky_relu", "elu", "gelu", "gelu_tanh", "silu",
    "sigmoid", "softplus", "hardswish", "hardsigmoid", "relu6", "erf") of any shape; p1, p2 its
    parameters: leaky_relu's slope, elu's alpha, softplus' beta and threshold, and for erf and
    gelu (p2) the erf coefficient tables (T, U, P, Q) of ruda.nn (a backend cannot import them)."""
    xw, odt = _work(x)
    fn = _act(name, p1, p2)
    if xw is None or fn is None:
        return NotImplemented
    out = np.empty_like(xw)
    if name in ("erf", "gelu") and xw.dtype == np.float32 and _erf32_flat is not None:
        xf, of = xw.reshape(-1), out.reshape(-1)
        _spread(xf.size, lambda a, b: _erf32_flat.one_thread(xf[a:b], of[a:b], name == "gelu"))
    elif name in _ACT32 and xw.dtype == np.float32 and _act32_flat is not None:
        xf, of, kind, p1, p2 = xw.reshape(-1), out.reshape(-1), _ACT32[name], float(p1), float(p2)
        _spread(xf.size, lambda a, b: _act32_flat.one_thread(xf[a:b], of[a:b], kind, p1, p2))
    elif xw.size:
        _by_blocks(xw, out, fn)
    return out if odt == out.dtype else out.astype(odt)


def glu(x):
    """x (rows, 2h) -> (rows, h): ``x[:, :h] * sigmoid(x[:, h:])``."""
    xw, odt = _work(x)
    if xw is None:
        return NotImplemented
    h = xw.shape[1] // 2
    out = np.empty((xw.shape[0], h), dtype=xw.dtype)
    if xw.dtype == np.float32 and _glu32_rows is not None:
        _glu32_rows(xw, out)
        return out if odt == out.dtype else out.astype(odt)

    def run(r0, r1):
        o = out[r0:r1]
        _sigmoid(xw[r0:r1, h:], o)
        o *= xw[r0:r1, :h]

    with np.errstate(over="ignore"):
        _blocks(xw.shape[0], xw.shape[1], run)
    return out if odt == out.dtype else out.astype(odt)


def logsumexp(x):
    """x (rows, n), n > 0 -> (rows,): ``log(sum(exp(x), axis=1))``; float32 and bfloat16 only
    (float64 declines: ruda.nn composes it)."""
    xw, odt = _work(x)
    if xw is None or xw.dtype != np.float32 or _lse32_rows is None:
        return NotImplemented
    out = np.empty(xw.shape[0], dtype=np.float32)
    _lse32_rows(xw, xw.max(axis=1), out)
    return out if odt == out.dtype else out.astype(odt)


def group_norm(x, groups, weight, bias, eps):
    """x (N, C, sp): each (n, group) normalized over its C/groups channels and sp positions,
    then ``* weight[c] + bias[c]`` ((C,) or None)."""
    xw, odt = _work(x)
    if xw is None or _gn_rows is None:
        return NotImplemented
    C = xw.shape[1]
    out = np.empty_like(xw)
    _gn_rows(xw, int(groups), _param(weight, C, 1, xw.dtype), _param(bias, C, 0, xw.dtype),
             float(eps), out)
    return out if odt == out.dtype else out.astype(odt)


def channel_affine(x, scale, shift):
    """x (N, C, L) -> ``x * scale[c] + shift[c]`` per channel c (batch_norm's last step); scale,
    shift (C,) in x's compute dtype."""
    xw, odt = _work(x)
    if xw is None or _affine_planes is None or xw.size == 0:
        return NotImplemented
    out = np.empty_like(xw)
    scale = np.ascontiguousarray(scale, dtype=xw.dtype)
    shift = np.ascontiguousarray(shift, dtype=xw.dtype)
    N, C, L = xw.shape
    if L == 1:                          # (N, C) input: rows, vectorized over the channels
        x2, o2 = xw.reshape(N, C), out.reshape(N, C)
        _spread(N, lambda a, b: _affine_rows.one_thread(x2[a:b], scale, shift, o2[a:b]), C)
    else:
        x2, o2 = xw.reshape(N * C, L), out.reshape(N * C, L)
        _spread(N * C, lambda a, b: _affine_planes.one_thread(x2[a:b], scale, shift, o2[a:b], a),
                L)
    return out if odt == out.dtype else out.astype(odt)


from ruda.backends.host._nn_attention import apply_rope, sdpa  # noqa: E402,F401
from ruda.backends.host._nn_topk import top_k  # noqa: E402,F401
from ruda.backends.host._philox import dropout  # noqa: E402,F401
from ruda.backends.host._nn_conv import conv  # noqa: E402,F401
from ruda.backends.host._nn_pool import interpolate  # noqa: E402,F401
from ruda.backends.host._nn_quant import linear_quantized  # noqa: E402,F401
