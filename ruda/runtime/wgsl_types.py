"""WGSL types and constants shared by the renderer modules: workgroup geometry, the storage
and value type of each IR dtype, and :func:`literal` (a constant of an IR type as WGSL)."""
from ruda.runtime import ir
from ruda.runtime.render import RenderError


WG = 256      # workgroup size of every kernel
MAX_GROUPS = 65535
VEC_UNROLL = 4  # vec4 kernels: vec4s per invocation per step (WG apart, so each load coalesces)

STORAGE = {"bool": "u32", "i8": "i32", "i16": "i32", "u8": "u32", "u16": "u32",
           "i32": "i32", "u32": "u32", "i64": "i64", "u64": "u64", "f16": "f16",
           "f32": "f32", "f64": "f64", "c64": "vec2<f32>", "c128": "vec2<f64>"}
ITEMSIZE = {"bool": 4, "i8": 4, "i16": 4, "u8": 4, "u16": 4, "i32": 4, "u32": 4, "i64": 8,
            "u64": 8, "f16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16}
VALUE = dict(STORAGE, bool="bool")
_SMALL = {"i8": 8, "i16": 16, "u8": 8, "u16": 16}
_UNSIGNED = frozenset({"u8", "u16", "u32", "u64"})
_FLOAT_SUFFIX = {"f16": "h", "f32": "f", "f64": "lf"}
_BITS_T = {"f32": "u32", "f64": "u64"}
_INT_MIN = {"i32": "i32(-2147483647 - 1)", "i64": "(-9223372036854775807li - 1li)"}
_F32_BUILTIN = {"exp", "log", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                "tanh", "asinh", "acosh", "atanh", "log2"}
# real functions of the f64 library (float32 goes through it where the adapter has f64)
_LIB_F64 = {"exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin", "acos",
            "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"}



def literal(value, dtype):
    """A WGSL expression for a constant of IR type ``dtype``."""
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in ir.INTS:
        v = int(value)
        if dtype in _SMALL:
            lo, hi = ir.INT_MIN[dtype], ir.INT_MAX[dtype]
            span = hi - lo + 1
            v = (v - lo) % span + lo
            return f"{v}i" if dtype[0] == "i" else f"{v}u"
        if dtype == "i32":
            v = (v + 2**31) % 2**32 - 2**31
            return _INT_MIN["i32"] if v == -2**31 else f"{v}i"
        if dtype == "u32":
            return f"{v % 2**32}u"
        if dtype == "i64":
            v = (v + 2**63) % 2**64 - 2**63
            return _INT_MIN["i64"] if v == -2**63 else f"{v}li"
        return f"{v % 2**64}lu"
    if dtype in ("f16", "f32", "f64"):
        v = float(value)
        sfx = _FLOAT_SUFFIX[dtype]
        if v != v:
            return f"nan_{dtype}()"
        if v in (float("inf"), float("-inf")):
            return f"inf_{dtype}()" if v > 0 else f"(-inf_{dtype}())"
        if dtype == "f32" and v != 0 and abs(v) < 1.1754943508222875e-38:
            return f"bitcast<f32>({int.from_bytes(__import__('struct').pack('<f', v), 'little')}u)"
        return f"{v!r}{sfx}"
    if dtype in ("c64", "c128"):
        v = complex(value)
        r = ir.real_of(dtype)
        return f"vec2<{VALUE[r]}>({literal(v.real, r)}, {literal(v.imag, r)})"
    raise RenderError(f"wgsl: no literal for dtype {dtype!r}")
