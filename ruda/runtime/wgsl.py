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
from ruda.runtime import ir
from ruda.runtime.render import ExprRender, RenderError
from ruda.runtime.wgsl_main import MainsMixin, Program  # noqa: F401  (re-exported)
from ruda.runtime.wgsl_math import _GENERIC, HELPERS
from ruda.runtime.wgsl_ops import OpsMixin
from ruda.runtime.wgsl_types import (  # noqa: F401  (re-exported: importers take them from here)
    _F32_BUILTIN, _SMALL, ITEMSIZE, MAX_GROUPS, STORAGE, VALUE, VEC_UNROLL, WG, literal)


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
class _Render(OpsMixin, MainsMixin, ExprRender):
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
                body = f"return {f'f32({e})' if wide else e};"
                if base == "fdiv" and s == "f32" and not wide:
                    # WGSL's f32 division is exact to 2.5 ulp only for divisors below 2^126;
                    # NVIDIA's returns 0 past them (1e30 / 3e38): both operands scaled by 1/4
                    body = "let k = select(1.0f, 0.25f, abs(b) > 8.507059e37f); return (a * k) / (b * k);"
                deps, src = (), f"fn {name}({sig}) -> {s} {{ {body} }}"
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
