"""WGSL renderer: :mod:`ruda.runtime.ir` kernels -> WebGPU compute shaders.

Storage (declared in :data:`STORAGE`, which the wgpu allocator follows): ``bool``, ``u8``,
``u16`` are widened to ``u32`` words and ``i8``/``i16`` to ``i32`` (WGSL has no 8/16-bit
integer storage); values are re-wrapped to their logical width after every operation,
so results equal NumPy's.  ``f16`` needs ``enable f16``; ``i64``/``u64`` and ``f64`` need
the shader-int64 / shader-f64 features; complex types are ``vec2`` pairs.

Bindings: ``@binding(0)`` is the metadata (a uniform ``array<vec4<u32>, K>`` laid out by
:mod:`ruda.runtime.packing`); buffer ``i`` of ``Kernel.args`` is ``@binding(i + 1)``.
Launch: :meth:`Program.grid` gives the workgroup count for the packed metadata.
"""
import math

from ruda.runtime import ir
from ruda.runtime.packing import layout as _layout
from ruda.runtime.render import ExprRender, RenderError, Scope as _Scope
from ruda.runtime.wgsl_math import _GENERIC, HELPERS

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


class Program:
    """A rendered kernel: WGSL source plus what the launcher needs."""

    __slots__ = ("kernel", "source", "layout", "kind", "key", "outs")

    def __init__(self, kernel, source, kind):
        self.kernel = kernel
        self.source = source
        self.layout = _layout(kernel)
        self.kind = kind
        self.key = source
        self.outs = tuple(i for i, a in enumerate(kernel.args) if a.writable)   # args it writes

    def grid(self, words):
        """Workgroups (x) for a launch with metadata ``words``."""
        n = int(words[0])
        if self.kind == "map" or self.kind == "serial":
            g = -(-n // WG)
            if self.kernel.hint("vec4"):
                g = -(-(n // 4) // (WG * VEC_UNROLL))
        elif self.kind == "reduce":
            g = n * int(words[self.layout.extra_at["nsplit"]])
        else:  # scan: one workgroup per row
            sn = int(words[self.layout.extra_at["scan_n"]])
            g = n // sn if sn else 0
        return max(1, min(g, MAX_GROUPS)) if n else 0


class WGSLRenderer:
    """Renders IR kernels to WGSL for an adapter with the given features."""

    def __init__(self, f16=False, f64=False, int64=False, subgroup=False):
        self.f16, self.f64, self.int64 = f16, f64, int64
        self.subgroup = subgroup
        self.storage = STORAGE
        self.itemsize = ITEMSIZE

    def supports(self, dtype):
        if dtype == "f16":
            return self.f16
        if dtype in ("f64", "c128"):
            return self.f64
        if dtype in ("i64", "u64"):
            return self.int64
        return dtype in STORAGE

    def render(self, kernel):
        return _Render(self, kernel).program()


# ------------------------------------------------------------------------ rendering
class _Render(ExprRender):
    NAME = "wgsl"
    SELECT_ORDER = ("b", "a", "cond")       # select(b, a, cond)'s own order
    R_INDEX = "i32(r)"                      # a reduction's element index, as acci's type
    literal = staticmethod(literal)

    def __init__(self, renderer, kernel):
        super().__init__(kernel)
        self.r = renderer
        self.uses_f16 = False
        self.outer_coords = None   # names of coords for Reduce output index
        self.lane = None           # vec4 kernels: (name suffix, load of a vec4 arg's lane) being rendered
        self.vec_mask = kernel.hint("vec4")

    # ---------------------------------------------------------------- helpers
    def need(self, name):
        if name in self.helpers:
            return name
        if name in HELPERS:
            deps, src = HELPERS[name]
        else:
            base, _, s = name.rpartition("_")
            if base in _GENERIC:
                deps, src = _GENERIC[base]
                T = {"f32": "f32", "f64": "f64", "f16": "f16"}[s]
                lit = lambda v: literal(v, s)  # noqa: E731
                src = src.replace("{T}", T).replace("{S}", s).replace("{Z}", lit(0.0)) \
                    .replace("{O}", lit(1.0)).replace("{H}", lit(0.5)) \
                    .replace("{LN2}", lit(0.6931471805599453)).replace("{PI}", lit(3.141592653589793)) \
                    .replace("{BIG}", lit(9007199254740992.0 if s == "f64" else 16777216.0))
                deps = tuple(f"{d}_{s}" for d in deps)
            elif base in ("fdiv", "freciprocal", "fsqrt"):     # f32 through f64 where it exists
                wide = s == "f32" and self.r.f64
                a, b = ("f64(a)", "f64(b)") if wide else ("a", "b")
                e = {"fdiv": f"{a} / {b}", "freciprocal": f"{literal(1.0, 'f64' if wide else s)} / {a}",
                     "fsqrt": f"sqrt({a})"}[base]
                sig = f"a: {s}, b: {s}" if base == "fdiv" else f"a: {s}"
                deps, src = (), f"fn {name}({sig}) -> {s} {{ return {f'f32({e})' if wide else e}; }}"
            elif s == "f32" and base in _F32_BUILTIN:
                deps, src = (), f"fn {name}(x: f32) -> f32 {{ return {base}(x); }}"
            else:
                raise RenderError(f"wgsl: unknown helper {name!r}")
        self.helpers[name] = None
        for d in deps:
            self.need(d)
        self.helpers[name] = src
        return name

    # ---------------------------------------------------------------- metadata
    def w(self, k):
        return f"rmeta[{k >> 2}].{'xyzw'[k & 3]}"

    def wi(self, k):
        return f"bitcast<i32>({self.w(k)})"

    def param(self, i, dt):
        at = self.lay.param_at[i]
        w = self.w
        if dt == "bool":
            return f"({w(at)} != 0u)"
        if dt in ("i8", "i16", "i32"):
            return f"bitcast<i32>({w(at)})"
        if dt in ("u8", "u16", "u32"):
            return w(at)
        if dt == "f32":
            return f"bitcast<f32>({w(at)})"
        if dt == "f16":
            return f"f16(unpack2x16float({w(at)}).x)"
        u64 = f"(u64({w(at)}) | (u64({w(at + 1)}) << 32u))"
        if dt == "u64":
            return u64
        if dt == "i64":
            return f"bitcast<i64>{u64}"
        if dt == "f64":
            return f"bitcast<f64>{u64}"
        if dt == "c64":
            return f"vec2<f32>(bitcast<f32>({w(at)}), bitcast<f32>({w(at + 1)}))"
        if dt == "c128":
            hi = f"(u64({w(at + 2)}) | (u64({w(at + 3)}) << 32u))"
            return f"vec2<f64>(bitcast<f64>{u64}, bitcast<f64>{hi})"
        raise RenderError(f"wgsl: param dtype {dt!r}")

    # ---------------------------------------------------------------- expressions (syntax)
    def const(self, node):
        if node.dtype in ("f32", "f64", "f16"):
            v = float(node.value)
            if v != v or v in (float("inf"), float("-inf")):
                self.need(("nan_" if v != v else "inf_") + node.dtype)
        if node.dtype in ("c64", "c128"):
            self._floatspecials(node.value, ir.real_of(node.dtype))
        return super().const(node)

    def _floatspecials(self, v, dt):
        for part in (v.real, v.imag):
            if part != part:
                self.need("nan_" + dt)
            elif part in (float("inf"), float("-inf")):
                self.need("inf_" + dt)

    def size(self, dim):
        return f"i32({self.w(self.lay.shape_at + dim)})"

    def bitcast(self, dt, x):
        return f"bitcast<{VALUE[dt]}>({x})"

    def select(self, cond, a, b):
        return f"select({b}, {a}, {cond})"

    def declare(self, name, dt, value, mutable=False):
        if dt == "f16":
            self.uses_f16 = True
        return f"{'var' if mutable else 'let'} {name}: {VALUE[dt]} = {value};"

    def loop(self, v, dt, start, stop):
        return f"for (var {v}: {VALUE[dt]} = {start}; {v} < {stop}; {v} = {v} + 1) {{"

    def infinity(self, dt, negative):
        self.need("inf_" + dt)
        return f"(-inf_{dt}())" if negative else f"inf_{dt}()"

    def isnan_fn(self, dt):
        return self.need("isnan_" + dt)

    def bool_as_int(self, x):
        return f"u32({x})"

    def index_sum(self, base, terms):
        return f"u32({' + '.join([base] + [c if st is None else f'{c} * {st}' for c, st in terms])})"

    def cname(self, d):
        return f"c{d}" if self.lane is None else f"c{d}_{self.lane[0]}"

    def load(self, node, sc):
        a = self.k.args[node.arg]
        if a.dtype != node.dtype:
            raise RenderError(f"wgsl: load of {a.name} as {node.dtype}; the arg is {a.dtype}")
        if self.lane is not None and self.vec_mask[node.arg]:
            if not (isinstance(node.index, ir.Strided) and node.index.coords is None):
                raise RenderError(f"wgsl: vec4 arg {a.name} of {self.k.name!r} is loaded off its element")
            s = self.lane[1].format(i=node.arg)
        else:
            s = f"a{node.arg}[{self.index(node.arg, node.index, sc)}]"
        if node.dtype == "bool":
            return f"({s} != 0u)"
        return s

    def store_value(self, v, dtype):
        if dtype == "bool":
            return f"select(0u, 1u, {v})"
        return v

    # ---------------------------------------------------------------- casts
    def cast(self, x, src, dst):
        if src == dst:
            return x
        T = VALUE[dst]
        if dst == "bool":
            if src in ir.COMPLEX:       # NaN is true, as in NumPy
                r = ir.real_of(src)
                z = literal(0, r)
                return self.unordered(r, [f"({x}).x", f"({x}).y"], f"(({x}).x != {z} || ({x}).y != {z})")
            if src in ir.FLOATS:
                return self.unordered(src, [x], f"{x} != {literal(0, src)}")
            return f"({x} != {literal(0, src)})"
        if src == "bool":
            if dst in ir.COMPLEX:
                r = ir.real_of(dst)
                return f"vec2<{VALUE[r]}>(select({literal(0, r)}, {literal(1, r)}, {x}), {literal(0, r)})"
            return f"select({literal(0, dst)}, {literal(1, dst)}, {x})"
        if dst in ir.COMPLEX:
            r = ir.real_of(dst)
            if src in ir.COMPLEX:
                return f"{T}({x})"
            return f"{T}({self.cast(x, src, r)}, {literal(0, r)})"
        if src in ir.COMPLEX:
            return self.cast(f"({x}).x", ir.real_of(src), dst)
        if dst in _SMALL:
            base = "i32" if dst[0] == "i" else "u32"
            inner = x if VALUE[src] == base else f"{base}({x})"
            if src in ir.FLOATS:
                # float -> small int: go through i32 (NumPy: C cast), then wrap
                inner = f"{base}(i32({x}))" if base == "u32" else f"i32({x})"
            return self.wrap(inner, dst)
        if src in ir.FLOATS and dst in ("u32", "u64"):
            # NumPy casts negative floats to unsigned via the signed type (C behaviour on x86)
            s = "i32" if dst == "u32" else "i64"
            return f"select({T}({x}), {T}({s}({x})), {x} < {literal(0, src)})"
        if dst in ("i64", "u64") and VALUE[src] in ("i32", "u32") and VALUE[src][0] != dst[0]:
            # widen with the source's signedness first: naga extends by the destination's
            # (i64(0xffffffffu) was -1, u64(-1i) 0xffffffff)
            return f"{T}({VALUE[src][0]}64({x}))"
        return f"{T}({x})"

    def unordered(self, dt, values, test):
        """``test``, or true when any of ``values`` is NaN (by bit pattern): naga renders float
        != as SPIR-V's *ordered* not-equal (false for NaN), and WGSL lets drivers assume no NaN."""
        if dt == "f16":
            values, dt = [f"f32({v})" for v in values], "f32"
        n = self.need("isnan_" + dt)
        return "(" + " || ".join([f"{n}({v})" for v in values] + [test]) + ")"

    def wrap(self, x, dt):
        bits = _SMALL.get(dt)
        if bits is None:
            return x
        if dt[0] == "i":
            sh = 32 - bits
            return f"(({x} << {sh}u) >> {sh}u)"
        return f"({x} & {(1 << bits) - 1}u)"

    # ---------------------------------------------------------------- ops
    def op(self, node, a):
        name, dt = node.op, node.args[0].dtype
        if dt in ir.COMPLEX:
            return self.cop(name, a, dt, node.dtype)
        if dt in ir.FLOATS:
            return self.fop(name, a, dt)
        if dt == "bool":
            return self.bop(name, a)
        return self.iop(name, a, dt)

    def bop(self, name, a):
        simple = {"and": "({0} & {1})", "or": "({0} | {1})", "xor": "({0} != {1})",
                  "not": "(!{0})", "invert": "(!{0})", "eq": "({0} == {1})", "ne": "({0} != {1})",
                  "max": "({0} | {1})", "min": "({0} & {1})", "add": "({0} | {1})",
                  "mul": "({0} & {1})", "lt": "(!{0} & {1})", "gt": "({0} & !{1})",
                  "le": "(!{0} | {1})", "ge": "({0} | !{1})", "abs": "{0}", "square": "{0}",
                  "isnan": "false", "isinf": "false", "isfinite": "true", "real": "{0}",
                  "conj": "{0}", "floor": "{0}", "ceil": "{0}", "trunc": "{0}", "round": "{0}",
                  "sign": "{0}", "imag": "false", "neg": "{0}", "sub": "({0} != {1})"}
        if name not in simple:
            raise RenderError(f"wgsl: op {name!r} is not defined for bool")
        return simple[name].format(*a)

    def iop(self, name, a, dt):
        unsigned = dt in _UNSIGNED
        bits = ir.BITS[dt]
        x = a[0]
        y = a[1] if len(a) > 1 else None
        z = literal(0, dt)
        wrap = lambda s: self.wrap(s, dt)  # noqa: E731
        if name in ("add", "sub", "mul"):
            return wrap(f"({x} {'+-*'[('add', 'sub', 'mul').index(name)]} {y})")
        if name == "neg":
            return wrap(f"({z} - {x})")
        if name == "square":
            return wrap(f"({x} * {x})")
        if name in ("abs",):
            return x if unsigned else wrap(f"abs({x})")
        if name == "sign":
            if unsigned:
                return f"select({z}, {literal(1, dt)}, {x} > {z})"
            return f"select(select({z}, {literal(1, dt)}, {x} > {z}), {literal(-1, dt)}, {x} < {z})"
        if name in ("floor", "ceil", "trunc", "round", "real", "conj", "positive"):
            return x
        if name == "imag":
            return z
        if name in ("isnan", "isinf"):
            return "false"
        if name == "isfinite":
            return "true"
        if name == "signbit":
            return f"({x} < {z})"
        if name in ("and", "or", "xor"):
            return f"({x} {'&|^'[('and', 'or', 'xor').index(name)]} {y})"
        if name == "invert":
            return wrap(f"(~{x})")
        if name in ("eq", "ne", "lt", "le", "gt", "ge"):
            opn = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
            return f"({x} {opn} {y})"
        if name in ("max", "min"):
            return f"{name}({x}, {y})"
        if name == "shl":
            return wrap(f"select({z}, {x} << u32({y}), {y} >= {z} && {y} < {literal(bits, dt)})")
        if name == "shr":
            if unsigned:
                return f"select({z}, {x} >> u32({y}), {y} < {literal(bits, dt)})"
            cap = literal(bits - 1, dt)     # negative counts sign-fill, as in NumPy
            return f"({x} >> u32(select(min({y}, {cap}), {cap}, {y} < {z})))"
        if name in ("floordiv", "mod", "pow", "div"):
            h = self.int_helper(name, dt)
            return wrap(f"{h}({x}, {y})")
        raise RenderError(f"wgsl: op {name!r} is not defined for {dt}")

    def int_helper(self, name, dt):
        T = VALUE[dt]
        fn = f"i{name}_{T}"
        if fn in self.helpers:
            return fn
        base = dt if dt not in _SMALL else ("i32" if dt[0] == "i" else "u32")
        z, o = literal(0, base), literal(1, base)
        signed = base[0] == "i"
        if name in ("floordiv", "div", "mod"):
            # through the magnitudes' unsigned divmod (exact even where a driver's integer
            # division is not: NVIDIA's Vulkan driver gave off-by-one signed quotients)
            U = "u64" if base[-2:] == "64" else "u32"
            dm = self.udivmod(U)
            zu = literal(0, U)
            if not signed:
                body = f"if (b == {z}) {{ return {z}; }}\n  return {dm}(a, b).{'y' if name == 'mod' else 'x'};"
            else:
                body = (f"if (b == {z}) {{ return {z}; }}\n"
                        f"  let qr = {dm}(bitcast<{U}>(select(a, -a, a < {z})), bitcast<{U}>(select(b, -b, b < {z})));\n"
                        f"  var q = bitcast<{base}>(qr.x);\n"
                        f"  if ((a < {z}) != (b < {z})) {{ q = -q; if (qr.y != {zu}) {{ q = q - {o}; }} }}\n")
                # floor remainder from the floor quotient (wrapping: MIN % -1 == 0, MIN // -1 == MIN)
                body += "  return a - q * b;" if name == "mod" else "  return q;"
        else:  # pow by squaring; negative exponents give 0 (1 for base 1, +-1 for -1)
            body = (f"var r: {T} = {o}; var x = a; var e = b;\n  "
                    + (f"if (e < {z}) {{ if (a == {o}) {{ return {o}; }} if (a == {literal(-1, base)}) "
                       f"{{ if ((e & {o}) == {o}) {{ return a; }} return {o}; }} return {z}; }}\n  " if signed else "")
                    + f"loop {{ if (e == {z}) {{ break; }} if ((e & {o}) == {o}) {{ r = r * x; }} x = x * x; e = e >> 1u; }}\n  return r;")
        self.helpers[fn] = f"fn {fn}(a: {T}, b: {T}) -> {T} {{\n  {body}\n}}"
        return fn

    def udivmod(self, U):
        """``fn udivmod_U(a, b) -> vec2<U>``, b != 0: quotient and remainder, with one fix-up step
        each way after the hardware division (a driver's may be off by one)."""
        fn = f"udivmod_{U}"
        if fn not in self.helpers:
            big = literal(1 << (30 if U == "u32" else 62), U)
            top = literal(1 << (31 if U == "u32" else 63), U)
            z, o = literal(0, U), literal(1, U)
            self.helpers[fn] = f"""fn {fn}(a: {U}, b: {U}) -> vec2<{U}> {{
  if (b >= {big}) {{
    var q = {z}; var r = a;
    loop {{ if (r < b) {{ break; }} r = r - b; q = q + {o}; }}
    return vec2<{U}>(q, r);
  }}
  var q = a / b;
  var r = a - q * b;
  if (r >= {top}) {{ q = q - {o}; r = r + b; }}
  else if (r >= b) {{ q = q + {o}; r = r - b; }}
  return vec2<{U}>(q, r);
}}"""
        return fn

    def fop(self, name, a, dt):
        if dt == "f16":
            self.uses_f16 = True
        x = a[0]
        y = a[1] if len(a) > 1 else None
        S = dt
        sfx = _FLOAT_SUFFIX[dt]
        one = f"1.0{sfx}"
        zero = f"0.0{sfx}"
        if dt == "f32" and self.r.f64 and name in ("div", "reciprocal", "sqrt"):
            # correctly rounded through f64 (53 >= 2 * 24 + 2 bits: the second rounding is
            # harmless); NVIDIA's Vulkan driver divides f32 approximately (1 ulp off, measured)
            return f"{self.need('f' + name + '_f32')}({x}{', ' + y if y else ''})"
        if name in ("add", "sub", "mul", "div"):
            return f"({x} {'+-*/'[('add', 'sub', 'mul', 'div').index(name)]} {y})"
        if name == "neg":
            return f"(-{x})"
        if name == "square":
            return f"({x} * {x})"
        if name == "reciprocal":
            return f"({one} / {x})"
        if name in ("floor", "ceil", "trunc", "round") and dt in ("f32", "f64"):
            # the result has x's sign (round(-0.4) is -0.0); lavapipe's f64 round drops it
            return f"{self.need('copysign_' + dt)}({name}({x}), {x})"
        if name in ("abs", "sqrt", "floor", "ceil", "trunc", "round"):
            return f"{name}({x})"
        if name in ("real", "conj", "positive"):
            return x
        if name == "imag":
            return zero
        if name == "ne":
            return self.unordered(dt, [x, y], f"{x} != {y}")
        if name in ("eq", "lt", "le", "gt", "ge"):
            opn = {"eq": "==", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
            return f"({x} {opn} {y})"
        if dt == "f16":
            if name in _F32_BUILTIN or name in ("atan2", "pow"):
                args = ", ".join(f"f32({v})" for v in a)
                return f"f16({self.fop(name, [f'f32({v})' for v in a], 'f32')})" if args else x
            return f"f16({self.fop(name, [f'f32({v})' for v in a], 'f32')})"
        if name in ("isnan", "isinf"):
            return f"{self.need(name + '_' + S)}({x})"
        if name == "isfinite":
            return f"{self.need('isfin_' + S)}({x})"
        if name == "signbit":
            return f"{self.need('sbit_' + S)}({x})"
        if name == "copysign":
            return f"{self.need('copysign_' + S)}({x}, {y})"
        if name == "nextafter":
            return f"{self.need('nextafter_' + S)}({x}, {y})"
        if name == "max":
            return f"{self.need('fmax_' + S)}({x}, {y})"
        if name == "min":
            return f"{self.need('fmin_' + S)}({x}, {y})"
        if name == "sign":
            return f"{self.need('fsign_' + S)}({x})"
        if name == "floordiv":
            return f"{self.need('divmod_' + S)}({x}, {y}).x"
        if name == "mod":
            return f"{self.need('divmod_' + S)}({x}, {y}).y"
        if name == "hypot":
            return f"{self.need('hypot_' + S)}({x}, {y})"
        if name == "atan2":
            return f"{self._atan2(S)}({x}, {y})"
        if name in ("pow", "logaddexp") and S == "f32" and self.r.f64:   # f32 exp/log builtins are loose
            return f"f32({self.fop(name, [f'f64({x})', f'f64({y})'], 'f64')})"
        if name == "pow":
            return f"{self.need('fpow_' + S)}({x}, {y})"
        if name == "logaddexp":
            return f"{self.need('logaddexp_' + S)}({x}, {y})"
        if name in _LIB_F64:
            if S == "f32":
                if self.r.f64:   # accurate f32 through the f64 library
                    return f"f32({self.need(name + '_f64')}(f64({x})))"
            return f"{self.need(name + '_' + S)}({x})"     # f32: the f64 code's twin, or the builtin
        raise RenderError(f"wgsl: op {name!r} is not defined for {dt}")

    def cop(self, name, a, dt, rdt):
        r = ir.real_of(dt)
        T = VALUE[dt]
        x = a[0]
        y = a[1] if len(a) > 1 else None
        if name in ("add", "sub"):
            return f"({x} {'+' if name == 'add' else '-'} {y})"
        if name == "neg":
            return f"(-{x})"
        if name == "real":
            return f"{x}.x"
        if name == "imag":
            return f"{x}.y"
        if name == "conj":
            return f"{T}({x}.x, -{x}.y)"
        if name == "eq":
            return f"({x}.x == {y}.x && {x}.y == {y}.y)"
        if name == "ne":
            return self.unordered(ir.real_of(dt), [f"{x}.x", f"{x}.y", f"{y}.x", f"{y}.y"],
                                  f"({x}.x != {y}.x || {x}.y != {y}.y)")
        if name in ("isnan", "isinf"):
            h = self.need(f"{name}_{r}")
            return f"({h}({x}.x) || {h}({x}.y))"
        if name == "isfinite":
            h = self.need(f"isfin_{r}")
            return f"({h}({x}.x) && {h}({x}.y))"
        if name == "abs":
            return f"{self.need('hypot_' + r)}({x}.x, {x}.y)"
        if name in ("round", "floor", "ceil", "trunc"):
            return f"{name}({x})"
        if name == "mul":
            return f"{T}({x}.x * {y}.x - {x}.y * {y}.y, {x}.x * {y}.y + {x}.y * {y}.x)"
        fn = self.complex_helper(name, dt)
        return f"{fn}({', '.join(a)})"

    def complex_helper(self, name, dt):
        r = ir.real_of(dt)
        T = VALUE[dt]
        fn = f"c{name}_{dt}"
        if fn in self.helpers:
            return fn
        z, o = literal(0, r), literal(1, r)
        f = lambda n: self.real_fn(n, r)  # noqa: E731
        src = None
        if name == "mul":
            src = f"fn {fn}(a: {T}, b: {T}) -> {T} {{ return {T}(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }}"
        elif name == "square":
            src = f"fn {fn}(a: {T}) -> {T} {{ return {T}(a.x * a.x - a.y * a.y, {literal(2, r)} * a.x * a.y); }}"
        elif name == "div":
            src = f"""fn {fn}(a: {T}, b: {T}) -> {T} {{
  if (abs(b.x) >= abs(b.y)) {{
    if (b.x == {z} && b.y == {z}) {{ return {T}(a.x / abs(b.x), a.y / abs(b.x)); }}
    let rt = b.y / b.x; let d = b.x + b.y * rt;
    return {T}((a.x + a.y * rt) / d, (a.y - a.x * rt) / d);
  }}
  let rt = b.x / b.y; let d = b.y + b.x * rt;
  return {T}((a.x * rt + a.y) / d, (a.y * rt - a.x) / d);
}}"""
        elif name == "reciprocal":
            self.complex_helper("div", dt)
            src = f"fn {fn}(a: {T}) -> {T} {{ return cdiv_{dt}({T}({o}, {z}), a); }}"
        elif name == "exp":
            fin, isinf, nan, inf = (self.need(f"{n}_{r}") for n in ("isfin", "isinf", "nan", "inf"))
            src = f"""fn {fn}(a: {T}) -> {T} {{
  if (a.y == {z}) {{ return {T}({f('exp')}(a.x), a.y); }}
  if ({isinf}(a.x) && !{fin}(a.y)) {{
    if (a.x < {z}) {{ return {T}({z}, {z}); }}
    return {T}({inf}(), {nan}());
  }}
  let e = {f('exp')}(a.x);
  return {T}(e * {f('cos')}(a.y), e * {f('sin')}(a.y));
}}"""
        elif name == "log":             # |a| near 1: log1p((u - 1)(u + 1) + v^2) / 2 keeps the digits
            h, th = self.need("hypot_" + r), self._atan2(r)
            src = f"""fn {fn}(a: {T}) -> {T} {{
  let m = {h}(a.x, a.y);
  let u = max(abs(a.x), abs(a.y)); let v = min(abs(a.x), abs(a.y));
  var re = {f('log')}(m);
  if (m > {literal(0.7, r)} && m < {literal(1.4, r)}) {{ re = {literal(0.5, r)} * {f('log1p')}((u - {o}) * (u + {o}) + v * v); }}
  return {T}(re, {th}(a.y, a.x));
}}"""
        elif name == "sqrt":            # C99 csqrt's special values (the standard's list)
            h = self.need("hypot_" + r)
            isinf, isnan, nan, inf, cs = (self.need(f"{n}_{r}") for n in ("isinf", "isnan", "nan", "inf", "copysign"))
            src = f"""fn {fn}(a: {T}) -> {T} {{
  if (a.x == {z} && a.y == {z}) {{ return {T}({z}, a.y); }}
  if ({isinf}(a.y)) {{ return {T}({inf}(), a.y); }}
  if ({isnan}(a.x)) {{ return {T}(a.x, {nan}()); }}
  if ({isinf}(a.x)) {{
    if ({isnan}(a.y)) {{ if (a.x > {z}) {{ return a; }} return {T}(a.y, {inf}()); }}
    if (a.x > {z}) {{ return {T}(a.x, {cs}({z}, a.y)); }}
    return {T}({z}, {cs}({inf}(), a.y));
  }}
  if ({isnan}(a.y)) {{ return {T}(a.y, a.y); }}
  let m = {h}(a.x, a.y);
  if (a.x >= {z}) {{ let t = sqrt({literal(0.5, r)} * (m + a.x)); return {T}(t, a.y / ({literal(2, r)} * t)); }}
  let t = sqrt({literal(0.5, r)} * (m - a.x));
  return {T}(abs(a.y) / ({literal(2, r)} * t), {self.need('copysign_' + r)}(t, a.y));
}}"""
        elif name == "sign":
            h = self.need("hypot_" + r)
            src = f"fn {fn}(a: {T}) -> {T} {{ if (a.x == {z} && a.y == {z}) {{ return {T}({z}, {z}); }} let m = {h}(a.x, a.y); return {T}(a.x / m, a.y / m); }}"
        elif name in ("sin", "cos", "tan"):
            h = self.complex_helper({"sin": "sinh", "cos": "cosh", "tan": "tanh"}[name], dt)
            body = {"sin": f"let w = {h}({T}(-a.y, a.x)); return {T}(w.y, -w.x);",
                    "cos": f"return {h}({T}(-a.y, a.x));",
                    "tan": f"let w = {h}({T}(-a.y, a.x)); return {T}(w.y, -w.x);"}[name]
            src = f"fn {fn}(a: {T}) -> {T} {{ {body} }}"
        elif name in ("expm1", "log1p", "log2", "log10", "pow", "sinh", "cosh", "tanh"):
            e, lg, mul, div = (self.complex_helper(n, dt) for n in ("exp", "log", "mul", "div"))
            fin, isinf, isnan, nan, inf = (self.need(f"{n}_{r}") for n in ("isfin", "isinf", "isnan", "nan", "inf"))
            bodies = {
                # accurate near 0: expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y; log|1 + a|
                # as log1p(x (2 + x) + y^2) / 2; special values from exp / log
                "expm1": f"""if (!{fin}(a.x) || !{fin}(a.y)) {{ return {e}(a) - {T}({o}, {z}); }}
  let s = {f('sin')}({literal(0.5, r)} * a.y);
  let re = {f('expm1')}(a.x) * {f('cos')}(a.y) - {literal(2, r)} * s * s;
  return {T}(select(re, {z}, re == {z}), select({f('exp')}(a.x) * {f('sin')}(a.y), a.y, a.y == {z}));""",
                "log1p": f"""let m = {self.need('hypot_' + r)}({o} + a.x, a.y);
  if (m > {literal(0.7, r)} && m < {literal(1.4, r)}) {{
    let re = {literal(0.5, r)} * {f('log1p')}(a.x * ({literal(2, r)} + a.x) + a.y * a.y);
    return {T}(re, {self._atan2(r)}(a.y, {o} + a.x));
  }}
  return {lg}(a + {T}({o}, {z}));""",
                "log2": f"return {lg}(a) * {literal(1.4426950408889634, r)};",
                "log10": f"return {lg}(a) * {literal(0.4342944819032518, r)};",
                "sinh": f"""if (a.y == {z}) {{ return {T}({f('sinh')}(a.x), a.y); }}
  if (a.x == {z} && !{fin}(a.y)) {{ return {T}(a.x, {nan}()); }}
  if ({isinf}(a.x) && !{fin}(a.y)) {{ return {T}(a.x, {nan}()); }}
  return {T}({f('sinh')}(a.x) * {f('cos')}(a.y), {f('cosh')}(a.x) * {f('sin')}(a.y));""",
                "cosh": f"""if (a.y == {z}) {{ return {T}({f('cosh')}(a.x), a.y); }}
  if (a.x == {z} && !{fin}(a.y)) {{ return {T}({nan}(), {z}); }}
  if ({isinf}(a.x) && !{fin}(a.y)) {{ return {T}({inf}(), {nan}()); }}
  return {T}({f('cosh')}(a.x) * {f('cos')}(a.y), {f('sinh')}(a.x) * {f('sin')}(a.y));""",
                "tanh": f"""if (a.y == {z}) {{ return {T}({f('tanh')}(a.x), a.y); }}
  if ({isnan}(a.y) && a.x == {z}) {{ return {T}(a.x, a.y); }}
  if ({isinf}(a.x)) {{ return {T}({self.need('copysign_' + r)}({o}, a.x), {self.need('copysign_' + r)}({z}, select(a.y, {o}, !{fin}(a.y)))); }}
  if (!{fin}(a.y)) {{ if (a.x == {z}) {{ return {T}(a.x, {nan}()); }} return {T}({nan}(), {nan}()); }}
  if (abs(a.x) > {literal(20, r)}) {{ return {T}({self.need('copysign_' + r)}({o}, a.x), {self.need('copysign_' + r)}({z}, {f('sin')}({literal(2, r)} * a.y))); }}
  let t = {f('tan')}(a.y); let b = {o} + t * t; let s = {f('sinh')}(a.x);   // Kahan's: no cancellation
  let d = {o} + b * s * s;                                         // near the poles (msun's ctanh)
  return {T}(b * sqrt({o} + s * s) * s / d, t / d);""",

                "pow": f"if (b.x == {z} && b.y == {z}) {{ return {T}({o}, {z}); }} if (a.x == {z} && a.y == {z}) {{ if (b.x > {z}) {{ return {T}({z}, {z}); }} }} return {e}({mul}(b, {lg}(a)));",
            }
            args = f"a: {T}, b: {T}" if name == "pow" else f"a: {T}"
            src = f"fn {fn}({args}) -> {T} {{ {bodies[name]} }}"
        elif name in ("asin", "atan", "acosh"):
            # through the C99 special-value tables of asinh / atanh / acos
            base = {"asin": "asinh", "atan": "atanh", "acosh": "acos"}[name]
            h = self.complex_helper(base, dt)
            if name == "acosh":    # acosh z = i acos z for Im z >= 0; conj-symmetric
                sb = self.need("sbit_" + r)
                body = (f"let neg = {sb}(a.y); let c = select(a, {T}(a.x, -a.y), neg); let w = {h}(c); "
                        f"let v = {T}(abs(w.y), w.x); return select(v, {T}(v.x, -v.y), neg);")
            else:                  # asin z = -i asinh(iz), atan z = -i atanh(iz)
                body = f"let w = {h}({T}(-a.y, a.x)); return {T}(w.y, -w.x);"
            src = f"fn {fn}(a: {T}) -> {T} {{ {body} }}"
        elif name in ("asinh", "atanh", "acos"):
            core = self.complex_helper(name + "_core", dt)
            isnan, isinf, sb, cs, nan, inf = (self.need(f"{n}_{r}") for n in ("isnan", "isinf", "sbit", "copysign", "nan", "inf"))
            pi = lambda q: literal(math.pi * q, r)  # noqa: E731
            if name == "asinh":      # odd, conj-symmetric: table on (|x|, |y|)
                body = f"""let X = abs(a.x); let Y = abs(a.y);
  var w: {T};
  if ({isinf}(X)) {{ if ({isnan}(Y)) {{ w = {T}({inf}(), {nan}()); }} else if ({isinf}(Y)) {{ w = {T}({inf}(), {pi(0.25)}); }} else {{ w = {T}({inf}(), {z}); }} }}
  else if ({isinf}(Y)) {{ if ({isnan}(X)) {{ w = {T}({inf}(), {nan}()); }} else {{ w = {T}({inf}(), {pi(0.5)}); }} }}
  else if ({isnan}(X)) {{ if (Y == {z}) {{ w = {T}({nan}(), {z}); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isnan}(Y)) {{ w = {T}({nan}(), {nan}()); }}
  else {{ return {core}(a); }}
  return {T}({cs}(w.x, a.x), {cs}(w.y, a.y));"""
            elif name == "atanh":    # odd, conj-symmetric
                body = f"""let X = abs(a.x); let Y = abs(a.y);
  var w: {T};
  if (X == {o} && Y == {z}) {{ w = {T}({inf}(), {z}); }}
  else if ({isnan}(X)) {{ if ({isinf}(Y)) {{ w = {T}({z}, {pi(0.5)}); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isnan}(Y)) {{ if (X == {z} || {isinf}(X)) {{ w = {T}({z}, {nan}()); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isinf}(X) || {isinf}(Y)) {{ w = {T}({z}, {pi(0.5)}); }}
  else {{ return {core}(a); }}
  return {T}({cs}(w.x, a.x), {cs}(w.y, a.y));"""
            else:                    # acos: conj-symmetric, table on (x, |y|)
                body = f"""let Y = abs(a.y); let x = a.x;
  var w: {T};
  if ({isnan}(x)) {{ if ({isinf}(Y)) {{ w = {T}({nan}(), -{inf}()); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isnan}(Y)) {{ if (x == {z}) {{ w = {T}({pi(0.5)}, {nan}()); }} else if ({isinf}(x)) {{ w = {T}({nan}(), {inf}()); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isinf}(x)) {{ if (x < {z}) {{ w = {T}(select({pi(1)}, {pi(0.75)}, {isinf}(Y)), -{inf}()); }} else {{ w = {T}(select({z}, {pi(0.25)}, {isinf}(Y)), -{inf}()); }} }}
  else if ({isinf}(Y)) {{ w = {T}({pi(0.5)}, -{inf}()); }}
  else {{ return {core}(a); }}
  if ({sb}(a.y)) {{ return {T}(w.x, -w.y); }}
  return w;"""
            src = f"fn {fn}(a: {T}) -> {T} {{\n  {body}\n}}"
        elif name in ("asinh_core", "atanh_core", "acos_core"):
            name = name[:-5]
            lg, sq, mul = (self.complex_helper(n, dt) for n in ("log", "sqrt", "mul"))
            big = literal(1e8 if r == "f32" else 1e16, r)    # beyond: z*z would overflow / lose 1
            one = f"{T}({o}, {z})"
            bodies = {
                # asin z = -i log(iz + sqrt(1 - z^2)); acos z = -i log(z + i sqrt(1 - z^2))
                "asin": f"let s = select({o}, -{o}, a.y > {z}); let b = a * s; let w = {lg}({T}(-b.y, b.x) + {sq}({one} - {mul}(b, b))); return {T}(w.y, -w.x) * s;",
                "acos": f"if (max(abs(a.x), abs(a.y)) > {big}) {{ let neg = a.y < {z}; let c = {T}(a.x, abs(a.y)); "
                        f"let w = {lg}(c) + {T}({literal(math.log(2), r)}, {z}); let v = {T}(w.y, -w.x); "
                        f"return select(v, {T}(v.x, -v.y), neg); }} "
                        # Kahan: no cancellation (z + i sqrt(1 - z^2) vanishes for large Re z, Im z < 0)
                        f"let s1 = {sq}({one} - a); let s2 = {sq}({one} + a); "
                        f"return {T}({literal(2, r)} * {self._atan2(r)}(s1.x, s2.x), "
                        f"{self.real_fn('asinh', r)}(s2.x * s1.y - s2.y * s1.x));",
                # atan z = i/2 (log(1 - iz) - log(1 + iz))
                "atan": f"let iz = {T}(-a.y, a.x); let w = {lg}({one} - iz) - {lg}({one} + iz); return {T}(-w.y * {literal(0.5, r)}, w.x * {literal(0.5, r)});",
                "asinh": f"let s = select({o}, -{o}, a.x < {z}); let b = a * s; "
                         f"if (max(abs(b.x), abs(b.y)) > {big}) {{ return ({lg}(b) + {T}({literal(math.log(2), r)}, {z})) * s; }} "
                         f"return {lg}(b + {sq}({mul}(b, b) + {one})) * s;",
                "acosh": f"return {lg}(a + {mul}({sq}(a + {one}), {sq}(a - {one})));",
                "atanh": f"return ({lg}({one} + a) - {lg}({one} - a)) * {literal(0.5, r)};",
            }
            src = f"fn {fn}(a: {T}) -> {T} {{ {bodies[name]} }}"
        if src is None:
            raise RenderError(f"wgsl: op {name!r} is not defined for {dt}")
        self.helpers[fn] = src
        return fn

    def real_fn(self, n, r):
        """Name of a WGSL function computing real ``n`` on type ``r`` (accurate f32 through f64)."""
        if r == "f64":
            return self.need(f"{n}_f64")
        if self.r.f64:
            name = f"{n}_f32w"
            if name not in self.helpers:
                self.need(f"{n}_f64")
                self.helpers[name] = f"fn {name}(x: f32) -> f32 {{ return f32({n}_f64(f64(x))); }}"
            return name
        return self.need(f"{n}_f32")

    def _atan2(self, r):
        """atan2 with the standard's special values (WGSL's builtin leaves zeros and NaN open)."""
        if r == "f32" and self.r.f64:
            return self.need("atan2_via64_f32")
        return self.need("atan2_" + r)

    # ---------------------------------------------------------------- reductions
    def combine(self, op, x, y, dt):
        if dt == "bool" and op in ("all", "and", "any", "or"):
            return f"({x} {'&' if op in ('all', 'and') else '|'} {y})"
        return super().combine(op, x, y, dt)

    # ---------------------------------------------------------------- program
    def coords_from(self, lin, lo, hi, prefix="c"):
        """WGSL lines decomposing u32 ``lin`` into coords lo..hi-1 (row-major)."""
        if hi <= lo:
            return []
        lines = [f"var rem_{lo} = {lin};"]
        for d in reversed(range(lo + 1, hi)):
            s = self.w(self.lay.shape_at + d)
            lines.append(f"let {prefix}{d} = i32(rem_{lo} % {s}); rem_{lo} = rem_{lo} / {s};")
        # the linear index is in range, so the outermost coordinate needs no modulo
        lines.append(f"let {prefix}{lo} = i32(rem_{lo});")
        return lines

    def program(self):
        k = self.k
        body = k.body
        if isinstance(body, ir.Map):
            kind, main = "map", self.map_main(body)
        elif isinstance(body, ir.Reduce):
            if k.hint("serial"):
                kind, main = "serial", self.serial_reduce_main(body)
            elif self.vec_mask:
                if not (body.split and body.outer_ndim == 0 and k.ndim == 1 and body.index_out is None):
                    raise RenderError(f"wgsl: vec4 reduction {k.name!r} must be a 1-D split full reduction")
                kind, main = "reduce", self.reduce_vec4_main(body)
            else:
                kind, main = "reduce", self.reduce_main(body)
        elif isinstance(body, ir.Scan):
            kind, main = "scan", self.scan_main(body)
        else:
            raise RenderError(f"wgsl: unknown kernel body {type(body).__name__}")
        for a in k.args:
            if a.dtype == "f16":
                self.uses_f16 = True
            if not self.r.supports(a.dtype):
                raise RenderError(f"wgsl: dtype {a.dtype} is not supported by this adapter")
        out = []
        if self.uses_f16:
            out.append("enable f16;")
        nvec = max(1, -(-self.lay.words // 4))
        out.append(f"@group(0) @binding(0) var<uniform> rmeta: array<vec4<u32>, {nvec}>;")
        atomics = (body.out, body.finish[1]) if getattr(body, "finish", None) else ()
        for i, a in enumerate(k.args):
            acc = "read_write" if a.writable else "read"
            T = f"vec4<{STORAGE[a.dtype]}>" if self.vec_mask and self.vec_mask[i] else STORAGE[a.dtype]
            if i in atomics:        # a finishing reduction's partials and counter
                T = "atomic<u32>"
            out.append(f"@group(0) @binding({i + 1}) var<storage, {acc}> a{i}: array<{T}>;")
        out.extend(src for src in self.helpers.values())
        out.append(main)
        return Program(k, "\n".join(out) + "\n", kind)

    def _fn(self, lines, extra="", subgroups=False):
        sg = (", @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_size) sgs: u32, "
              "@builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32") if subgroups else ""
        head = (f"@compute @workgroup_size({WG})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, "
                f"@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, "
                f"@builtin(num_workgroups) nwg: vec3<u32>{sg}) {{")
        return "\n".join([extra, head] + ["  " + ln for ln in lines] + ["}"])

    # ---------------------------------------------------------------- vec4 kernels
    # Kernels with the ("vec4", mask) hint: 1-D, every arg with mask[i] unit-stride from an
    # element offset that is a multiple of 4, bound as array<vec4<T>>; the others are read per
    # element (broadcast scalars).  Each invocation takes VEC_UNROLL vec4s per step, WG apart
    # (every load of a workgroup is one contiguous 4 KiB run), their loads issued before any use;
    # the n % 4 tail goes through single components of the vec4 after the last whole one.

    def vec4_prologue(self):
        """Lines binding ``o{i}``: the vec4 offset of every vec4 arg."""
        return [f"let o{i} = {self.w(self.lay.arg_at[i])} >> 2u;"
                for i, m in enumerate(self.vec_mask) if m]

    def vec4_step(self, base, bound, clamp=True):
        """Lines of one step at vec4 ``base`` (< ``bound``): indices ``i{j}`` (clamped in range
        unless the caller knows the whole step is) and the loads ``v{i}_{j}`` of the read-only
        vec4 args."""
        lines = [f"let i{j} = {base};" if j == 0 else f"let i{j} = min({base} + {j * WG}u, {bound} - 1u);"
                 if clamp else f"let i{j} = {base} + {j * WG}u;" for j in range(VEC_UNROLL)]
        for j in range(VEC_UNROLL):
            lines += [f"let v{i}_{j} = a{i}[o{i} + i{j}];" for i, m in enumerate(self.vec_mask)
                      if m and not self.k.args[i].writable]
        return lines

    def lane_values(self, values, suffix, load, coord):
        """Render IR ``values`` for one element: vec4 args read through ``load`` (a format with
        ``{i}``), coordinate 0 = ``coord``.  Returns (lines, WGSL names)."""
        self.lane = (suffix, load)
        sc = _Scope()
        names = [self.expr(v, sc) for v in values]
        self.lane = None
        return [f"let c0_{suffix} = {coord};"] + sc.lines, names

    def map_vec4_main(self, body):
        """1-D Map over vec4 storage (see the vec4 kernels above)."""
        k = self.k
        vals = [st.value for st in body.stores]
        T = [STORAGE[k.args[st.arg].dtype] for st in body.stores]
        dts = [k.args[st.arg].dtype for st in body.stores]
        lines = [f"let n = {self.w(0)};", "let nv = n / 4u;"] + self.vec4_prologue()
        lines.append(f"for (var b: u32 = wid.x * {WG * VEC_UNROLL}u + lid.x; b < nv; "
                     f"b = b + nwg.x * {WG * VEC_UNROLL}u) {{")
        lines += ["  " + ln for ln in self.vec4_step("b", "nv")]
        for j in range(VEC_UNROLL):
            lanes = []
            for lane in range(4):
                ls, names = self.lane_values(vals, f"{j}_{lane}", f"v{{i}}_{j}.{'xyzw'[lane]}",
                                             f"i32(i{j} * 4u + {lane}u)")
                lines += ["  " + ln for ln in ls]
                lanes.append(names)
            for s, st in enumerate(body.stores):
                vec = ", ".join(self.store_value(names[s], dts[s]) for names in lanes)
                store = f"a{st.arg}[o{st.arg} + i{j}] = vec4<{T[s]}>({vec});"
                lines.append(f"  {store}" if j == 0 else f"  if (b + {j * WG}u < nv) {{ {store} }}")
        lines.append("}")
        # the n % 4 tail: one invocation, component by component (no two invocations share a vec4)
        ls, names = self.lane_values(vals, "t", "a{i}[o{i} + nv][t & 3u]", "i32(t)")
        lines += ["if (gid.x == 0u) {", "  for (var t: u32 = nv * 4u; t < n; t = t + 1u) {"]
        lines += ["    " + ln for ln in ls]
        lines += [f"    a{st.arg}[o{st.arg} + nv][t & 3u] = {self.store_value(names[s], dts[s])};"
                  for s, st in enumerate(body.stores)]
        lines += ["  }", "}"]
        return self._fn(lines)

    def tree(self, op, n, dt):
        """WGSL combining names ``n`` (of type ``dt``) pairwise with reduction ``op``."""
        while len(n) > 1:
            n = [self.combine(op, n[i], n[i + 1], dt) if i + 1 < len(n) else n[i]
                 for i in range(0, len(n), 2)]
        return n[0]

    def reduce_vec4_main(self, body):
        """Split full reduction of a 1-D vec4 operand, grid-stride: the vec4s fall in blocks of
        WG * VEC_UNROLL, job ``s`` folds blocks s, s + nsplit, ... into partial ``s`` (unguarded
        loads but for its last block), job 0 also the n % 4 tail.  Each invocation keeps one
        accumulator, folding VEC_UNROLL vec4s per step pairwise (lanes, then vec4s)."""
        dt = body.value.dtype
        T = VALUE[dt]
        ident = self.identity(body.op, dt)
        ex = self.lay.extra_at
        blk = WG * VEC_UNROLL
        lines = [f"let red_n = {self.w(ex['red_n'])};", f"let nsplit = {self.w(ex['nsplit'])};",
                 "let v1 = red_n / 4u;", f"let stride = nsplit * {blk}u;"] + self.vec4_prologue()
        lines += ["for (var job: u32 = wid.x; job < nsplit; job = job + nwg.x) {",
                  f"  var acc: {T} = {ident};",
                  f"  var b: u32 = job * {blk}u + lid.x;",
                  f"  for (; b + {blk - WG}u < v1; b = b + stride) {{"]
        lines += ["    " + ln for ln in self.vec4_step("b", "v1", clamp=False)]
        lines += ["    " + ln for ln in self._fold_vec4s(body, dt, ident, guard=False)]
        lines += ["  }", "  if (b < v1) {"]
        lines += ["    " + ln for ln in self.vec4_step("b", "v1")]
        lines += ["    " + ln for ln in self._fold_vec4s(body, dt, ident, guard=True)]
        lines.append("  }")
        ls, names = self.lane_values([body.value], "t", "a{i}[o{i} + v1][lid.x]", "i32(v1 * 4u + lid.x)")
        lines += ["  if (job == 0u && lid.x < red_n - v1 * 4u) {"] + ["    " + ln for ln in ls]
        lines += [f"    acc = {self.combine(body.op, 'acc', names[0], dt)};", "  }"]
        sg = self.subgroup_op(body.op, dt)
        lines += ["  " + ln for ln in self.wg_fold(body.op, dt, sg, self.reduce_store(body, "r", None, "job"))]
        lines += ["  workgroupBarrier();", "}"]
        shared = f"var<workgroup> sv: array<{self.sv_type(dt)}, {WG}>;"
        if body.finish:
            lines += self.finish_lines(body, dt, sg)
            shared += "\nvar<workgroup> wl: u32;"
        return self._fn(lines, shared, subgroups=bool(sg))

    def wg_fold(self, op, dt, sg, store):
        """Lines folding every invocation's ``acc`` over the workgroup into ``r``, then running
        the ``store`` lines in one invocation (subgroup builtin ``sg``, else shared memory)."""
        T, ident = VALUE[dt], self.identity(op, dt)
        if sg:
            # one value per subgroup into shared memory, the first subgroup folds those
            lines = [f"let sr = {sg}(acc);",
                     f"if (sgi == 0u) {{ sv[sgid] = {self.sv_in(dt, 'sr')}; }}",
                     "workgroupBarrier();",
                     "if (sgid == 0u) {",
                     f"  var t: {T} = {ident};",
                     f"  for (var q: u32 = sgi; q < nsg; q = q + sgs) {{ t = {self.combine(op, 't', self.sv_out(dt, 'sv[q]'), dt)}; }}",
                     f"  let r = {sg}(t);",
                     "  if (sgi == 0u) {"]
            return lines + ["    " + ln for ln in store] + ["  }", "}"]
        lines = [f"sv[lid.x] = {self.sv_in(dt, 'acc')};"] + self.wg_tree(op, dt, False)
        return lines + ["if (lid.x == 0u) {", f"  let r = {self.sv_out(dt, 'sv[0]')};"] + \
            ["  " + ln for ln in store] + ["}"]

    def finish_lines(self, body, dt, sg):
        """A finishing reduction's epilogue: each workgroup counts itself done after its partial
        is stored (device-scope release: storageBarrier); the last one (acquire) folds the
        partials, read atomically, into the output and zeroes the counter for the next launch."""
        if dt not in ("f32", "i32", "u32"):
            raise RenderError(f"wgsl: a finishing reduction needs a 32-bit accumulator; got {dt}")
        out, cnt = body.finish
        T = VALUE[dt]
        pbase, obase = self.wi(self.lay.arg_at[body.out]), self.wi(self.lay.arg_at[out])
        part = f"bitcast<{T}>(atomicLoad(&a{body.out}[u32({pbase} + i32(q))]))"
        store = [f"a{out}[u32({obase})] = {self.store_value('r', self.k.args[out].dtype)};",
                 f"atomicStore(&a{cnt}[0], 0u);"]
        lines = ["storageBarrier();",
                 f"if (lid.x == 0u) {{ wl = select(0u, 1u, atomicAdd(&a{cnt}[0], 1u) == nwg.x - 1u); }}",
                 "if (workgroupUniformLoad(&wl) == 1u) {",
                 "  storageBarrier();",
                 f"  var acc: {T} = {self.identity(body.op, dt)};",
                 f"  for (var q: u32 = lid.x; q < nsplit; q = q + {WG}u) {{ acc = {self.combine(body.op, 'acc', part, dt)}; }}"]
        return lines + ["  " + ln for ln in self.wg_fold(body.op, dt, sg, store)] + ["}"]

    def _fold_vec4s(self, body, dt, ident, guard):
        """Lines folding the loaded ``v{i}_{j}`` into ``acc`` (vec4s past ``v1`` skipped when
        ``guard``)."""
        lines, parts = [], []
        for j in range(VEC_UNROLL):
            lanes = []
            for lane in range(4):
                ls, names = self.lane_values([body.value], f"{j}_{lane}", f"v{{i}}_{j}.{'xyzw'[lane]}",
                                             f"i32(i{j} * 4u + {lane}u)")
                lines += ls
                lanes.append(names[0])
            p = self.tree(body.op, lanes, dt)
            parts.append(p if j == 0 or not guard else f"select({ident}, {p}, b + {j * WG}u < v1)")
        lines.append(f"acc = {self.combine(body.op, 'acc', self.tree(body.op, parts, dt), dt)};")
        return lines

    def subgroup_op(self, op, dt):
        """The WGSL subgroup builtin folding ``op`` over ``dt`` exactly as ``combine`` does, or None
        (floats' max/min propagate NaN, which the builtins need not)."""
        if not self.r.subgroup or dt not in ("f32", "i32", "u32"):
            return None
        if op in ("sum", "prod"):
            return {"sum": "subgroupAdd", "prod": "subgroupMul"}[op]
        if op in ("max", "min") and dt != "f32":
            return {"max": "subgroupMax", "min": "subgroupMin"}[op]
        return None

    # Workgroup memory holds bools as u32 0/1: NVIDIA's Vulkan driver lost updates to a
    # workgroup array<bool> (bool all/any came out wrong now and then on an H200).
    @staticmethod
    def sv_type(dt):
        return "u32" if dt == "bool" else VALUE[dt]

    @staticmethod
    def sv_in(dt, e):
        return f"select(0u, 1u, {e})" if dt == "bool" else e

    @staticmethod
    def sv_out(dt, ref):
        return f"({ref} != 0u)" if dt == "bool" else ref

    def wg_tree(self, op, dt, is_arg):
        """Lines folding ``sv[0..WG)`` (and ``si`` for arg-reductions) into ``sv[0]`` (``si[0]``)."""
        lines = ["workgroupBarrier();",
                 f"for (var wd: u32 = {WG // 2}u; wd > 0u; wd = wd >> 1u) {{",
                 "  if (lid.x < wd) {"]
        if is_arg:
            better = self.arg_better(op, self.sv_out(dt, "sv[lid.x + wd]"), "si[lid.x + wd]",
                                     self.sv_out(dt, "sv[lid.x]"), "si[lid.x]", dt)
            lines.append(f"    if ({better}) {{ sv[lid.x] = sv[lid.x + wd]; si[lid.x] = si[lid.x + wd]; }}")
        else:
            c = self.combine(op, self.sv_out(dt, "sv[lid.x]"), self.sv_out(dt, "sv[lid.x + wd]"), dt)
            lines.append(f"    sv[lid.x] = {self.sv_in(dt, c)};")
        lines += ["  }", "  workgroupBarrier();", "}"]
        return lines

    def map_main(self, body):
        if self.vec_mask:
            return self.map_vec4_main(body)
        sc = _Scope()
        for st in body.stores:
            self.emit_store(st, sc)
        lines = [f"let n = {self.w(0)};", f"for (var lin: u32 = gid.x; lin < n; lin = lin + nwg.x * {WG}u) {{"]
        lines += ["  " + ln for ln in self.coords_from("lin", 0, self.k.ndim)]
        lines += ["  " + ln for ln in sc.lines]
        lines.append("}")
        return self._fn(lines)

    def _acc_type(self, op, dt):
        return VALUE[dt]

    def reduce_main(self, body):
        k = self.k
        dt = body.value.dtype
        T = VALUE[dt]
        is_arg = body.op in ("argmax", "argmin")
        sc = _Scope()
        v = self.expr(body.value, sc)
        ident = self.identity(body.op, dt)
        ex = self.lay.extra_at
        lines = [f"let nout = {self.w(0)};", f"let red_n = {self.w(ex['red_n'])};",
                 f"let nsplit = {self.w(ex['nsplit'])};", f"let chunk = {self.w(ex['chunk'])};",
                 "let total = nout * nsplit;",
                 "for (var job: u32 = wid.x; job < total; job = job + nwg.x) {",
                 "  let o = job / nsplit; let s = job % nsplit;",
                 "  let r0 = s * chunk; let r1 = min(r0 + chunk, red_n);",
                 f"  var acc: {T} = {ident};"]
        if is_arg:
            lines.append("  var acci: i32 = 2147483647;")
        lines.append(f"  for (var r: u32 = r0 + lid.x; r < r1; r = r + {WG}u) {{")
        lines += self.accumulate(body, k, sc, v, dt, is_arg)
        lines.append("  }")
        lines.append(f"  sv[lid.x] = {self.sv_in(dt, 'acc')};")
        if is_arg:
            lines.append("  si[lid.x] = acci;")
        lines += ["  " + ln for ln in self.wg_tree(body.op, dt, is_arg)]
        lines.append("  if (lid.x == 0u) {")
        lines += ["    " + ln for ln in self.coords_from("o", 0, body.outer_ndim)]
        lines += ["    " + ln for ln in self.reduce_store(body, self.sv_out(dt, "sv[0]"), "si[0]", "job")]
        lines.append("  }")
        lines.append("  workgroupBarrier();")
        lines.append("}")
        shared = f"var<workgroup> sv: array<{self.sv_type(dt)}, {WG}>;"
        if is_arg:
            shared += f"\nvar<workgroup> si: array<i32, {WG}>;"
        return self._fn(lines, shared)

    def reduce_store(self, body, val, idx, job):
        out = []
        oa = self.k.args[body.out]
        odt = oa.dtype
        if body.split:
            oi = f"u32({self.wi(self.lay.arg_at[body.out])} + i32({job}))"
        else:
            oi = self.index(body.out, ir.Strided(tuple(ir.Coord(d) for d in range(body.outer_ndim))), _Scope())
        vexpr = val if odt == body.value.dtype else self.cast(val, body.value.dtype, odt)
        if body.finish:         # partials are read back atomically by the last workgroup
            out.append(f"atomicStore(&a{body.out}[{oi}], bitcast<u32>({vexpr}));")
        else:
            out.append(f"a{body.out}[{oi}] = {self.store_value(vexpr, odt)};")
        if body.index_out is not None:
            ia = self.k.args[body.index_out]
            if body.split:
                ii = f"u32({self.wi(self.lay.arg_at[body.index_out])} + i32({job}))"
            else:
                ii = self.index(body.index_out, ir.Strided(tuple(ir.Coord(d) for d in range(body.outer_ndim))), _Scope())
            out.append(f"a{body.index_out}[{ii}] = {VALUE[ia.dtype]}({idx});")
        return out

    def serial_reduce_main(self, body):
        k = self.k
        dt = body.value.dtype
        T = VALUE[dt]
        is_arg = body.op in ("argmax", "argmin")
        sc = _Scope()
        v = self.expr(body.value, sc)
        ex = self.lay.extra_at
        lines = [f"let nout = {self.w(0)};", f"let red_n = {self.w(ex['red_n'])};",
                 f"for (var o: u32 = gid.x; o < nout; o = o + nwg.x * {WG}u) {{",
                 f"  var acc: {T} = {self.identity(body.op, dt)};"]
        if is_arg:
            lines.append("  var acci: i32 = 2147483647;")
        lines.append("  for (var r: u32 = 0u; r < red_n; r = r + 1u) {")
        lines += self.accumulate(body, k, sc, v, dt, is_arg)
        lines.append("  }")
        lines += ["  " + ln for ln in self.coords_from("o", 0, body.outer_ndim)]
        lines += ["  " + ln for ln in self.reduce_store(body, "acc", "acci", "o")]
        lines.append("}")
        return self._fn(lines)

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
        lines = [f"let n = {self.w(0)};", f"let sn = {self.w(ex['scan_n'])};",
                 "let nrows = select(0u, n / sn, sn > 0u);",
                 "for (var row: u32 = wid.x; row < nrows; row = row + nwg.x) {",
                 f"  var carry: {T} = {ident};",
                 f"  for (var base: u32 = 0u; base < sn; base = base + {WG}u) {{",
                 "    let i = base + lid.x;",
                 f"    var v: {T} = {ident};",
                 "    if (i < sn) {"]
        inner = self.coords_from("(row * sn + i)", 0, k.ndim) + sc.lines + [f"v = {v};"]
        lines += ["      " + ln for ln in inner]
        lines += ["    }",
                  f"    sv[lid.x] = {self.sv_in(dt, 'v')};",
                  "    workgroupBarrier();",
                  f"    for (var wd: u32 = 1u; wd < {WG}u; wd = wd << 1u) {{",
                  f"      var t = {self.sv_out(dt, 'sv[lid.x]')};",
                  f"      if (lid.x >= wd) {{ t = {comb(self.sv_out(dt, 'sv[lid.x - wd]'), 't')}; }}",
                  "      workgroupBarrier();",
                  f"      sv[lid.x] = {self.sv_in(dt, 't')};",
                  "      workgroupBarrier();",
                  "    }"]
        if body.exclusive:
            lines.append(f"    var res = carry; if (lid.x > 0u) {{ res = {comb('carry', self.sv_out(dt, 'sv[lid.x - 1u]'))}; }}")
        else:
            lines.append(f"    let res = {comb('carry', self.sv_out(dt, 'sv[lid.x]'))};")
        lines.append("    if (i < sn) {")
        lines += ["      " + ln for ln in self.coords_from("(row * sn + i)", 0, k.ndim)]
        oi = self.index(body.out, ir.Strided(), _Scope())
        val = "res" if oa.dtype == dt else self.cast("res", dt, oa.dtype)
        lines.append(f"      a{body.out}[{oi}] = {self.store_value(val, oa.dtype)};")
        lines.append("    }")
        lines.append(f"    carry = {comb('carry', self.sv_out(dt, f'sv[{WG - 1}u]'))};")
        lines.append("    workgroupBarrier();")
        lines.append("  }")
        lines.append("}")
        return self._fn(lines, f"var<workgroup> sv: array<{self.sv_type(dt)}, {WG}>;")
