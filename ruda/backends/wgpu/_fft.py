"""Native FFTs of the wgpu backend (the ``fft_*`` ops), as IR kernels.

Algorithm
---------
Mixed-radix Stockham autosort, one dispatch per pass, no transposes.  With ``L`` the length
transformed so far, radix ``r`` and ``Mo = N / (L r)``, element ``m + (N / L) k`` of a pass's
input holds sub-transform ``m`` at frequency ``k``; one pass computes, per butterfly
``(m' < Mo, k < L)``::

    out[m' + Mo (k + L p)] = sum_{q < r} w_r^(q p) * w_{L r}^(q k) * in[m' + Mo q + Mo r k]

for all ``p < r`` at once: r loads, r - 1 twiddles (table index ``q k N / (L r)``, no modulo)
and an r-point DFT network unrolled at kernel-construction time (radix a compile-time
constant).  The transformed axis is addressed through its stride in each operand (any axis,
any view); the other axes are batch coordinates.  Lengths whose prime factors are all
``<= MAX_PRIME`` (13) use radices grouped up to ``MAX_RADIX`` (16): 1024 = 16*16*4 is three
dispatches.  Other lengths use Bluestein's chirp-z algorithm on a smooth padded length
``m >= 2n - 1``: the chirp premultiply is fused into the first pass, the pointwise product
with the (cached, device-computed) FFT of the chirp into the last forward pass, and the final
chirp, the norm scale, cropping to the output length and (for irfft/hfft) the real part into
the last inverse pass.  The inverse transform is ``conj(DFT(conj(x)))`` (runtime flags of the
same pipelines).

Cropping / zero padding (``n`` / ``s``), the real input of rfft/ihfft and the Hermitian
extension of irfft/hfft are folded into the first pass's loads; the norm scale and the
output length into the last pass's store.  Twiddle tables ``exp(-2 pi i t / N)`` and chirps
are computed on the device once per (length, dtype, direction) by a map kernel, in f64
arithmetic where the adapter has it (ruda's f64 sin/cos from f64 arithmetic, see
``ruda.runtime.wgsl_math``), and cached.  The chirp angle needs ``p**2 mod 2n`` exactly: i64
on adapters with shader-int64, i32 while ``n <= 46340``; only beyond that on an adapter
without int64 is the chirp table computed on the host and uploaded once per length (a
constant parameter table, not a data round trip).
"""
import dataclasses
import math

import numpy as np

from ruda import _dtypes
from ruda.backends.wgpu._array import IR, collapse, contiguous_strides
from ruda.runtime import ir

I = ir.INDEX         # noqa: E741  (the IR index type, short as in the kernels)
_KF = {}               # kernel key -> ir.Kernel
MAX_RADIX = 16         # radices are products of prime factors up to this
MAX_PRIME = 13         # lengths with a larger prime factor go through Bluestein
_TABLES_MAX = 64       # cached twiddle / chirp tables per backend instance


def _factor(n):
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def fft_plan(n, max_prime=None):
    """Radices (product ``n``) of the Stockham passes for length ``n``; None: use Bluestein."""
    max_prime = MAX_PRIME if max_prime is None else max_prime
    if n == 1:
        return [1]
    primes = _factor(n)
    if primes[-1] > max_prime:
        return None
    bins = []
    for p in sorted(primes, reverse=True):     # first-fit decreasing into radices <= MAX_RADIX
        for i, b in enumerate(bins):
            if b * p <= MAX_RADIX:
                bins[i] = b * p
                break
        else:
            bins.append(p)
    return bins


def _smooth_at_least(n, max_prime):
    m = n
    while fft_plan(m, max_prime) is None:
        m += 1
    return m


def _scale(norm, n, inverse):
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "backward") == inverse:
        return 1.0 / n
    return 1.0


def _swap(norm):
    return {"backward": "forward", "forward": "backward"}.get(norm, norm)


_HCLS = {}


def _hashed_class(cls):
    """A subclass of IR dataclass ``cls`` whose hash is computed once per node."""
    h = _HCLS.get(cls)
    if h is None:
        def __hash__(self):
            v = self.__dict__.get("_hash")
            if v is None:
                v = cls.__hash__(self)
                object.__setattr__(self, "_hash", v)
            return v
        h = _HCLS[cls] = type(cls.__name__, (cls,), {"__hash__": __hash__, "__module__": __name__})
    return h


def _hash_consed(node, memo=None):
    """``node`` (a Kernel, body, Store, index or Expr) rebuilt from hash-caching node classes.

    IR nodes are frozen dataclasses whose hash walks the whole subtree; an FFT network is a DAG
    with heavy sharing, so the renderer's memo and the pipeline / layout caches (which hash the
    kernel on every launch) would walk it as an exponentially large tree."""
    memo = {} if memo is None else memo
    if isinstance(node, tuple):
        return tuple(_hash_consed(v, memo) for v in node)
    if not dataclasses.is_dataclass(node) or isinstance(node, type):
        return node
    got = memo.get(id(node))
    if got is None:
        vals = [_hash_consed(getattr(node, f.name), memo) for f in dataclasses.fields(node)]
        got = memo[id(node)] = _hashed_class(type(node))(*vals)
    return got


def _cmul_const(v, w, cdt):
    """v * w for a Python complex constant w (exact for 1, -1, +-i)."""
    for exact in (1, -1, 1j, -1j):
        if abs(w - exact) < 1e-12:
            if exact == 1:
                return v
            if exact == -1:
                return ir.op("neg", v)
            return ir.op("mul", v, ir.Const(exact, cdt))     # (0, +-1): exact in the product
    return ir.op("mul", v, ir.Const(w, cdt))


def _dft_exprs(vals, sign, cdt):
    """The DFT (``exp(sign 2 pi i q p / r)``) of the IR values ``vals``, as a small FFT network
    built at kernel-construction time (Cooley-Tukey on the smallest prime factor)."""
    r = len(vals)
    if r == 1:
        return list(vals)
    f = _factor(r)[0]
    if f == r:          # prime: direct
        out = []
        for p in range(r):
            acc = vals[0]
            for q in range(1, r):
                # the angle of q p mod r: q p itself reaches (r - 1)^2, whose cos/sin lose ulps
                acc = ir.op("add", acc, _cmul_const(vals[q], _cis_const(sign * 2 * math.pi * (q * p % r) / r),
                                                    cdt))
            out.append(acc)
        return out
    g = r // f
    subs = [_dft_exprs(vals[j::f], sign, cdt) for j in range(f)]
    out = [None] * r
    for p in range(g):
        col = [_cmul_const(subs[j][p], _cis_const(sign * 2 * math.pi * (j * p % r) / r), cdt) for j in range(f)]
        res = _dft_exprs(col, sign, cdt)
        for u in range(f):
            out[p + g * u] = res[u]
    return out


def _cis_const(theta):
    return complex(math.cos(theta), math.sin(theta))


def _pass_kernel(cdt, sdt, odt, nb, r, kind, premul, postmul):
    """One Stockham pass of radix ``r`` (see the module docstring) as butterflies: iteration
    point ``u = m' + Mo k`` (k < L) loads the r inputs ``in[m' + Mo q + Mo r k]``, multiplies
    them by the twiddles ``w_{L r}^(q k)`` (table index ``q k (N / L r)``, no modulo), runs an
    r-point forward DFT network and stores output ``k + L p`` for every p < r.  The runtime
    flags ``cin`` / ``cout`` conjugate the loads / the results (the inverse transform is
    ``conj(DFT(conj(x)))``); compile-time flags shape the first pass's loads (source kind,
    chirp premultiply) and the last pass's stores (chirp / spectrum postmultiply, real part)."""
    key = ("fftpass", cdt, sdt, odt, nb, r, kind, premul, postmul)
    k = _KF.get(key)
    if k is not None:
        return k
    rdt = ir.real_of(cdt)
    nd = nb + 1
    args = [ir.Arg("x", sdt, nd), ir.Arg("tw", cdt, 0)]
    if premul:
        args.append(ir.Arg("pre", cdt, 0))
    if postmul:
        args.append(ir.Arg("post", cdt, 0))
    args.append(ir.Arg("out", odt, nd, True))
    a_pre = 2 if premul else None
    a_post = (3 if premul else 2) if postmul else None
    a_out = len(args) - 1
    Mo, M, ML, TS, nvalid, nlog, nout = [ir.Param(i, I) for i in range(7)]
    cin = ir.Param(7, "bool")
    cout = ir.Param(8, "bool")
    scale = ir.Param(9, rdt)
    zero_i = ir.Const(0, I)
    zero_c = ir.Const(0, cdt)
    op = ir.op
    c = [ir.Coord(d) for d in range(nd)]
    bc = tuple(c[:nb])
    u = c[nb]
    mp = op("mod", u, Mo)
    kk = op("floordiv", u, Mo)
    base = op("add", mp, op("mul", M, kk))

    def load_at(p):
        return ir.cast(ir.Load(0, ir.Strided(bc + (p,)), sdt), cdt)

    def value(pos):
        if kind == "h":         # Hermitian extension of the first n//2+1 values
            mh = op("add", op("floordiv", nlog, ir.Const(2, I)), ir.Const(1, I))
            lo = op("lt", pos, mh)
            qi = ir.select(lo, pos, op("sub", nlog, pos))
            valid = op("and", op("lt", qi, nvalid), op("ge", qi, zero_i))
            v = ir.select(valid, load_at(ir.select(valid, qi, zero_i)), zero_c)
            v = ir.select(lo, v, op("conj", v))
        else:                   # complex, or real cast to complex; zero past the valid input
            valid = op("lt", pos, nvalid)
            v = ir.select(valid, load_at(ir.select(valid, pos, zero_i)), zero_c)
        v = ir.select(cin, op("conj", v), v)
        if premul:
            inb = op("lt", pos, nlog)
            w = ir.Load(a_pre, ir.Flat(ir.select(inb, pos, zero_i)), cdt)
            v = ir.select(inb, op("mul", v, w), zero_c)
        return v

    vals = []
    for q in range(r):
        v = value(op("add", base, op("mul", Mo, ir.Const(q, I))) if q else base)
        if q:
            tw = ir.Load(1, ir.Flat(op("mul", op("mul", kk, ir.Const(q, I)), TS)), cdt)
            v = op("mul", v, tw)
        vals.append(v)
    outs = _dft_exprs(vals, -1, cdt)
    obase = op("add", mp, op("mul", Mo, kk))
    stores = []
    for p in range(r):
        j = op("add", obase, op("mul", ML, ir.Const(p, I))) if p else obase
        inside = op("lt", j, nout)
        val = ir.select(cout, op("conj", outs[p]), outs[p])
        if postmul:
            val = op("mul", val, ir.Load(a_post, ir.Flat(ir.select(inside, j, zero_i)), cdt))
        val = ir.cast(op("mul", val, ir.cast(scale, cdt)), odt)
        stores.append(ir.Store(a_out, ir.Strided(bc + (j,)), val, inside))
    k = _KF[key] = _hash_consed(ir.Kernel(f"fft_pass{r}", tuple(args), (I,) * 7 + ("bool", "bool", rdt), nd,
                                          ir.Map(tuple(stores))))
    return k


class _Geo:
    """Batch geometry shared by every pass of one 1-d transform."""

    __slots__ = ("bshape", "cb", "src_b", "out_b", "tmp_b", "N", "temps", "cdt")

    def __init__(self, bshape, src_b, out_b, N, cdt):
        self.bshape = bshape
        self.N = N
        self.cdt = cdt
        tmp_b = contiguous_strides(tuple(bshape) + (N,))[:-1]
        cb, (s1, s2, s3) = collapse(tuple(bshape), [src_b, out_b, tmp_b])
        pad = max(0, 2 - len(cb))       # at least 2 batch dims: fewer kernel variants to compile
        cb, s1, s2, s3 = ((1,) * pad + tuple(cb), (0,) * pad + tuple(s1), (0,) * pad + tuple(s2),
                          (0,) * pad + tuple(s3))
        self.cb, self.src_b, self.out_b, self.tmp_b = cb, s1, s2, s3
        self.temps = []


class FftOps:
    """Mixin of WgpuBackend: every ``fft_*`` op, natively."""

    fft_max_prime = MAX_PRIME   # class knob (tests lower it to force Bluestein on smooth lengths)

    # ================================================================== tables
    def _fft_cache(self):
        d = self.__dict__.get("_fft_tables")
        if d is None:
            d = self.__dict__["_fft_tables"] = {}
        return d

    def _fft_cached(self, key, make):
        d = self._fft_cache()
        v = d.get(key)
        if v is None:
            v = make()
            if len(d) >= _TABLES_MAX:
                d.pop(next(iter(d)))
            d[key] = v
        return v

    def _fft_fdt(self):
        return "f64" if self.has_f64 else "f32"

    def _fft_twiddles(self, N, sign, cdt):
        """``exp(sign 2 pi i t / N)`` for t < N, computed on the device (angle reduced to [-pi, pi])."""
        def make():
            out = self._new((N,), _np_of(cdt))
            fdt = self._fft_fdt()

            def fn(c, n, w):
                t = c[0]
                t2 = ir.select(ir.op("gt", ir.op("mul", t, ir.Const(2, I)), n), ir.op("sub", t, n), t)
                a = ir.op("mul", ir.cast(t2, fdt), w)
                return _cis(a, cdt)
            self._write_coords(out, fn, ("fft_twiddle", fdt), params=(N, sign * 2.0 * math.pi / N),
                               param_dtypes=(I, fdt))
            return out
        return self._fft_cached(("tw", N, sign, cdt), make)

    def _fft_chirp(self, n, length, sign, cdt, pad):
        """``exp(sign pi i p^2 / n)``: p = j (pad False, length n) or the circular chirp of
        Bluestein's convolution (pad True, length m: p = j for j < n, m - j for j > m - n, else 0)."""
        def make():
            fdt = self._fft_fdt()
            if self.has_i64:
                idt = "i64"
            elif n <= 46340:
                idt = I
            else:   # exact p^2 mod 2n needs 64-bit integers: constant table from the host, once
                return self.from_host(_host_chirp(n, length, sign, pad).astype(_np_of(cdt)))
            out = self._new((length,), _np_of(cdt))

            def fn(c, np_, mp, w):
                j = c[0]
                if pad:
                    lo = ir.op("lt", j, np_)
                    hi = ir.op("gt", j, ir.op("sub", mp, np_))
                    p = ir.select(lo, j, ir.select(hi, ir.op("sub", mp, j), ir.Const(0, I)))
                    valid = ir.op("or", lo, hi)
                else:
                    p = j
                pw = ir.cast(p, idt)
                nn = ir.cast(np_, idt)
                t = ir.op("mod", ir.op("mul", pw, pw), ir.op("add", nn, nn))
                t = ir.select(ir.op("gt", t, nn), ir.op("sub", t, ir.op("add", nn, nn)), t)
                a = ir.op("mul", ir.cast(t, fdt), w)
                v = _cis(a, cdt)
                return ir.select(valid, v, ir.Const(0, cdt)) if pad else v
            self._write_coords(out, fn, ("fft_chirp", fdt, idt, pad), params=(n, length, sign * math.pi / n),
                               param_dtypes=(I, I, fdt))
            return out
        return self._fft_cached(("chirp", n, length, sign, cdt, pad), make)

    def _fft_bluestein_tables(self, n, m, sign, cdt):
        """(w, B): the chirp ``w`` (length n) and the FFT of the padded conjugate chirp (length m)."""
        w = self._fft_chirp(n, n, sign, cdt, False)

        def make():
            b = self._fft_chirp(n, m, -sign, cdt, True)
            return self._fft1(b, 0, m, "c", -1, 1.0, m, False, False)
        B = self._fft_cached(("bluesteinB", n, m, sign, cdt), make)
        return w, B

    # ================================================================== the 1-d driver
    def _fft1(self, x, axis, n, kind, sign, scale, nout, real_out, conj):
        """A 1-d DFT of logical length ``n`` along ``axis``, sign ``sign``, times ``scale``.

        kind: "c" complex input, "r" real input, "h" the first n//2+1 values of a Hermitian
        sequence.  The input is cropped / zero-padded to n (n//2+1 for "h"); the output keeps
        the first ``nout`` frequencies, as its real part when ``real_out``.
        """
        cnp = _dtypes.complex_of(x.dtype) if kind == "r" else x.dtype
        cdt = IR[np.dtype(cnp)]
        odt = ir.real_of(cdt) if real_out else cdt
        oshape = x.shape[:axis] + (nout,) + x.shape[axis + 1:]
        out = self._new(oshape, _np_of(odt))
        if out.size == 0:
            return out
        nvalid = min(x.shape[axis], n // 2 + 1 if kind == "h" else n)
        plan = fft_plan(n, self.fft_max_prime)
        bshape = x.shape[:axis] + x.shape[axis + 1:]
        xb = x.strides[:axis] + x.strides[axis + 1:]
        ob = out.strides[:axis] + out.strides[axis + 1:]
        src = {"arr": x, "ax": x.strides[axis], "kind": kind, "conj": conj, "pre": None,
               "nvalid": nvalid, "nlog": n, "b": "src"}
        dst = {"arr": out, "ax": out.strides[axis], "post": None, "scale": scale, "nout": nout,
               "real": real_out, "b": "out"}
        if plan is not None:
            geo = _Geo(bshape, xb, ob, n, cdt)
            self._fft_passes(geo, plan, sign, src, dst)
            return out
        m = _smooth_at_least(2 * n - 1, self.fft_max_prime)
        w, B = self._fft_bluestein_tables(n, m, sign, cdt)
        geo = _Geo(bshape, xb, ob, m, cdt)
        mplan = fft_plan(m, self.fft_max_prime)
        src["pre"] = w
        mid = {"arr": None, "post": B, "scale": 1.0, "nout": m, "real": False}
        conv = self._fft_passes(geo, mplan, -1, src, mid)
        src2 = {"arr": conv, "ax": 1, "kind": "c", "conj": False, "pre": None, "nvalid": m,
                "nlog": m, "b": "tmp"}
        dst["post"] = w
        dst["scale"] = scale / m
        self._fft_passes(geo, mplan, 1, src2, dst)
        return out

    def _fft_temp(self, geo, avoid):
        for t in geo.temps:
            if t is not avoid:
                return t
        t = self._new(tuple(geo.bshape) + (geo.N,), _np_of(geo.cdt))
        geo.temps.append(t)
        return t

    def _fft_passes(self, geo, plan, sign, src, dst):
        """Run the Stockham passes of ``plan`` (length geo.N); returns the array written last."""
        N, cdt = geo.N, geo.cdt
        tw = self._fft_twiddles(N, -1, cdt)     # the inverse runs as conj(DFT(conj(x)))
        inverse = sign > 0
        bstr = {"src": geo.src_b, "out": geo.out_b, "tmp": geo.tmp_b}
        shape = tuple(geo.cb) + (N,)
        nb = len(geo.cb)
        L = 1
        cur = src
        for i, r in enumerate(plan):
            last = i == len(plan) - 1
            if last and dst["arr"] is not None:
                d = dst
            else:
                t = self._fft_temp(geo, cur["arr"])
                d = {"arr": t, "ax": 1, "post": dst["post"] if last else None,
                     "scale": dst["scale"] if last else 1.0, "nout": dst["nout"] if last else N,
                     "real": False, "b": "tmp"}
            first = i == 0
            kind = cur["kind"] if first else "c"
            x = cur["arr"]
            odt = ir.real_of(cdt) if d["real"] else cdt
            k = _pass_kernel(cdt, x.ir, odt, nb, r, kind, cur["pre"] is not None and first,
                             d["post"] is not None)
            cin = (cur["conj"] != inverse) if first else False
            cout = inverse and last
            arrays = [x, tw]
            strides = [tuple(bstr[cur["b"]]) + (cur["ax"],), ()]
            if cur["pre"] is not None and first:
                arrays.append(cur["pre"])
                strides.append(())
            if d["post"] is not None:
                arrays.append(d["post"])
                strides.append(())
            arrays.append(d["arr"])
            strides.append(tuple(bstr[d["b"]]) + (d["ax"],))
            Mo = N // (L * r)
            params = (Mo, Mo * r, Mo * L, N // (L * r), cur["nvalid"], cur["nlog"], d["nout"], cin, cout,
                      d["scale"])
            self._launch(k, arrays, strides, shape[:-1] + (N // r,), params)
            L *= r
            cur = {"arr": d["arr"], "ax": 1, "kind": "c", "conj": False, "pre": None, "nvalid": N,
                   "nlog": N, "b": "tmp"}
        return cur["arr"]

    # ================================================================== the ops
    def _fft_n(self, fn, x, n, axis, default):
        if n is None:
            n = default
        if n < 1:
            raise ValueError(f"ruda wgpu.fft.{fn}: invalid number of data points ({n}) along axis {axis}")
        return n

    def fft_fft(self, x, n=None, axis=-1, norm="backward"):
        axis %= x.ndim
        n = self._fft_n("fft", x, n, axis, x.shape[axis])
        return self._fft1(x, axis, n, "c", -1, _scale(norm, n, False), n, False, False)

    def fft_ifft(self, x, n=None, axis=-1, norm="backward"):
        axis %= x.ndim
        n = self._fft_n("ifft", x, n, axis, x.shape[axis])
        return self._fft1(x, axis, n, "c", 1, _scale(norm, n, True), n, False, False)

    def fft_rfft(self, x, n=None, axis=-1, norm="backward"):
        axis %= x.ndim
        n = self._fft_n("rfft", x, n, axis, x.shape[axis])
        return self._fft1(x, axis, n, "r", -1, _scale(norm, n, False), n // 2 + 1, False, False)

    def fft_irfft(self, x, n=None, axis=-1, norm="backward"):
        axis %= x.ndim
        n = self._fft_n("irfft", x, n, axis, 2 * (x.shape[axis] - 1))
        return self._fft1(x, axis, n, "h", 1, _scale(norm, n, True), n, True, False)

    def fft_hfft(self, x, n=None, axis=-1, norm="backward"):
        # NumPy: irfft(conj(x), n, norm=swapped)
        axis %= x.ndim
        n = self._fft_n("hfft", x, n, axis, 2 * (x.shape[axis] - 1))
        return self._fft1(x, axis, n, "h", 1, _scale(_swap(norm), n, True), n, True, True)

    def fft_ihfft(self, x, n=None, axis=-1, norm="backward"):
        # NumPy: conj(rfft(x, n, norm=swapped)); for real x that is the +i transform
        axis %= x.ndim
        n = self._fft_n("ihfft", x, n, axis, x.shape[axis])
        return self._fft1(x, axis, n, "r", 1, _scale(_swap(norm), n, False), n // 2 + 1, False, False)

    def _fft_nd_args(self, fn, x, s, axes, invreal=False):
        shapeless = s is None
        if s is None:
            axes = tuple(range(x.ndim)) if axes is None else tuple(axes)
            s = [x.shape[a] for a in axes]
        else:
            s = list(s)
            if axes is None:
                axes = tuple(range(x.ndim - len(s), x.ndim))
            if len(axes) != len(s) or min(axes, default=0) < 0:
                raise ValueError(f"ruda wgpu.fft.{fn}: s {tuple(s)} does not fit an array of {x.ndim} dimensions")
        axes = tuple(a % x.ndim for a in axes)
        if invreal and shapeless and axes:
            s[-1] = 2 * (x.shape[axes[-1]] - 1)
        s = [x.shape[a] if v == -1 else v for v, a in zip(s, axes)]
        for v, a in zip(s, axes):
            if v < 1:
                raise ValueError(f"ruda wgpu.fft.{fn}: invalid number of data points ({v}) along axis {a}")
        return s, axes

    def _fft_nd(self, fn, x, s, axes, norm, inverse):
        s, axes = self._fft_nd_args(fn, x, s, axes)
        if not axes:
            return self.copy(x)
        sign = 1 if inverse else -1
        for n, a in reversed(list(zip(s, axes))):
            x = self._fft1(x, a, n, "c", sign, _scale(norm, n, inverse), n, False, False)
        return x

    def fft_fftn(self, x, s=None, axes=None, norm="backward"):
        return self._fft_nd("fftn", x, s, axes, norm, False)

    def fft_ifftn(self, x, s=None, axes=None, norm="backward"):
        return self._fft_nd("ifftn", x, s, axes, norm, True)

    def fft_rfftn(self, x, s=None, axes=None, norm="backward"):
        s, axes = self._fft_nd_args("rfftn", x, s, axes)
        if not axes:
            raise ValueError("ruda wgpu.fft.rfftn: at least one axis is needed")
        n = s[-1]
        x = self._fft1(x, axes[-1], n, "r", -1, _scale(norm, n, False), n // 2 + 1, False, False)
        for n, a in reversed(list(zip(s[:-1], axes[:-1]))):
            x = self._fft1(x, a, n, "c", -1, _scale(norm, n, False), n, False, False)
        return x

    def fft_irfftn(self, x, s=None, axes=None, norm="backward"):
        s, axes = self._fft_nd_args("irfftn", x, s, axes, invreal=True)
        if not axes:
            raise ValueError("ruda wgpu.fft.irfftn: at least one axis is needed")
        for n, a in zip(s[:-1], axes[:-1]):
            x = self._fft1(x, a, n, "c", 1, _scale(norm, n, True), n, False, False)
        n = s[-1]
        return self._fft1(x, axes[-1], n, "h", 1, _scale(norm, n, True), n, True, False)

    def _fft_freq(self, key, n, d, dtype, count, wrap):
        dtype = np.dtype(dtype)
        out = self._new((count,), dtype)
        p = IR[dtype]
        cdt = "f64" if self.has_f64 else p     # NumPy: int index * (1 / (n d)) in float64, then cast

        def fn(c, half, nn, val):
            i = c[0]
            if wrap:
                i = ir.select(ir.op("lt", i, half), i, ir.op("sub", i, nn))
            return ir.cast(ir.op("mul", ir.cast(i, cdt), val), p)
        self._write_coords(out, fn, (key, cdt), params=((n + 1) // 2, n, 1.0 / (n * d)),
                           param_dtypes=(I, I, cdt))
        return out

    def fft_fftfreq(self, n, d=1.0, dtype=None):
        dtype = dtype if dtype is not None else self.default_dtypes()["real floating"]
        return self._fft_freq("fftfreq", n, d, dtype, n, True)

    def fft_rfftfreq(self, n, d=1.0, dtype=None):
        dtype = dtype if dtype is not None else self.default_dtypes()["real floating"]
        return self._fft_freq("rfftfreq", n, d, dtype, n // 2 + 1, False)

    def _fft_shift(self, x, axes, inverse):
        axes = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
        if not axes:
            return self.copy(x)
        shifts = tuple(-(x.shape[a] // 2) if inverse else x.shape[a] // 2 for a in axes)
        return self.roll(x, shifts, axes)

    def fft_fftshift(self, x, axes=None):
        return self._fft_shift(x, axes, False)

    def fft_ifftshift(self, x, axes=None):
        return self._fft_shift(x, axes, True)


def _cis(a, cdt):
    """cos(a) + i sin(a) as ``cdt`` (the IR's "complex" op has no WGSL rendering)."""
    c = ir.complex_of(a.dtype)
    v = ir.op("add", ir.cast(ir.op("cos", a), c),
              ir.op("mul", ir.cast(ir.op("sin", a), c), ir.Const(1j, c)))
    return ir.cast(v, cdt)


def _np_of(irdt):
    for k, v in IR.items():
        if v == irdt:
            return k
    raise KeyError(irdt)


def _host_chirp(n, length, sign, pad):
    j = np.arange(length, dtype=np.int64)
    if pad:
        p = np.where(j < n, j, np.where(j > length - n, length - j, 0))
        valid = (j < n) | (j > length - n)
    else:
        p, valid = j, np.ones(length, bool)
    t = (p * p) % (2 * n)
    t = np.where(t > n, t - 2 * n, t)
    return np.where(valid, np.exp(1j * sign * np.pi * t / n), 0)
