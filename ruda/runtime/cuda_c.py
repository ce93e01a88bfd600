"""CUDA C renderer: :mod:`ruda.runtime.ir` kernels -> CUDA C source for NVRTC.

Knows nothing of arrays or devices; the cuda backend compiles the source
(``ruda.backends.cuda._kernels.compile_source``) and launches it.

Storage (:data:`STORAGE`) is native: ``bool`` is one byte (0/1, as NumPy and
CuPy store it), integers and floats are their C types, complex types are
``{re, im}`` structs of float/double (the layout of NumPy/CuPy complex).
``f16`` is not rendered (ruda has no float16 dtype).  Values are computed
with NumPy semantics: integer arithmetic wraps (done in unsigned types),
``floordiv``/``mod`` follow ``npy_divmod``, ``max``/``min`` propagate NaN,
``round`` is half-to-even, shift counts past the width or negative give 0 / the sign fill.

Signature of every rendered kernel (``Program.name``)::

    extern "C" __global__ void <name>(const unsigned int* rmeta, A0* a0, A1* a1, ...)

``rmeta`` points to the metadata words laid out by :mod:`ruda.runtime.packing`
(device memory); buffer ``i`` of ``Kernel.args`` is ``a<i>``, pointing at the
element the offsets count from.  Launch: ``Program.grid(words)`` blocks of
``Program.block`` threads.  Compile with ``-ftz=false`` for NumPy's subnormals.
"""
import re
import struct

from ruda.runtime import ir
from ruda.runtime.packing import layout as _layout
from ruda.runtime.render import ExprRender, RenderError, Scope as _Scope

BLOCK = 256
MAX_BLOCKS = 1 << 20

STORAGE = {"bool": "unsigned char", "i8": "signed char", "i16": "short", "i32": "int",
           "i64": "long long", "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int",
           "u64": "unsigned long long", "f32": "float", "f64": "double", "c64": "rc64", "c128": "rc128"}
VALUE = dict(STORAGE, bool="bool")
ITEMSIZE = {"bool": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4,
            "u64": 8, "f32": 4, "f64": 8, "c64": 8, "c128": 16}
_UNSIGNED_OF = {"i8": "unsigned int", "i16": "unsigned int", "i32": "unsigned int",
                "u8": "unsigned int", "u16": "unsigned int", "u32": "unsigned int",
                "i64": "unsigned long long", "u64": "unsigned long long"}

_PRELUDE = r"""
struct __align__(8) rc64 { float x, y; };
struct __align__(16) rc128 { double x, y; };
template <class To, class From> __device__ __forceinline__ To rbitcast(From f) {
    To t; memcpy(&t, &f, sizeof(To)); return t;
}
"""

_FLOAT_LIB = {"sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "asin",
              "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil",
              "trunc"}


def literal(value, dtype):
    """A CUDA C expression for a constant of IR type ``dtype``."""
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in ir.INTS:
        lo, hi = ir.INT_MIN[dtype], ir.INT_MAX[dtype]
        v = (int(value) - lo) % (hi - lo + 1) + lo
        if dtype == "i64":
            return "(-9223372036854775807LL - 1LL)" if v == lo else f"{v}LL"
        if dtype == "u64":
            return f"{v}ULL"
        if dtype == "i32" and v == lo:
            return "(-2147483647 - 1)"
        return f"(({VALUE[dtype]}){v}{'u' if dtype[0] == 'u' else ''})"
    if dtype in ("f32", "f64"):
        v = float(value)
        if dtype == "f32":
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            return f"__uint_as_float(0x{bits:08x}u)"
        bits = struct.unpack("<Q", struct.pack("<d", v))[0]
        return f"__longlong_as_double((long long)0x{bits:016x}ULL)"
    if dtype in ("c64", "c128"):
        v = complex(value)
        r = ir.real_of(dtype)
        return f"{VALUE[dtype]}{{{literal(v.real, r)}, {literal(v.imag, r)}}}"
    raise RenderError(f"cuda_c: no literal for dtype {dtype!r}")


class Program:
    """A rendered kernel: CUDA C source plus what the launcher needs."""

    __slots__ = ("kernel", "source", "layout", "kind", "name", "block")

    def __init__(self, kernel, source, kind, name):
        self.kernel = kernel
        self.source = source
        self.layout = _layout(kernel)
        self.kind = kind
        self.name = name
        self.block = BLOCK

    def grid(self, words):
        """Blocks (x) for a launch with metadata ``words``; 0 when there is nothing to do."""
        n = int(words[0])
        if not n:
            return 0
        if self.kind in ("map", "serial"):
            g = -(-n // BLOCK)
        elif self.kind == "reduce":
            g = n * int(words[self.layout.extra_at["nsplit"]])
        else:
            sn = int(words[self.layout.extra_at["scan_n"]])
            g = n // sn if sn else 0
        return max(1, min(g, MAX_BLOCKS))


class CudaCRenderer:
    """Renders IR kernels to CUDA C."""

    storage = STORAGE
    itemsize = ITEMSIZE

    def supports(self, dtype):
        return dtype in STORAGE

    def render(self, kernel):
        return _Render(kernel).program()


class _Render(ExprRender):
    NAME = "cuda_c"
    R_INDEX = "(long long)r"              # a reduction's element index, as acci's type
    literal = staticmethod(literal)

    # ---------------------------------------------------------------- metadata
    def w(self, k):
        return f"__ldg(rmeta + {k})"

    def wi(self, k):
        return f"((int){self.w(k)})"

    def param(self, i, dt):
        at = self.lay.param_at[i]
        w = self.w
        if dt == "bool":
            return f"({w(at)} != 0u)"
        if dt in ("i8", "i16", "i32", "u8", "u16", "u32"):
            return f"(({VALUE[dt]}){w(at)})"
        if dt == "f32":
            return f"__uint_as_float({w(at)})"
        u64 = f"((unsigned long long){w(at)} | ((unsigned long long){w(at + 1)} << 32))"
        if dt == "u64":
            return u64
        if dt == "i64":
            return f"((long long){u64})"
        if dt == "f64":
            return f"__longlong_as_double((long long){u64})"
        if dt == "c64":
            return f"rc64{{__uint_as_float({w(at)}), __uint_as_float({w(at + 1)})}}"
        if dt == "c128":
            hi = f"((unsigned long long){w(at + 2)} | ((unsigned long long){w(at + 3)} << 32))"
            return f"rc128{{__longlong_as_double((long long){u64}), __longlong_as_double((long long){hi})}}"
        raise RenderError(f"cuda_c: param dtype {dt!r}")

    # ---------------------------------------------------------------- expressions (syntax)
    def size(self, dim):
        return f"((int){self.w(self.lay.shape_at + dim)})"

    def check(self, node):
        if node.dtype == "f16":
            raise RenderError("cuda_c: f16 is not rendered (ruda has no float16 dtype)")

    def bitcast(self, dt, x):
        return f"rbitcast<{VALUE[dt]}>({x})"

    def select(self, cond, a, b):
        return f"(({cond}) ? ({a}) : ({b}))"

    def declare(self, name, dt, value, mutable=False):
        return f"{'' if mutable else 'const '}{VALUE[dt]} {name} = {value};"

    def loop(self, v, dt, start, stop):
        return f"for ({VALUE[dt]} {v} = {start}; {v} < {stop}; ++{v}) {{"

    def infinity(self, dt, negative):
        return literal(float("-inf") if negative else float("inf"), dt)

    def isnan_fn(self, dt):
        return "isnan"

    def bool_as_int(self, x):
        return f"(int){x}"

    def index_sum(self, base, terms):
        return " + ".join([f"(long long){base}"] + [f"(long long)({c})" if st is None else
                                                     f"(long long)({c}) * {st}" for c, st in terms])

    def load(self, node, sc):
        a = self.k.args[node.arg]
        if a.dtype != node.dtype:
            raise RenderError(f"cuda_c: load of {a.name} as {node.dtype}; the arg is {a.dtype}")
        s = f"a{node.arg}[{self.index(node.arg, node.index, sc)}]"
        return f"({s} != 0)" if node.dtype == "bool" else s

    def store_value(self, v, dtype):
        return f"(unsigned char)({v} ? 1 : 0)" if dtype == "bool" else v

    # ---------------------------------------------------------------- casts
    def cast(self, x, src, dst):
        if src == dst:
            return x
        T = VALUE[dst]
        if dst == "bool":
            if src in ir.COMPLEX:
                return f"(({x}).x != 0 || ({x}).y != 0)"
            return f"({x} != 0)"
        if src == "bool":
            if dst in ir.COMPLEX:
                R = VALUE[ir.real_of(dst)]
                return f"{T}{{({R})(({x}) ? 1 : 0), ({R})0}}"
            return f"(({T})(({x}) ? 1 : 0))"
        if dst in ir.COMPLEX:
            r = ir.real_of(dst)
            R = VALUE[r]
            if src in ir.COMPLEX:
                return f"{T}{{({R})({x}).x, ({R})({x}).y}}"
            return f"{T}{{({R})({x}), ({R})0}}"
        if src in ir.COMPLEX:
            return self.cast(f"({x}).x", ir.real_of(src), dst)
        if src in ir.FLOATS and dst in ir.INTS:
            # NumPy (C on x86): floats go to small and unsigned types through a signed type
            if dst in ("i8", "i16", "u8", "u16"):
                return f"(({T})(int)({x}))"
            if dst == "u32":
                return f"(({T})(long long)({x}))"
            if dst == "u64":
                return f"(({x}) < 0 ? ({T})(long long)({x}) : ({T})({x}))"
        return f"(({T})({x}))"

    # ---------------------------------------------------------------- ops
    def op(self, node, a):
        name, dt = node.op, node.args[0].dtype
        if dt in ir.COMPLEX:
            return self.cop(name, a, dt)
        if dt in ir.FLOATS:
            return self.fop(name, a, dt)
        if dt == "bool":
            return self.bop(name, a)
        return self.iop(name, a, dt)

    def bop(self, name, a):
        simple = {"and": "({0} && {1})", "or": "({0} || {1})", "xor": "({0} != {1})",
                  "not": "(!{0})", "invert": "(!{0})", "eq": "({0} == {1})", "ne": "({0} != {1})",
                  "max": "({0} || {1})", "min": "({0} && {1})", "add": "({0} || {1})",
                  "mul": "({0} && {1})", "lt": "(!{0} && {1})", "gt": "({0} && !{1})",
                  "le": "(!{0} || {1})", "ge": "({0} || !{1})", "abs": "{0}", "square": "{0}",
                  "isnan": "false", "isinf": "false", "isfinite": "true", "real": "{0}",
                  "conj": "{0}", "floor": "{0}", "ceil": "{0}", "trunc": "{0}", "round": "{0}",
                  "sign": "{0}", "imag": "false", "neg": "{0}", "sub": "({0} != {1})",
                  "signbit": "false"}
        if name not in simple:
            raise RenderError(f"cuda_c: op {name!r} is not defined for bool")
        return simple[name].format(*a)

    def iop(self, name, a, dt):
        T = VALUE[dt]
        U = _UNSIGNED_OF[dt]
        unsigned = dt[0] == "u"
        bits = ir.BITS[dt]
        x = a[0]
        y = a[1] if len(a) > 1 else None
        if name in ("add", "sub", "mul"):
            return f"(({T})(({U})({x}) {'+-*'[('add', 'sub', 'mul').index(name)]} ({U})({y})))"
        if name == "neg":
            return f"(({T})(0u - ({U})({x})))"
        if name == "square":
            return f"(({T})(({U})({x}) * ({U})({x})))"
        if name == "abs":
            return x if unsigned else f"(({x}) < 0 ? ({T})(0u - ({U})({x})) : ({x}))"
        if name == "sign":
            if unsigned:
                return f"(({T})(({x}) > 0 ? 1 : 0))"
            return f"(({T})(({x}) > 0 ? 1 : (({x}) < 0 ? -1 : 0)))"
        if name in ("floor", "ceil", "trunc", "round", "real", "conj", "positive"):
            return x
        if name == "imag":
            return f"(({T})0)"
        if name in ("isnan", "isinf"):
            return "false"
        if name == "isfinite":
            return "true"
        if name == "signbit":
            return "false" if unsigned else f"(({x}) < 0)"
        if name in ("and", "or", "xor"):
            return f"(({T})(({x}) {'&|^'[('and', 'or', 'xor').index(name)]} ({y})))"
        if name == "invert":
            return f"(({T})(~({U})({x})))"
        if name in ("eq", "ne", "lt", "le", "gt", "ge"):
            opn = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
            return f"(({x}) {opn} ({y}))"
        if name == "max":
            return f"(({x}) >= ({y}) ? ({x}) : ({y}))"
        if name == "min":
            return f"(({x}) <= ({y}) ? ({x}) : ({y}))"
        if name == "shl":
            return f"((({y}) < 0 || ({y}) >= {bits}) ? ({T})0 : ({T})(({U})({x}) << ({y})))"
        if name == "shr":
            if unsigned:
                return f"(({y}) >= {bits} ? ({T})0 : ({T})(({x}) >> ({y})))"
            return f"(({T})(({x}) >> ((({y}) < 0 || ({y}) > {bits - 1}) ? {bits - 1} : ({y}))))"
        if name in ("floordiv", "div", "mod", "pow"):
            return f"{self.int_helper('floordiv' if name == 'div' else name, dt)}({x}, {y})"
        raise RenderError(f"cuda_c: op {name!r} is not defined for {dt}")

    def int_helper(self, name, dt):
        T = VALUE[dt]
        fn = f"r{name}_{dt}"
        if fn in self.helpers:
            return fn
        signed = dt[0] == "i"
        if name == "floordiv":
            body = "if (b == 0) return 0;\n"
            if signed:
                body += (f"if (a == {literal(ir.INT_MIN[dt], dt)} && b == -1) return a;\n"
                         f"{T} q = a / b;\nif ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;\nreturn q;")
            else:
                body += "return a / b;"
        elif name == "mod":
            body = "if (b == 0) return 0;\n"
            if signed:
                body += ("if (b == -1) return 0;\n"
                         f"{T} r = a % b;\nif (r != 0 && ((r < 0) != (b < 0))) r += b;\nreturn r;")
            else:
                body += "return a % b;"
        else:  # pow by squaring; negative exponents give 0 (1 for base 1, +-1 for -1)
            U = _UNSIGNED_OF[dt]
            body = (("if (b < 0) { if (a == 1) return 1; if (a == -1) return (b & 1) ? a : 1; return 0; }\n"
                     if signed else "")
                    + f"{U} r = 1, x = ({U})a; {T} e = b;\n"
                    "while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }\n"
                    f"return ({T})r;")
        self.helpers[fn] = f"__device__ __forceinline__ {T} {fn}({T} a, {T} b) {{\n{body}\n}}"
        return fn

    def fop(self, name, a, dt):
        T = VALUE[dt]
        x = a[0]
        y = a[1] if len(a) > 1 else None
        if name in ("add", "sub", "mul", "div"):
            return f"(({x}) {'+-*/'[('add', 'sub', 'mul', 'div').index(name)]} ({y}))"
        if name == "neg":
            return f"(-({x}))"
        if name == "square":
            return f"(({x}) * ({x}))"
        if name == "reciprocal":
            return f"(({T})1 / ({x}))"
        if name == "abs":
            return f"fabs({x})"
        if name == "round":
            return f"rint({x})"
        if name in _FLOAT_LIB:
            return f"{name}({x})"
        if name in ("real", "conj", "positive"):
            return x
        if name == "imag":
            return f"(({T})0)"
        if name in ("eq", "ne", "lt", "le", "gt", "ge"):
            opn = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
            return f"(({x}) {opn} ({y}))"
        if name in ("isnan", "isinf", "isfinite", "signbit"):
            return f"((bool){name}({x}))"
        if name in ("copysign", "nextafter", "hypot", "atan2", "pow"):
            return f"{name}({x}, {y})"
        if name == "max":
            return f"((({x}) >= ({y}) || isnan({x})) ? ({x}) : ({y}))"
        if name == "min":
            return f"((({x}) <= ({y}) || isnan({x})) ? ({x}) : ({y}))"
        if name == "sign":
            return f"(({x}) > 0 ? ({T})1 : (({x}) < 0 ? ({T})-1 : (({x}) == 0 ? ({T})0 : ({x}))))"
        if name in ("floordiv", "mod", "logaddexp"):
            return f"{self.float_helper(name, dt)}({x}, {y})"
        raise RenderError(f"cuda_c: op {name!r} is not defined for {dt}")

    def float_helper(self, name, dt):
        T = VALUE[dt]
        fn = f"r{name}_{dt}"
        if fn in self.helpers:
            return fn
        if name == "floordiv":      # npy_floor_divide; the standard's results for one infinite operand
            body = ("if (b == 0 || (isinf(a) && isfinite(b)) || (isfinite(a) && isinf(b))) return a / b;\n"
                    f"{T} mod = fmod(a, b);\n{T} div = (a - mod) / b;\n"
                    "if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;\n"
                    f"if (div != 0) {{ {T} fd = floor(div); if (div - fd > ({T})0.5) fd += 1; return fd; }}\n"
                    f"return copysign(({T})0, a / b);")
        elif name == "mod":         # npy_remainder
            body = (f"{T} mod = fmod(a, b);\nif (b == 0) return mod;\n"
                    "if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; return mod; }\n"
                    f"return copysign(({T})0, b);")
        else:                       # npy_logaddexp
            body = (f"if (a == b) return a + ({T})0.693147180559945309417232121458176568;\n"
                    f"{T} d = a - b;\nif (d > 0) return a + log1p(exp(-d));\n"
                    "if (d <= 0) return b + log1p(exp(d));\nreturn d;")
        self.helpers[fn] = f"__device__ __forceinline__ {T} {fn}({T} a, {T} b) {{\n{body}\n}}"
        return fn

    def cop(self, name, a, dt):
        T = VALUE[dt]
        x = a[0]
        y = a[1] if len(a) > 1 else None
        if name in ("add", "sub"):
            s = "+" if name == "add" else "-"
            return f"{T}{{({x}).x {s} ({y}).x, ({x}).y {s} ({y}).y}}"
        if name == "neg":
            return f"{T}{{-({x}).x, -({x}).y}}"
        if name == "real":
            return f"({x}).x"
        if name == "imag":
            return f"({x}).y"
        if name == "conj":
            return f"{T}{{({x}).x, -({x}).y}}"
        if name == "eq":
            return f"(({x}).x == ({y}).x && ({x}).y == ({y}).y)"
        if name == "ne":
            return f"(({x}).x != ({y}).x || ({x}).y != ({y}).y)"
        if name in ("isnan", "isinf"):
            return f"((bool){name}(({x}).x) || (bool){name}(({x}).y))"
        if name == "isfinite":
            return f"((bool)isfinite(({x}).x) && (bool)isfinite(({x}).y))"
        if name == "abs":
            return f"hypot(({x}).x, ({x}).y)"
        if name == "mul":
            return f"{self.complex_helper('mul', dt)}({x}, {y})"
        if name == "square":
            return f"{self.complex_helper('mul', dt)}({x}, {x})"
        if name in ("div", "reciprocal", "exp", "log", "sqrt"):
            fn = self.complex_helper(name, dt)
            return f"{fn}({', '.join(a)})"
        raise RenderError(f"cuda_c: op {name!r} is not defined for {dt}")

    def complex_helper(self, name, dt):
        T = VALUE[dt]
        R = VALUE[ir.real_of(dt)]
        fn = f"c{name}_{dt}"
        if fn in self.helpers:
            return fn
        if name == "mul":
            src = (f"__device__ __forceinline__ {T} {fn}({T} a, {T} b) {{ "
                   f"return {T}{{a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x}}; }}")
        elif name == "div":   # Smith's algorithm
            src = f"""__device__ __forceinline__ {T} {fn}({T} a, {T} b) {{
  if (fabs(b.x) >= fabs(b.y)) {{
    if (b.x == 0 && b.y == 0) return {T}{{a.x / fabs(b.x), a.y / fabs(b.x)}};
    {R} rt = b.y / b.x, d = b.x + b.y * rt;
    return {T}{{(a.x + a.y * rt) / d, (a.y - a.x * rt) / d}};
  }}
  {R} rt = b.x / b.y, d = b.y + b.x * rt;
  return {T}{{(a.x * rt + a.y) / d, (a.y * rt - a.x) / d}};
}}"""
        elif name == "reciprocal":
            div = self.complex_helper("div", dt)
            src = f"__device__ __forceinline__ {T} {fn}({T} a) {{ return {div}({T}{{1, 0}}, a); }}"
        elif name == "exp":
            src = f"""__device__ __forceinline__ {T} {fn}({T} a) {{
  if (a.y == 0) return {T}{{exp(a.x), a.y}};
  {R} e = exp(a.x);
  return {T}{{e * cos(a.y), e * sin(a.y)}};
}}"""
        elif name == "log":
            src = f"__device__ __forceinline__ {T} {fn}({T} a) {{ return {T}{{log(hypot(a.x, a.y)), atan2(a.y, a.x)}}; }}"
        elif name == "sqrt":
            src = f"""__device__ __forceinline__ {T} {fn}({T} a) {{
  if (a.x == 0 && a.y == 0) return {T}{{0, a.y}};
  {R} m = hypot(a.x, a.y);
  if (a.x >= 0) {{ {R} t = sqrt(({R})0.5 * (m + a.x)); return {T}{{t, a.y / (2 * t)}}; }}
  {R} t = sqrt(({R})0.5 * (m - a.x));
  return {T}{{fabs(a.y) / (2 * t), copysign(t, a.y)}};
}}"""
        else:
            raise RenderError(f"cuda_c: op {name!r} is not defined for {dt}")
        self.helpers[fn] = src
        return fn

    # ---------------------------------------------------------------- reductions
    # ---------------------------------------------------------------- program
    def coords_from(self, lin, lo, hi, prefix="c"):
        """Lines decomposing unsigned ``lin`` into int coords lo..hi-1 (row-major)."""
        rem = f"rem{self.tmp()}"
        lines = [f"unsigned long long {rem} = {lin};"]
        for d in reversed(range(lo, hi)):
            s = self.w(self.lay.shape_at + d)
            lines.append(f"const int {prefix}{d} = (int)({rem} % {s}); {rem} /= {s};")
        return lines

    def program(self):
        k = self.k
        body = k.body
        for a in k.args:
            if a.dtype not in STORAGE:
                raise RenderError(f"cuda_c: dtype {a.dtype} of arg {a.name!r} is not supported")
        if isinstance(body, ir.Map):
            kind, main = "map", self.map_main(body)
        elif isinstance(body, ir.Reduce):
            if body.finish is not None:
                raise RenderError("cuda_c: single-pass (finish) reductions are not rendered here")
            if k.hint("serial"):
                kind, main = "serial", self.serial_reduce_main(body)
            else:
                kind, main = "reduce", self.reduce_main(body)
        elif isinstance(body, ir.Scan):
            kind, main = "scan", self.scan_main(body)
        else:
            raise RenderError(f"cuda_c: unknown kernel body {type(body).__name__}")
        name = "ruda_" + re.sub(r"\W", "_", k.name or "kernel")
        params = ["const unsigned int* __restrict__ rmeta"]
        for i, a in enumerate(k.args):
            params.append(f"{'' if a.writable else 'const '}{STORAGE[a.dtype]}* __restrict__ a{i}")
        head = f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({", ".join(params)}) {{'
        out = [_PRELUDE] + list(self.helpers.values()) + [head, main, "}"]
        return Program(k, "\n".join(out) + "\n", kind, name)

    def map_main(self, body):
        sc = _Scope()
        for st in body.stores:
            self.emit_store(st, sc)
        lines = [f"const unsigned long long n = {self.w(0)};",
                 "for (unsigned long long lin = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; "
                 "lin < n; lin += (unsigned long long)gridDim.x * blockDim.x) {"]
        lines += ["  " + ln for ln in self.coords_from("lin", 0, self.k.ndim)]
        lines += ["  " + ln for ln in sc.lines]
        lines.append("}")
        return "\n".join("  " + ln for ln in lines)

    def reduce_store(self, body, val, idx, job):
        out = []
        odt = self.k.args[body.out].dtype
        if body.split:
            oi = f"(long long){self.wi(self.lay.arg_at[body.out])} + (long long)({job})"
        else:
            oi = self.index(body.out, ir.Strided(tuple(ir.Coord(d) for d in range(body.outer_ndim))), _Scope())
        vexpr = val if odt == body.value.dtype else self.cast(val, body.value.dtype, odt)
        out.append(f"a{body.out}[{oi}] = {self.store_value(vexpr, odt)};")
        if body.index_out is not None:
            ia = self.k.args[body.index_out]
            if body.split:
                ii = f"(long long){self.wi(self.lay.arg_at[body.index_out])} + (long long)({job})"
            else:
                ii = self.index(body.index_out, ir.Strided(tuple(ir.Coord(d) for d in range(body.outer_ndim))),
                                _Scope())
            out.append(f"a{body.index_out}[{ii}] = ({VALUE[ia.dtype]})({idx});")
        return out

    def reduce_main(self, body):
        k = self.k
        dt = body.value.dtype
        T = VALUE[dt]
        is_arg = body.op in ("argmax", "argmin")
        sc = _Scope()
        v = self.expr(body.value, sc)
        ident = self.identity(body.op, dt)
        ex = self.lay.extra_at
        lines = [f"__shared__ {T} sv[{BLOCK}];"]
        if is_arg:
            lines.append(f"__shared__ long long si[{BLOCK}];")
        lines += [f"const unsigned long long nout = {self.w(0)};",
                  f"const unsigned long long red_n = {self.w(ex['red_n'])};",
                  f"const unsigned long long nsplit = {self.w(ex['nsplit'])};",
                  f"const unsigned long long chunk = {self.w(ex['chunk'])};",
                  "const unsigned long long total = nout * nsplit;",
                  "for (unsigned long long job = blockIdx.x; job < total; job += gridDim.x) {",
                  "  const unsigned long long o = job / nsplit, s = job % nsplit;",
                  "  const unsigned long long r0 = s * chunk;",
                  "  const unsigned long long r1 = r0 + chunk < red_n ? r0 + chunk : red_n;",
                  f"  {T} acc = {ident};"]
        if is_arg:
            lines.append("  long long acci = 9223372036854775807LL;")
        lines.append(f"  for (unsigned long long r = r0 + threadIdx.x; r < r1; r += {BLOCK}) {{")
        lines += self.accumulate(body, k, sc, v, dt, is_arg)
        lines += ["  }", "  sv[threadIdx.x] = acc;"]
        if is_arg:
            lines.append("  si[threadIdx.x] = acci;")
        lines += ["  __syncthreads();",
                  f"  for (unsigned int wd = {BLOCK // 2}; wd > 0; wd >>= 1) {{",
                  "    if (threadIdx.x < wd) {"]
        if is_arg:
            better = self.arg_better(body.op, "sv[threadIdx.x + wd]", "si[threadIdx.x + wd]",
                                     "sv[threadIdx.x]", "si[threadIdx.x]", dt)
            lines.append(f"      if ({better}) {{ sv[threadIdx.x] = sv[threadIdx.x + wd]; "
                         "si[threadIdx.x] = si[threadIdx.x + wd]; }")
        else:
            lines.append(f"      sv[threadIdx.x] = {self.combine(body.op, 'sv[threadIdx.x]', 'sv[threadIdx.x + wd]', dt)};")
        lines += ["    }", "    __syncthreads();", "  }", "  if (threadIdx.x == 0) {"]
        lines += ["    " + ln for ln in self.coords_from("o", 0, body.outer_ndim)]
        lines += ["    " + ln for ln in self.reduce_store(body, "sv[0]", "si[0]", "job")]
        lines += ["  }", "  __syncthreads();", "}"]
        return "\n".join("  " + ln for ln in lines)

    def serial_reduce_main(self, body):
        k = self.k
        dt = body.value.dtype
        T = VALUE[dt]
        is_arg = body.op in ("argmax", "argmin")
        sc = _Scope()
        v = self.expr(body.value, sc)
        ex = self.lay.extra_at
        lines = [f"const unsigned long long nout = {self.w(0)};",
                 f"const unsigned long long red_n = {self.w(ex['red_n'])};",
                 "for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; "
                 "o < nout; o += (unsigned long long)gridDim.x * blockDim.x) {",
                 f"  {T} acc = {self.identity(body.op, dt)};"]
        if is_arg:
            lines.append("  long long acci = 9223372036854775807LL;")
        lines.append("  for (unsigned long long r = 0; r < red_n; ++r) {")
        lines += self.accumulate(body, k, sc, v, dt, is_arg)
        lines.append("  }")
        lines += ["  " + ln for ln in self.coords_from("o", 0, body.outer_ndim)]
        lines += ["  " + ln for ln in self.reduce_store(body, "acc", "acci", "o")]
        lines.append("}")
        return "\n".join("  " + ln for ln in lines)

    def scan_main(self, body):
        k = self.k
        dt = body.value.dtype
        T = VALUE[dt]
        sc = _Scope()
        v = self.expr(body.value, sc)
        ident = self.identity(body.op, dt)
        comb = lambda x, y: self.combine(body.op, x, y, dt)  # noqa: E731
        ex = self.lay.extra_at
        oa = k.args[body.out]
        lines = [f"__shared__ {T} sv[{BLOCK}];",
                 f"const unsigned long long n = {self.w(0)};",
                 f"const unsigned long long sn = {self.w(ex['scan_n'])};",
                 "const unsigned long long nrows = sn ? n / sn : 0;",
                 "for (unsigned long long row = blockIdx.x; row < nrows; row += gridDim.x) {",
                 f"  {T} carry = {ident};",
                 f"  for (unsigned long long base = 0; base < sn; base += {BLOCK}) {{",
                 "    const unsigned long long i = base + threadIdx.x;",
                 f"    {T} v = {ident};",
                 "    if (i < sn) {"]
        inner = self.coords_from("(row * sn + i)", 0, k.ndim) + sc.lines + [f"v = {v};"]
        lines += ["      " + ln for ln in inner]
        lines += ["    }",
                  "    sv[threadIdx.x] = v;",
                  "    __syncthreads();",
                  f"    for (unsigned int wd = 1; wd < {BLOCK}; wd <<= 1) {{",
                  f"      {T} t = sv[threadIdx.x];",
                  f"      if (threadIdx.x >= wd) t = {comb('sv[threadIdx.x - wd]', 't')};",
                  "      __syncthreads();",
                  "      sv[threadIdx.x] = t;",
                  "      __syncthreads();",
                  "    }"]
        if body.exclusive:
            lines.append(f"    {T} res = carry; if (threadIdx.x > 0) res = {comb('carry', 'sv[threadIdx.x - 1]')};")
        else:
            lines.append(f"    const {T} res = {comb('carry', 'sv[threadIdx.x]')};")
        lines.append("    if (i < sn) {")
        lines += ["      " + ln for ln in self.coords_from("(row * sn + i)", 0, k.ndim)]
        oi = self.index(body.out, ir.Strided(), _Scope())
        val = "res" if oa.dtype == dt else self.cast("res", dt, oa.dtype)
        lines.append(f"      a{body.out}[{oi}] = {self.store_value(val, oa.dtype)};")
        lines += ["    }",
                  f"    carry = {comb('carry', f'sv[{BLOCK - 1}]')};",
                  "    __syncthreads();",
                  "  }",
                  "}"]
        return "\n".join("  " + ln for ln in lines)
