"""float16 and bfloat16 on the wgpu backend.

float16 is WGSL's ``f16`` (adapters with ``shader-f16``): stored in 16 bits, elementwise ops
native (their math in float32, rounded once).  The ops that accumulate (sums, products, means,
moments, cumulative sums, ``vecdot``, norms, trace) and those whose kernels compare or order by
bit pattern (max/min and their arg forms, sorting, searching, sets, ``clip``, ``isnan``/``isinf``/
``isfinite``/``signbit``) run on float32 copies (:func:`f16_guard`: exact widening) and their
float32 results are rounded back once; ``matmul`` is the tuned kernels' f16 with float32
accumulation.  ``nextafter`` raises TypeError (a float32 step is not a float16 step).

bfloat16: float32 words holding bfloat16 values, ml_dtypes' rounding.

A wgpu bfloat16 array is a :class:`WArray` of dtype bfloat16 over float32 words whose values
are bfloat16 values (the bfloat16 bits in the high half of each word, the low half zero).  WGSL
has no 16-bit integer type, and writing one half of a shared 32-bit word would race between
invocations, so each value takes a word of its own (as uint8/uint16 do): loads are plain float32
loads, and every float32 kernel of the backend serves bfloat16 unchanged.  Transfers convert on
the host (bits << 16 up, >> 16 down: exact, NaN payloads kept).

Every backend op goes through :func:`guard`: its bfloat16 operands are relabeled as float32
views of the same memory (no copy), the float32 op runs, and its float32 results are rounded
to bfloat16 by one kernel (``round_f32``: round to nearest even on the bits, NaN to the quiet
NaN of its sign, overflow to infinity) -- ml_dtypes' float32 -> bfloat16 conversion bit for bit,
so each elementwise op equals ml_dtypes' (which computes in float32 and rounds), and sums,
means, moments, cumulative sums and matmul accumulate in float32 and round once.  An explicit
non-bfloat16 ``dtype=`` (``sum(x, dtype=float32)``) keeps the float32 result.  Data movement
(indexing, manipulation, ``where``, sorting's values) relabels only.  Scalars and ``full``
round on the host with ml_dtypes; ``astype`` to bfloat16 from float64, int32 and uint32 (and 64-bit
integers, through float64) rounds to odd in float32 first, so the one rounding to bfloat16 is
ml_dtypes'.
``nextafter`` raises TypeError (a float32 step is not a bfloat16 step).
"""
import numpy as np

from ruda import _dtypes
from ruda.backends import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, OPS, _map_native
from ruda.backends.wgpu._array import WArray
from ruda.runtime import ir

BF16 = _dtypes.bfloat16          # None without ml_dtypes: guard() changes nothing
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
F16 = np.dtype(np.float16)
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


def as_f32(a):
    """The float32 view of a bfloat16 WArray (same memory)."""
    return WArray(a.st, a.shape, a.strides, a.offset, F32)


def as_bf16(a):
    """The bfloat16 view of a float32 WArray whose values are bfloat16 values."""
    return WArray(a.st, a.shape, a.strides, a.offset, BF16)


def rounded(be, f):
    """A new bfloat16 array: float32 WArray ``f`` rounded (one kernel)."""
    return as_bf16(be._map(("bf16_round",), round_f32, [f], F32))


def _host_bf16(value):
    """Python scalar ``value`` rounded once to bfloat16 by ml_dtypes, as a Python float."""
    return float(np.array(value, np.float64).astype(BF16).astype(np.float64))


# ---------------------------------------------------------------------------------------
# the ops with their own bfloat16 rule

def from_host(be, impl, a):
    a = np.asarray(a)
    if a.dtype != BF16:
        return impl(be, a)
    words = (np.ascontiguousarray(a).view(U16).astype(U32) << 16).view(F32)
    return as_bf16(impl(be, words))


def to_host(be, impl, a):
    if a.dtype != BF16:
        return impl(be, a)
    words = impl(be, as_f32(a))
    return (words.view(U32) >> 16).astype(U16).view(BF16)


def scalar(be, impl, value, dtype):
    if np.dtype(dtype) != BF16:
        return impl(be, value, dtype)
    return as_bf16(impl(be, _host_bf16(value), F32))


def full(be, impl, shape, fill_value, dtype):
    if np.dtype(dtype) != BF16:
        return impl(be, shape, fill_value, dtype)
    return as_bf16(impl(be, shape, _host_bf16(fill_value), F32))


def astype(be, impl, x, dtype, copy=True):
    dtype = np.dtype(dtype)
    if x.dtype != BF16 and dtype != BF16:
        return impl(be, x, dtype, copy)
    if x.dtype == BF16:
        if dtype == BF16:
            return as_bf16(impl(be, as_f32(x), F32, copy))
        return impl(be, as_f32(x), dtype, copy)       # exact widening, or float32's conversion
    if x.ir in ("f32", "f16", "bool", "i8", "i16", "u8", "u16"):   # exact in float32: one rounding
        f = x if x.dtype == F32 else impl(be, x, F32, True)
        return rounded(be, f)
    if x.ir in ir.COMPLEX:
        return astype(be, impl, be.real(x), dtype)
    if x.ir in ("i32", "u32"):
        return as_bf16(be._map(("bf16_from_int",), lambda i: round_f32(odd_f32_int(i)), [x], F32))
    if x.ir != "f64":
        if not be.has_f64:
            raise TypeError(f"ruda.astype: {_dtypes.name(x.dtype)} -> bfloat16 on 'wgpu:{be.index}' "
                            f"needs the shader-f64 feature (one rounding); cast to float32 first")
        x = impl(be, x, F64, True)
    return as_bf16(be._map(("bf16_from_f64",), lambda d: round_f32(odd_f32(d)), [x], F32))


def arange(be, impl, start, stop, step, dtype):
    if np.dtype(dtype) != BF16:
        return impl(be, start, stop, step, dtype)
    return astype(be, be.astype, impl(be, start, stop, step, F64 if be.has_f64 else F32), BF16)


def linspace(be, impl, start, stop, num, dtype, endpoint):
    if np.dtype(dtype) != BF16:
        return impl(be, start, stop, num, dtype, endpoint)
    return astype(be, be.astype, impl(be, start, stop, num, F64 if be.has_f64 else F32, endpoint), BF16)


def setitem(be, impl, x, key, value):
    if x.dtype != BF16:
        return impl(be, x, key, value)
    if value.dtype != BF16:
        value = astype(be, be.astype, value, BF16)
    return impl(be, as_f32(x), key, as_f32(value))


def nextafter(be, impl, x1, x2):
    if x1.dtype == BF16 or x2.dtype == BF16:
        raise TypeError(f"ruda.nextafter: bfloat16 is not supported on 'wgpu:{be.index}' "
                        f"(a float32 step is not a bfloat16 step); cast to float32 first")
    return impl(be, x1, x2)


_OWN = {"from_host": from_host, "to_host": to_host, "scalar": scalar, "full": full,
        "astype": astype, "arange": arange, "linspace": linspace, "setitem": setitem,
        "nextafter": nextafter}
# data movement: the values are bfloat16's already, relabeled only (views stay views)
_MOVE = frozenset({
    "getitem", "take", "take_along_axis", "broadcast_to", "concat", "expand_dims", "flip",
    "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile",
    "unstack", "where", "tril", "triu", "meshgrid", "linalg_diagonal", "fft_fftshift",
    "fft_ifftshift", "empty", "eye", "max", "min", "sort", "unique_values", "unique_all",
    "unique_counts", "unique_inverse", "positive", "copy",
})


def _is_warray(obj):
    return obj.__class__ is WArray


def _map(obj, fn):
    """``fn`` applied to each WArray of obj (an array, or a tuple/list/namedtuple of them)."""
    return _map_native(obj, fn, _is_warray)


def _involves(obj, dts=(BF16,)):
    """Whether obj is (or a list/tuple holds) an array of one of ``dts``, or is such a dtype."""
    c = obj.__class__
    if c is WArray:
        return obj.dtype in dts
    if c is tuple or c is list:
        return any(_involves(o, dts) for o in obj)
    return (c is _dtypes.DType or isinstance(obj, np.dtype)) and obj in dts


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
        out = impl(be, *[_arg(be, a, up, fam) for a in args],
                   **{k: _arg(be, v, up, fam) for k, v in kwargs.items()})
        return _map(out, lambda a: down(be, a) if a.dtype == F32 else a) if back else out
    run.__name__ = name
    return run


def _bf16_up(be, a):
    return as_f32(a) if a.dtype == BF16 else a


def _bf16_move(be, a):
    return as_bf16(a)


def guard(name, impl):
    """Backend method ``impl`` with bfloat16 operands (or ``dtype=bfloat16``) sent to their
    route; other calls cost one dtype test (elementwise ops) or a scan of the arguments."""
    if BF16 is None:
        return impl
    if name in _OWN:
        own = _OWN[name]

        def op(be, *args, **kwargs):
            return own(be, impl, *args, **kwargs)
    else:
        route = _route(name, impl, _bf16_up, _bf16_move if name in _MOVE else rounded, (BF16,),
                       name in _MOVE)
        op = _dispatch(name, impl, route, (BF16,))
    op.__name__ = name
    op.__wrapped__ = impl
    return op


def _dispatch(name, impl, route, dts):
    if name in ELEMENTWISE_UNARY:
        def op(be, x):
            return route(be, x) if x.dtype in dts else impl(be, x)
    elif name in ELEMENTWISE_BINARY:
        def op(be, x1, x2):
            return route(be, x1, x2) if x1.dtype in dts or x2.dtype in dts else impl(be, x1, x2)
    else:
        def op(be, *args, **kwargs):
            if _involves(args, dts) or (kwargs and _involves(tuple(kwargs.values()), dts)):
                return route(be, *args, **kwargs)
            return impl(be, *args, **kwargs)
    return op


# float16 ops through float32 copies (see the module docstring)
F16_VIA_F32 = frozenset({
    "sum", "prod", "mean", "var", "std", "cumulative_sum", "cumulative_prod", "vecdot",
    "linalg_vector_norm", "linalg_matrix_norm", "linalg_trace", "max", "min", "argmax", "argmin",
    "sort", "argsort", "searchsorted", "isin", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "clip", "isnan", "isinf", "isfinite", "signbit",
})


def _f16_up(be, a):
    return be.astype(a, F32, True) if a.dtype == F16 else a


def _f16_down(be, a):
    return be.astype(a, F16, True)


def f16_guard(name, impl):
    if name == "nextafter":
        def op(be, x1, x2):
            if x1.dtype == F16 or x2.dtype == F16:
                raise TypeError(f"ruda.nextafter: float16 is not supported on 'wgpu:{be.index}' (a "
                                f"float32 step is not a float16 step); cast to float32 first")
            return impl(be, x1, x2)
    elif name in F16_VIA_F32:
        op = _dispatch(name, impl, _route(name, impl, _f16_up, _f16_down, (F16,)), (F16,))
    else:
        return impl
    op.__name__ = name
    op.__wrapped__ = impl
    return op


GUARDED = tuple(OPS) + ("from_host", "to_host", "scalar", "copy")
