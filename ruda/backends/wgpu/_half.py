"""float16 and bfloat16 on the wgpu backend.

float16 is WGSL's ``f16`` (adapters with ``shader-f16``): stored in 16 bits, its kernels native
(the math in float32, rounded once; comparisons, sorting, max/min native).  The ops that
accumulate (sums, products, means, moments, cumulative sums, ``vecdot``, norms, trace) run on
float32 copies (:func:`f16_guard`: exact widening) and their float32 results are rounded back
once; ``matmul`` is the tuned kernels' f16 with float32 accumulation.  ``nextafter`` raises
TypeError (a float32 step is not a float16 step).

bfloat16: 16 bits a value, computed in float32, ml_dtypes' rounding bit for bit.

A wgpu bfloat16 array is a :class:`WArray` of dtype bfloat16 (IR name ``bf16``, which no
renderer knows, so no kernel can take it by mistake) whose storage holds two values per 32-bit
word (element ``e`` in the low half of word ``e // 2`` for even ``e``, the high half for odd),
with element shapes, strides and offsets as any array: views are views.  WGSL has neither 16-bit
integers nor 16-bit stores, and two invocations storing the halves of one word would race, so
kernels never write bfloat16 elements one by one: every op goes through :func:`guard`, which
unpacks its bfloat16 operands into float32 arrays (``unpack``: one kernel, any strides; the bits
shifted into the high half, exact), runs the backend's float32 op, and packs its float32 results
(``pack``: one invocation per output word, so no race) rounded to bfloat16 by ``round_f32``
(round to nearest even on the bits, NaN to the quiet NaN of its sign, overflow to infinity:
ml_dtypes' float32 -> bfloat16 conversion bit for bit).  So each elementwise op equals ml_dtypes'
(which computes in float32 and rounds), and sums, means, moments, cumulative sums and matmul
accumulate in float32 and round once.  An explicit non-bfloat16 ``dtype=`` (``sum(x,
dtype=float32)``) keeps the float32 result.  Data movement (indexing, manipulation, ``where``,
sorting's values) packs without rounding, NaN payloads kept.  ``setitem`` unpacks the
word-aligned range of storage the target spans, assigns in float32 and packs the range back
in place.  Transfers move the 16-bit words as they are.  Scalars and ``full`` round on the host
with ml_dtypes; ``astype`` to bfloat16 from float64, int32 and uint32 (and 64-bit integers,
through float64) rounds to odd in float32 first, so the one rounding to bfloat16 is ml_dtypes'.
``nextafter`` raises TypeError (a float32 step is not a bfloat16 step).
"""
import math

import numpy as np

from ruda import _dtypes
from ruda.backends import ELEMENTWISE_UNARY, OPS, _map_native
from ruda.backends.wgpu._array import WArray, contiguous_strides
from ruda.backends.wgpu._base import _K, I
from ruda.runtime import ir

BF16 = _dtypes.bfloat16          # None without ml_dtypes: guard() changes nothing
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
F16 = np.dtype(np.float16)
# dtype families as sets (a hash test: cheaper than a tuple's == tests)
_BF16S, _F16S, HALVES = frozenset({BF16}), frozenset({F16}), frozenset({BF16, F16} - {None})
U16, U32 = np.dtype(np.uint16), np.dtype(np.uint32)


def _u(v):
    return ir.const(v, "u32")


def round_f32(a):
    """IR: float32 ``a`` rounded to the nearest bfloat16 (ties to even), as a float32 value."""
    u = ir.Bitcast(a, "u32")
    nan = ir.op("gt", ir.op("and", u, _u(0x7FFFFFFF)), _u(0x7F800000))
    lsb = ir.op("and", ir.op("shr", u, _u(16)), _u(1))
    r = ir.op("and", ir.op("add", ir.op("add", u, _u(0x7FFF)), lsb), _u(0xFFFF0000))
    quiet = ir.op("or", ir.op("and", u, _u(0x80000000)), _u(0x7FC00000))
    return ir.Bitcast(ir.select(nan, quiet, r), "f32")


def odd_f32(d):
    """IR: float64 ``d`` rounded to float32 by rounding to odd (inexact results get an odd last
    bit), so that a second rounding to a narrower type equals one rounding of ``d``."""
    f = ir.cast(d, "f32")
    u = ir.Bitcast(f, "u32")
    back = ir.cast(f, "f64")
    inexact = ir.op("and", ir.op("ne", back, d), ir.op("eq", ir.op("and", u, _u(1)), _u(0)))
    inexact = ir.op("and", inexact, ir.op("lt", ir.op("and", u, _u(0x7FFFFFFF)), _u(0x7F800000)))
    toward = ir.select(ir.op("lt", ir.op("abs", back), ir.op("abs", d)), _u(1), _u(0xFFFFFFFF))
    return ir.Bitcast(ir.select(inexact, ir.op("add", u, toward), u), "f32")


def odd_f32_int(i):
    """IR: int32/uint32 ``i`` rounded to float32 by rounding to odd (integer comparisons: no f64)."""
    dt = i.dtype
    f = ir.cast(i, "f32")
    u = ir.Bitcast(f, "u32")
    big = ir.op("ge", f, ir.const(2.0**31 if dt == "i32" else 2.0**32, "f32"))   # out of dt's range
    back = ir.cast(f, dt)
    inexact = ir.op("or", big, ir.op("ne", back, i))
    up = ir.op("or", big, ir.op("gt", back, i))
    away = up if dt == "u32" else ir.select(ir.op("ge", i, ir.const(0, dt)), up, ir.op("lt", back, i))
    odd = ir.op("eq", ir.op("and", u, _u(1)), _u(0))
    toward = ir.select(away, _u(0xFFFFFFFF), _u(1))
    return ir.Bitcast(ir.select(ir.op("and", inexact, odd), ir.op("add", u, toward), u), "f32")


def _words(st, n=1, offset=0):
    """A uint32 view of ``n`` words of storage ``st`` from word ``offset`` (a kernel binding)."""
    return WArray(st, (n,), (1,), offset, U32)


def _packed(st, shape):
    return WArray(st, shape, contiguous_strides(shape), 0, BF16)


def unpack(be, a):
    """A new contiguous float32 array of the values of packed bfloat16 array ``a`` (exact)."""
    out = be._new(a.shape, F32)
    if out.size == 0:
        return out
    nd = a.ndim
    k = _K.get(("bf16_unpack", nd))
    if k is None:
        e = ir.Param(0, I)                       # the element index: offset + sum(c * stride)
        for d in range(nd):
            e = ir.op("add", e, ir.op("mul", ir.Coord(d), ir.Param(d + 1, I)))
        word = ir.Load(0, ir.Flat(ir.op("shr", e, ir.const(1, I))), "u32")
        shift = ir.op("mul", ir.cast(ir.op("and", e, ir.const(1, I)), "u32"), _u(16))
        val = ir.Bitcast(ir.op("shl", ir.op("shr", word, shift), _u(16)), "f32")
        k = _K[("bf16_unpack", nd)] = ir.Kernel(
            "bf16_unpack", (ir.Arg("w", "u32", 0), ir.Arg("out", "f32", nd, True)), (I,) * (nd + 1),
            nd, ir.Map((ir.Store(1, ir.Strided(), val),)))
    be._launch(k, [_words(a.st), out], [(), out.strides], a.shape, (a.offset,) + tuple(a.strides))
    return out


def pack(be, f, rnd=True, into=None):
    """A new packed bfloat16 array of float32 array ``f``'s values (rounded where ``rnd``, else
    truncated: exact for bfloat16 values), or written in place at ``into`` = (storage, word)."""
    f = be._contig(f)
    n = f.size
    nw = (n + 1) // 2
    st, woff = into if into is not None else (be._new((max(nw, 1),), U32).st, 0)
    if nw:
        k = _K.get(("bf16_pack", rnd))
        if k is None:
            conv = round_f32 if rnd else (lambda v: v)
            i0 = ir.op("mul", ir.Coord(0), ir.const(2, I))
            i1 = ir.op("add", i0, ir.const(1, I))
            n_ = ir.Param(0, I)
            v0 = ir.Load(0, ir.Flat(i0), "f32")
            v1 = ir.Load(0, ir.Flat(ir.op("min", i1, ir.op("sub", n_, ir.const(1, I)))), "f32")
            lo = ir.op("shr", ir.Bitcast(conv(v0), "u32"), _u(16))
            hi = ir.select(ir.op("lt", i1, n_), ir.op("and", ir.Bitcast(conv(v1), "u32"), _u(0xFFFF0000)), _u(0))
            k = _K[("bf16_pack", rnd)] = ir.Kernel(
                "bf16_pack", (ir.Arg("x", "f32", 0), ir.Arg("out", "u32", 1, True)), (I,), 1,
                ir.Map((ir.Store(1, ir.Strided(), ir.op("or", lo, hi)),)))
        be._launch(k, [f, _words(st, nw, woff)], [(), (1,)], (nw,), (n,))
    return _packed(st, f.shape) if into is None else None


def rounded(be, f):
    """A new packed bfloat16 array: float32 WArray ``f`` rounded (one kernel)."""
    return pack(be, f, True)


def _host_bf16(value):
    """Python scalar ``value`` rounded once to bfloat16 by ml_dtypes, as a 0-d bfloat16 array."""
    return np.array(value, np.float64).astype(BF16)


# ---------------------------------------------------------------------------------------
# the ops with their own bfloat16 rule

def from_host(be, impl, a):
    a = np.asarray(a)
    if a.dtype != BF16:
        return impl(be, a)
    bits = np.ascontiguousarray(a).view(U16).reshape(-1)
    if bits.size % 2 or bits.size == 0:
        bits = np.concatenate([bits, np.zeros(2 - bits.size % 2, U16)])
    return _packed(impl(be, bits.view(U32)).st, tuple(a.shape))


def to_host(be, impl, a):
    if a.dtype != BF16:
        return impl(be, a)
    if a.size == 0:
        return np.empty(a.shape, BF16)
    if not a.is_contiguous() or a.offset % 2:
        a = pack(be, unpack(be, a), rnd=False)
    words = impl(be, _words(a.st, (a.size + 1) // 2, a.offset // 2))
    return words.view(U16)[:a.size].reshape(a.shape).view(BF16)


def scalar(be, value):
    """A new bfloat16 operand scalar (the backend's ``scalar`` caches it under its own key)."""
    return be.from_host(_host_bf16(value))


def full(be, impl, shape, fill_value, dtype):
    if np.dtype(dtype) != BF16:
        return impl(be, shape, fill_value, dtype)
    b = int(_host_bf16(fill_value).view(U16))
    n = math.prod(shape)
    return _packed(impl(be, (max((n + 1) // 2, 1),), b | (b << 16), U32).st, tuple(shape))


def empty(be, impl, shape, dtype):
    if np.dtype(dtype) != BF16:
        return impl(be, shape, dtype)
    return _packed(be._new((max((math.prod(shape) + 1) // 2, 1),), U32).st, tuple(shape))


def astype(be, impl, x, dtype, copy=True):
    dtype = np.dtype(dtype)
    if x.dtype != BF16 and dtype != BF16:
        return impl(be, x, dtype, copy)
    if x.dtype == BF16:
        if dtype == BF16:
            return pack(be, unpack(be, x), rnd=False) if copy else x
        f = unpack(be, x)
        return f if dtype == F32 else impl(be, f, dtype, False)   # exact widening first
    if x.ir in ("f32", "f16", "bool", "i8", "i16", "u8", "u16"):   # exact in float32: one rounding
        return pack(be, x if x.dtype == F32 else impl(be, x, F32, True))
    if x.ir in ir.COMPLEX:
        return astype(be, impl, be.real(x), dtype)
    if x.ir in ("i32", "u32"):
        return pack(be, be._map(("bf16_odd_int",), odd_f32_int, [x], F32))
    if x.ir != "f64":
        if not be.has_f64:
            raise TypeError(f"ruda.astype: {_dtypes.name(x.dtype)} -> bfloat16 on 'wgpu:{be.index}' "
                            f"needs the shader-f64 feature (one rounding); cast to float32 first")
        x = impl(be, x, F64, True)
    return pack(be, be._map(("bf16_odd_f64",), odd_f32, [x], F32))


def arange(be, impl, start, stop, step, dtype):
    if np.dtype(dtype) != BF16:
        return impl(be, start, stop, step, dtype)
    return be.astype(impl(be, start, stop, step, F64 if be.has_f64 else F32), BF16)


def linspace(be, impl, start, stop, num, dtype, endpoint):
    if np.dtype(dtype) != BF16:
        return impl(be, start, stop, num, dtype, endpoint)
    return be.astype(impl(be, start, stop, num, F64 if be.has_f64 else F32, endpoint), BF16)


def setitem(be, impl, x, key, value):
    if x.dtype != BF16:
        return impl(be, x, key, value)
    if x.size == 0:     # nothing to write, but the key and value are checked as for any dtype
        return impl(be, be._new(x.shape, F32), key, be.astype(value, F32))
    if value.dtype != BF16:
        value = be.astype(value, BF16)
    # the word-aligned range of storage x spans, in float32; assign there; pack it back in place
    lo = x.offset + sum(min(0, (n - 1) * s) for n, s in zip(x.shape, x.strides))
    hi = x.offset + sum(max(0, (n - 1) * s) for n, s in zip(x.shape, x.strides))
    base, end = lo - lo % 2, hi + 1 + (hi + 1) % 2
    f = unpack(be, WArray(x.st, (end - base,), (1,), base, BF16))
    impl(be, WArray(f.st, x.shape, x.strides, x.offset - base, F32), key, unpack(be, value))
    pack(be, f, rnd=False, into=(x.st, base // 2))
    return None


def copy(be, impl, x, dtype=None):
    if x.dtype != BF16 and (dtype is None or np.dtype(dtype) != BF16):
        return impl(be, x, dtype)
    if x.dtype == BF16 and (dtype is None or np.dtype(dtype) == BF16):
        return pack(be, unpack(be, x), rnd=False)
    return be.astype(x, dtype)


def getitem(be, impl, x, key):
    keys = key if key.__class__ is tuple else (key,)
    # (a bool scalar beside an int or ... is an advanced index too)
    if x.dtype != BF16 or not any(k.__class__ is WArray or k.__class__ is bool for k in keys):
        return impl(be, x, key)                     # basic indexing: a view of the same words
    return pack(be, impl(be, unpack(be, x), key), rnd=False)


def nextafter(be, impl, x1, x2):
    half = x1.dtype if x1.dtype in HALVES else x2.dtype if x2.dtype in HALVES else None
    if half is not None:
        raise TypeError(f"ruda.nextafter: {half} is not supported on 'wgpu:{be.index}' (a "
                        f"float32 step is not a {half} step); cast to float32 first")
    return impl(be, x1, x2)


_OWN = {"from_host": from_host, "to_host": to_host, "full": full,
        "empty": empty, "astype": astype, "arange": arange, "linspace": linspace,
        "setitem": setitem, "nextafter": nextafter, "copy": copy, "getitem": getitem}
# views (and views copied by the guarded copy): the packed array itself, no route
_VIEW = frozenset({"reshape", "permute_dims", "broadcast_to", "expand_dims", "squeeze",
                   "moveaxis", "flip", "unstack", "linalg_diagonal"})
# data movement: the values are bfloat16's already, packed back without rounding
_MOVE = frozenset({
    "take", "take_along_axis", "concat", "repeat", "roll", "stack", "tile", "where", "tril",
    "triu", "meshgrid", "fft_fftshift", "fft_ifftshift", "eye", "max", "min", "sort",
    "unique_values", "unique_all", "unique_counts", "unique_inverse", "positive",
})


def _is_warray(obj):
    return obj.__class__ is WArray


def _map(obj, fn):
    """``fn`` applied to each WArray of obj (an array, or a tuple/list/namedtuple of them)."""
    return _map_native(obj, fn, _is_warray)


def _involves(obj, dts):
    """Whether obj is (or a list/tuple holds) an array of a dtype of the set ``dts``, or is
    such a dtype."""
    c = obj.__class__
    if c is WArray:
        return obj.dtype in dts
    if c is tuple or c is list:
        for o in obj:               # a loop, not any(): every guarded call scans its arguments
            oc = o.__class__
            if oc is WArray:
                if o.dtype in dts:
                    return True
            elif oc in _PLAIN or o is None:
                continue
            elif oc is tuple or oc is list:
                if _involves(o, dts):
                    return True
            elif (oc is _dtypes.DType or isinstance(o, np.dtype)) and o in dts:
                return True
        return False
    return (c is _dtypes.DType or isinstance(obj, np.dtype)) and obj in dts


_PLAIN = frozenset({bool, int, float, str})     # arguments that are never an array or a dtype


def _arg(be, a, up, fam):
    """An argument of a routed call: arrays mapped by ``up``, a dtype of ``fam`` as float32."""
    if a.__class__ is WArray or a.__class__ in (tuple, list):
        return _map(a, lambda w: up(be, w))
    return F32 if _involves(a, fam) else a


def _route(name, impl, up, down, fam, move=False):
    """Op ``impl`` on operands mapped by ``up`` (and a half ``dtype`` argument as float32), its
    float32 results mapped by ``down`` -- unless an explicit other ``dtype=`` keeps them."""
    def run(be, *args, **kwargs):
        dt = kwargs.get("dtype")
        if dt is None and name in ("sum", "prod") and len(args) > 2:
            dt = args[2]                                     # sum(x, axis, dtype, keepdims)
        back = move or dt is None or _involves(dt, fam)
        seen = {}                                            # x * x: one conversion of x

        def once(be, a):
            r = seen.get(id(a))
            if r is None:
                r = seen[id(a)] = up(be, a)
            return r
        out = impl(be, *[_arg(be, a, once, fam) for a in args],
                   **{k: _arg(be, v, once, fam) for k, v in kwargs.items()})
        return _map(out, lambda a: down(be, a) if a.dtype == F32 else a) if back else out
    run.__name__ = name
    return run


def _bf16_up(be, a):
    return unpack(be, a) if a.dtype == BF16 else a


def _bf16_move(be, a):
    return pack(be, a, rnd=False)


def elementwise(be, impl, *xs):
    """Generated elementwise op ``impl`` (``_elementwise``) of operands ``xs``, one of them
    bfloat16: its route, built on first use (the op tests the dtypes only where no plan
    replays, so float32 work pays no guard)."""
    route = _ROUTES.get(impl)
    if route is None:
        route = _ROUTES[impl] = _route(impl.__name__, impl, _bf16_up, rounded, _BF16S)
    return route(be, *xs)


def reduction(be, impl, *args):
    """Reduction method ``impl`` (sum, prod) called with a float16 or bfloat16 array or
    dtype: the routes of both guards over it, built on first use (the method tests two dtypes;
    other reductions pass :func:`guards`)."""
    chain = _ROUTES.get(impl)
    if chain is None:
        chain = _ROUTES[impl] = guard(impl.__name__, f16_guard(impl.__name__, impl))
    return chain(be, *args)


_ROUTES = {}


def guard(name, impl):
    """Backend method ``impl`` with bfloat16 operands (or ``dtype=bfloat16``) sent to their
    route; other calls cost one dtype test (elementwise ops) or a scan of the arguments."""
    if BF16 is None or name in _VIEW:
        return impl
    if name in _OWN:
        own = _OWN[name]

        def op(be, *args, **kwargs):
            return own(be, impl, *args, **kwargs)
    else:
        route = _route(name, impl, _bf16_up, _bf16_move if name in _MOVE else rounded, _BF16S,
                       name in _MOVE)
        op = _dispatch(name, impl, route, _BF16S)
    op.__name__ = name
    op.__wrapped__ = impl
    return op


def _dispatch(name, impl, route, dts):
    if name in ELEMENTWISE_UNARY:      # real, conj, positive (the generated ops route themselves)
        def op(be, x):
            return route(be, x) if x.dtype in dts else impl(be, x)
    else:
        def op(be, *args, **kwargs):
            if _involves(args, dts) or (kwargs and _involves(tuple(kwargs.values()), dts)):
                return route(be, *args, **kwargs)
            return impl(be, *args, **kwargs)
    return op


# float16 ops through float32 copies (see the module docstring)
F16_VIA_F32 = frozenset({
    "sum", "prod", "mean", "var", "std", "cumulative_sum", "cumulative_prod", "vecdot",
    "linalg_vector_norm", "linalg_matrix_norm", "linalg_trace",
})


def _f16_up(be, a):
    return be.astype(a, F32, True) if a.dtype == F16 else a


def _f16_down(be, a):
    return be.astype(a, F16, True)


def f16_guard(name, impl):
    """Backend method ``impl`` with float16 operands of F16_VIA_F32's ops sent to float32."""
    if name not in F16_VIA_F32:
        return impl
    op = _dispatch(name, impl, _route(name, impl, _f16_up, _f16_down, _F16S), _F16S)
    op.__name__ = name
    op.__wrapped__ = impl
    return op


GUARDED = tuple(OPS) + ("from_host", "to_host", "copy")   # scalar: the backend asks scalar()


def guards(name, impl):
    """Backend method ``impl`` under :func:`f16_guard` and :func:`guard`, unless it routes
    its half dtypes itself (``routes_halves``: the generated elementwise ops, which need no
    float16 route and send bfloat16 to :func:`elementwise`, and sum and prod, which call
    :func:`reduction`); ops of their own (``nextafter``) are wrapped all the same. Where both
    guards wrap it (F16_VIA_F32's reductions), one scan of the arguments for either half dtype
    sends other calls straight to ``impl``."""
    if getattr(impl, "routes_halves", False) and name not in _OWN:
        return impl
    inner = f16_guard(name, impl)
    outer = guard(name, inner)
    if inner is impl or outer is inner:      # at most one guard wraps it
        return outer
    op = _dispatch(name, impl, outer, HALVES)
    op.__name__ = name
    op.__wrapped__ = outer
    return op
