"""Elementwise math of the host's nn kernels: float32 Numba loops without libm calls (exp by
Cephes' expf with 2**n built from its bits, log1p by its atanh series, erf by Eigen's rational),
so LLVM vectorizes them, and NumPy block functions (in-place ufuncs on a block of rows) for
float64 and Numba-less runs. The kernels that use them are in ``_nn.py``.
"""
import numpy as np

from ruda.backends.host._jit import jit, parallel_kernel

try:
    import numba as _nb
except ImportError:          # optional: the NumPy block functions then serve every dtype
    _nb = None

if _nb is not None:
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
            e = u * (p / q)         # p / q first: u * p goes subnormal for tiny u
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

    @jit(inline="always")
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

    @jit(inline="always")
    def _sigmoid32(v):
        """float32 sigmoid; 0 below -88.3 (where it is below 2**-127), so that -inf * it is NaN
        in silu and glu, as torch; NaN stays NaN."""
        s, q = _exp32_parts(-v)
        r = np.float32(1.0) / (np.float32(1.0) + (s * q + s))
        if v <= np.float32(-88.3):
            return np.float32(0.0)
        return r if v == v else v

    @jit(inline="always")
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
        threshold p2), hardsigmoid (4), hardswish (5), relu6 (6), gelu with tanh (7), one loop
        each (so each vectorizes); NaN stays NaN."""
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
        elif kind == 7:             # (1 + tanh(u)) / 2 = sigmoid(2 u): no cancellation for x < 0
            for i in _nb.prange(x.size):
                v = x[i]
                r = v * _sigmoid32(f(1.5957691216057308) * v * (one + f(0.044715) * v * v))
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
                w = -abs(bx)
                s, q = _exp32_parts(w)
                r = (_log1p32_unit(s * q + s) + max(bx, zero)) / a
                if bx < f(-87.3):   # exp(bx) below the normals: log1p of it is itself,
                    s, q = _exp32_parts(w * f(0.5))         # exp(w / 2) squared, 0 past -104
                    h = s * q + s
                    r = h * h / a if w > f(-104.0) else zero
                r = v if bx > t else r
                out[i] = r if v == v else v

    @parallel_kernel(fastmath=False, cache=True)
    def _glu32_rows(x, out):
        rows, h = out.shape
        for i in _nb.prange(rows):
            for j in range(h):
                out[i, j] = x[i, j] * _sigmoid32(x[i, h + j])

    @jit(cache=True)
    def _swiglu32_rows(g, u, out):
        """float32 ``silu(g) * u`` over rows, serially (decode-sized rows: no thread pool)."""
        rows, n = out.shape
        for i in range(rows):
            for j in range(n):
                v = g[i, j]
                out[i, j] = v * _sigmoid32(v) * u[i, j]

    @jit(inline="always")
    def _exp32_below(d):
        """exp(d) for float32 d <= 0, 0 below -87.3 (so exp(-inf) is 0)."""
        e, q = _exp32_parts(d)
        return np.float32(0.0) if d < np.float32(-87.3) else e * q + e

    @jit(inline="always")
    def _sum_exp32(row, mf, acc):
        """sum(exp(row - mf)) in float64 for a float32 row whose maximum is mf, accumulated in
        the 16 lanes of acc (so the loop vectorizes)."""
        n = row.size
        n16 = n - n % 16
        acc[:] = 0.0
        for j0 in range(0, n16, 16):
            for k in range(16):
                acc[k] += np.float64(_exp32_below(row[j0 + k] - mf))
        s = 0.0
        for k in range(16):
            s += acc[k]
        for j in range(n16, n):
            s += np.float64(_exp32_below(row[j] - mf))
        return s

    @parallel_kernel(fastmath=False, cache=True)
    def _lse32_rows(x, m, out):
        """float32 logsumexp of each row given its maximum m (NumPy's SIMD max: NaN where the
        row holds one): m + log(sum(exp(x - m))); a row whose m is NaN or +-inf gives m."""
        for i in _nb.prange(x.shape[0]):
            mf = m[i]
            if mf != mf or mf == np.inf or mf == -np.inf:
                out[i] = mf
                continue
            out[i] = np.log(_sum_exp32(x[i], mf, np.empty(16, np.float64))) + np.float64(mf)

    @jit(nogil=True, fastmath=False, cache=True)
    def _softmax32_rows(x, m, log, out):
        """float32 softmax (log: log_softmax) of each row given its maximum m (NumPy's SIMD
        max: NaN where the row holds one): one pass summing exp(x - m) (no write), one writing
        exp(x - m) / sum (or (x - m) - log(sum), as torch: m + log(sum) rounded first would
        lose log(sum)'s low bits for large m); a row whose m is NaN or +-inf gives NaN, as
        torch."""
        rows, n = x.shape
        f = np.float32
        acc = np.empty(16, np.float64)
        for i in range(rows):
            mf = m[i]
            if mf != mf or mf == np.inf or mf == -np.inf:
                for j in range(n):
                    out[i, j] = np.nan
                continue
            s = _sum_exp32(x[i], mf, acc)
            if log:
                c = f(np.log(s))
                for j in range(n):
                    out[i, j] = (x[i, j] - mf) - c
            else:
                r = f(1.0 / s)
                for j in range(n):
                    out[i, j] = _exp32_below(x[i, j] - mf) * r
else:
    _erf32_flat = _act32_flat = _glu32_rows = _swiglu32_rows = _lse32_rows = None
    _softmax32_rows = None

_ACT32 = {"elu": 0, "silu": 1, "sigmoid": 2, "softplus": 3, "hardsigmoid": 4,
          "hardswish": 5, "relu6": 6, "gelu_tanh": 7}                           # _act32_flat's kinds


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
    p = _poly(_ERF32_P, z)
    p /= _poly(_ERF32_Q, z)
    o *= p                          # x * (P / Q): x * P goes subnormal for tiny x


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
        o -= u - 1                        # e - (u - 1): the rounding of u, exactly
        o /= u
        np.log(u, out=u)
        np.add(u, o, out=o)
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
