"""WGSL text of the IR scalar ops: integer (NumPy-exact division, shifts, wrap), float
(through the f64 library where the adapter has f64) and complex arithmetic and functions.
Mixed into :class:`ruda.runtime.wgsl._Render`."""
import math

from ruda.runtime import ir
from ruda.runtime.render import RenderError
from ruda.runtime.wgsl_types import (_F32_BUILTIN, _FLOAT_SUFFIX, _LIB_F64, _SMALL, _UNSIGNED,
                                     VALUE, literal)


class OpsMixin:
    """The ``op`` hook of the expression walk and the helper functions it needs."""

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
        if dt == "f32" and (name == "div" or self.r.f64 and name in ("reciprocal", "sqrt")):
            # correctly rounded through f64 (53 >= 2 * 24 + 2 bits: the second rounding is
            # harmless); NVIDIA's Vulkan driver divides f32 approximately (1 ulp off, measured);
            # without f64, division by a divisor past 2^126 is scaled (fdiv_f32)
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
            if name in ("isnan", "isinf", "isfinite", "signbit"):     # bool: no f16 wrap
                return self.fop(name, [f"f32({x})"], "f32")
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
            # pow: f64's plain exp(y log x) is ample for f32 (the double-double pow costs more)
            fn = self.need("fpow_f64" if name == "pow" else "logaddexp_f64")
            return f"f32({fn}(f64({x}), f64({y})))"
        if name == "pow" and S == "f64":  # double-double (wgsl_math_pow), exact where representable
            # its opaque zero: the element count is below 2**31 (no binding holds more)
            return f"{self.need('fpow_dd_f64')}({x}, {y}, u64({self.w(0)} >> 31u))"
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
            # mul(a, a) (2 x y overflows where x y + y x is finite); Mesa may still factor it into
            # x (y + y), so the backend's elementwise square multiplies two loads
            src = f"fn {fn}(a: {T}) -> {T} {{ return {T}(a.x * a.x - a.y * a.y, a.x * a.y + a.y * a.x); }}"
        elif name == "div":             # Smith's, each division as the real one's (fop)
            dv = lambda n, d: self.fop("div", [n, d], r)  # noqa: E731
            src = f"""fn {fn}(a: {T}, b: {T}) -> {T} {{
  if (abs(b.x) >= abs(b.y)) {{
    if (b.x == {z} && b.y == {z}) {{ return {T}({dv('a.x', 'abs(b.x)')}, {dv('a.y', 'abs(b.x)')}); }}
    let rt = {dv('b.y', 'b.x')}; let d = b.x + b.y * rt;
    return {T}({dv('(a.x + a.y * rt)', 'd')}, {dv('(a.y - a.x * rt)', 'd')});
  }}
  let rt = {dv('b.x', 'b.y')}; let d = b.y + b.x * rt;
  return {T}({dv('(a.x * rt + a.y)', 'd')}, {dv('(a.y * rt - a.x)', 'd')});
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
  return {self.cexps(r)}(a.x, {f('cos')}(a.y), {f('sin')}(a.y), {o});
}}"""
        elif name == "log":             # |a| near 1: log1p((u - 1)(u + 1) + v^2) / 2 keeps the digits
            h, th = self.need("hypot_" + r), self._atan2(r)
            tiny, up, lnup, huge = self._cscale(r)
            src = f"""fn {fn}(a: {T}) -> {T} {{
  let u = max(abs(a.x), abs(a.y)); let v = min(abs(a.x), abs(a.y));
  var re: {VALUE[r]};
  // |a| of subnormal parts would round on the subnormal grid, above HUGE it overflows: scale
  if (u < {tiny}) {{ re = {f('log')}({h}(a.x * {up}, a.y * {up})) - {lnup}; }}
  else if (u > {huge}) {{ re = {f('log')}({h}(a.x * {literal(0.25, r)}, a.y * {literal(0.25, r)})) + {literal(math.log(4), r)}; }}
  else {{
    let m = {h}(a.x, a.y);
    re = {f('log')}(m);
    if (m > {literal(0.7, r)} && m < {literal(1.4, r)}) {{ re = {literal(0.5, r)} * {f('log1p')}((u - {o}) * (u + {o}) + v * v); }}
  }}
  return {T}(re, {th}(a.y, a.x));
}}"""
        elif name == "sqrt":            # C99 csqrt's special values (the standard's list)
            h = self.need("hypot_" + r)
            isinf, isnan, nan, inf, cs = (self.need(f"{n}_{r}") for n in ("isinf", "isnan", "nan", "inf", "copysign"))
            tiny, up, _, huge = self._cscale(r)
            down = literal(2.0 ** -(self.CSCALE[r][1] // 2), r)     # sqrt(1 / UP)
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
  // scaled by an even power of 2 where m + |x| would overflow or m be subnormal (Kahan, C99)
  let u = max(abs(a.x), abs(a.y));
  var b = a; var k = {o};
  if (u < {tiny}) {{ b = a * {up}; k = {down}; }}
  else if (u > {huge}) {{ b = a * {literal(0.25, r)}; k = {literal(2, r)}; }}
  let m = {h}(b.x, b.y);
  if (b.x >= {z}) {{ let t = sqrt({literal(0.5, r)} * (m + b.x)); return {T}(t, b.y / ({literal(2, r)} * t)) * k; }}
  let t = sqrt({literal(0.5, r)} * (m - b.x));
  return {T}(abs(b.y) / ({literal(2, r)} * t), {cs}(t, b.y)) * k;
}}"""
        elif name == "sign":
            h = self.need("hypot_" + r)
            tiny, up, _, _ = self._cscale(r)
            _, k, hi = self.CSCALE[r]
            # huge parts scaled down by 2**-UP from 2**(HI / 2): |b| stays far below 2**HI, so
            # 1 / |b| stays normal (NVIDIA's f32 x / m is x * (1 / m), and a subnormal 1 / m
            # flushes: sign(max + max j) was 0)
            mid, down = literal(2.0 ** (hi // 2), r), literal(2.0 ** -k, r)
            src = f"""fn {fn}(a: {T}) -> {T} {{
  if (a.x == {z} && a.y == {z}) {{ return {T}({z}, {z}); }}
  let u = max(abs(a.x), abs(a.y));
  var b = a;     // scaled: |a| of subnormal parts rounds on the subnormal grid, of huge ones overflows
  if (u < {tiny}) {{ b = a * {up}; }} else if (u > {mid}) {{ b = a * {down}; }}
  let m = {h}(b.x, b.y);
  return {T}(b.x / m, b.y / m);
}}"""
        elif name in ("sin", "cos", "tan"):
            h = self.complex_helper({"sin": "sinh", "cos": "cosh", "tan": "tanh"}[name], dt)
            turn = f"let w = {h}({T}(-a.y, a.x)); return {T}(w.y, -w.x);"     # -i f(iz)
            if name == "cos":
                body = f"return {h}({T}(-a.y, a.x));"
            elif name == "sin":
                body = turn
            else:   # an infinite Im: +-0 with x's sign + +-1j, stated (NVIDIA's Vulkan driver took
                # -i tanh(iz) to +-0 -+ 1j in float64)
                isinf, cs = self.need("isinf_" + r), self.need("copysign_" + r)
                body = f"if ({isinf}(a.y)) {{ return {T}({cs}({z}, a.x), {cs}({o}, a.y)); }}\n  {turn}"
            src = f"fn {fn}(a: {T}) -> {T} {{ {body} }}"
        elif name in ("expm1", "log1p", "log2", "log10", "pow", "sinh", "cosh", "tanh"):
            e, lg, mul, div = (self.complex_helper(n, dt) for n in ("exp", "log", "mul", "div"))
            fin, isinf, isnan, nan, inf = (self.need(f"{n}_{r}") for n in ("isfin", "isinf", "isnan", "nan", "inf"))
            xbig = literal(self.CEXP[r][0], r)      # e^x is finite below it
            bodies = {
                # accurate near 0: expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y; log|1 + a|
                # as log1p(x (2 + x) + y^2) / 2; special values from exp / log
                "expm1": f"""if (!{fin}(a.x) || !{fin}(a.y) || a.x > {xbig}) {{ return {e}(a) - {T}({o}, {z}); }}
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
  if (abs(a.x) > {xbig}) {{ let w = {self.cexps(r)}(abs(a.x), {f('cos')}(a.y), {f('sin')}(a.y), {literal(0.5, r)}); return {T}(select(w.x, -w.x, a.x < {z}), w.y); }}
  return {T}({f('sinh')}(a.x) * {f('cos')}(a.y), {f('cosh')}(a.x) * {f('sin')}(a.y));""",
                "cosh": f"""if (a.y == {z}) {{ return {T}({f('cosh')}(a.x), a.y * {self.need('copysign_' + r)}({o}, a.x)); }}
  if (a.x == {z} && !{fin}(a.y)) {{ return {T}({nan}(), {z}); }}
  if ({isinf}(a.x) && !{fin}(a.y)) {{ return {T}({inf}(), {nan}()); }}
  if (abs(a.x) > {xbig}) {{ let w = {self.cexps(r)}(abs(a.x), {f('cos')}(a.y), {f('sin')}(a.y), {literal(0.5, r)}); return {T}(w.x, select(w.y, -w.y, a.x < {z})); }}
  return {T}({f('cosh')}(a.x) * {f('cos')}(a.y), {f('sinh')}(a.x) * {f('sin')}(a.y));""",
                "tanh": f"""if (a.y == {z}) {{ return {T}({f('tanh')}(a.x), a.y); }}
  if ({isnan}(a.y) && a.x == {z}) {{ return {T}(a.x, a.y); }}
  if ({isinf}(a.x)) {{ return {T}({self.need('copysign_' + r)}({o}, a.x), {self.need('copysign_' + r)}({z}, select(a.y, {o}, !{fin}(a.y)))); }}
  if (!{fin}(a.y)) {{ if (a.x == {z}) {{ return {T}(a.x, {nan}()); }} return {T}({nan}(), {nan}()); }}
  if (abs(a.x) > {literal(20, r)}) {{     // Im = 4 sin y cos y e^-2|x| (msun's ctanh), small but not 0
    let em = {f('exp')}(-abs(a.x));
    return {T}({self.need('copysign_' + r)}({o}, a.x), {literal(4, r)} * {f('sin')}(a.y) * {f('cos')}(a.y) * em * em);
  }}
  let t = {f('tan')}(a.y); let b = {o} + t * t; let s = {f('sinh')}(a.x);   // Kahan's: no cancellation
  let d = {o} + b * s * s;                                         // near the poles (msun's ctanh)
  return {T}(b * sqrt({o} + s * s) * s / d, t / d);""",

                # NumPy's npy_cpow: 0 ** b is 0 for Re b > 0, else NaN; integer powers below 100 by
                # repeated multiplication (exact where NumPy's are: (1 + 2j) ** 2 is -3 + 4j)
                "pow": f"""if (b.x == {z} && b.y == {z}) {{ return {T}({o}, {z}); }}
  if (a.x == {z} && a.y == {z}) {{ if (b.x > {z}) {{ return {T}({z}, {z}); }} return {T}({nan}(), {nan}()); }}
  if (b.y == {z} && abs(b.x) < {literal(100, r)} && floor(b.x) == b.x) {{ return {self.complex_helper('powi', dt)}(a, i32(b.x)); }}
  return {e}({mul}(b, {lg}(a)));""",
            }
            args = f"a: {T}, b: {T}" if name == "pow" else f"a: {T}"
            src = f"fn {fn}({args}) -> {T} {{ {bodies[name]} }}"
        elif name == "powi":            # npy_cpow's order of products, and its 1 / a ** -n
            mul = self.complex_helper("mul", dt)
            src = f"""fn {fn}(a: {T}, n: i32) -> {T} {{
  if (n == 1) {{ return a; }}
  if (n == 2) {{ return {mul}(a, a); }}
  if (n == 3) {{ return {mul}(a, {mul}(a, a)); }}
  var m = abs(n); var acc = {T}({o}, {z}); var p = a;
  loop {{ if ((m & 1) != 0) {{ acc = {mul}(acc, p); }} m = m >> 1u; if (m == 0) {{ break; }} p = {mul}(p, p); }}
  if (n > 0) {{ return acc; }}
  if (abs(acc.x) >= abs(acc.y)) {{
    if (acc.x == {z} && acc.y == {z}) {{ return {T}({o} / abs(acc.x), {z} / abs(acc.y)); }}
    let rat = acc.y / acc.x; let scl = {o} / (acc.x + acc.y * rat);
    return {T}(({o} + {z} * rat) * scl, ({z} - rat) * scl);
  }}
  let rat = acc.x / acc.y; let scl = {o} / (acc.y + acc.x * rat);
  return {T}((rat + {z}) * scl, ({z} * rat - {o}) * scl);
}}"""
        elif name in ("asin", "atan", "acosh"):
            # through the C99 special-value tables of asinh / atanh / acos
            base = {"asin": "asinh", "atan": "atanh", "acosh": "acos"}[name]
            h = self.complex_helper(base, dt)
            if name == "acosh":    # acosh z = i acos z for Im z >= 0; conj-symmetric
                sb = self.need("sbit_" + r)
                body = (f"let neg = {sb}(a.y); let c = select(a, {T}(a.x, -a.y), neg); let w = {h}(c); "
                        f"let v = {T}(abs(w.y), w.x); return select(v, {T}(v.x, -v.y), neg);")
            else:                  # asin z = -i asinh(iz), atan z = -i atanh(iz), written as swaps of
                # the parts (x + iy -> y + ix): negating a zero part flipped the branch (asin(10 + 0j))
                body = f"let w = {h}({T}(a.y, a.x)); return {T}(w.y, w.x);"
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
  else {{ w = {core}({T}(X, Y)); }}
  return {T}({cs}(w.x, a.x), {cs}(w.y, a.y));"""
            elif name == "atanh":    # odd, conj-symmetric
                body = f"""let X = abs(a.x); let Y = abs(a.y);
  var w: {T};
  if (X == {o} && Y == {z}) {{ w = {T}({inf}(), {z}); }}
  else if ({isnan}(X)) {{ if ({isinf}(Y)) {{ w = {T}({z}, {pi(0.5)}); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isnan}(Y)) {{ if (X == {z} || {isinf}(X)) {{ w = {T}({z}, {nan}()); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isinf}(X) || {isinf}(Y)) {{ w = {T}({z}, {pi(0.5)}); }}
  else {{ w = {core}({T}(X, Y)); }}
  return {T}({cs}(w.x, a.x), {cs}(w.y, a.y));"""
            else:                    # acos: conj-symmetric, table on (x, |y|)
                body = f"""let Y = abs(a.y); let x = a.x;
  var w: {T};
  if ({isnan}(x)) {{ if ({isinf}(Y)) {{ w = {T}({nan}(), -{inf}()); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isnan}(Y)) {{ if (x == {z}) {{ w = {T}({pi(0.5)}, {nan}()); }} else if ({isinf}(x)) {{ w = {T}({nan}(), {inf}()); }} else {{ w = {T}({nan}(), {nan}()); }} }}
  else if ({isinf}(x)) {{ if (x < {z}) {{ w = {T}(select({pi(1)}, {pi(0.75)}, {isinf}(Y)), -{inf}()); }} else {{ w = {T}(select({z}, {pi(0.25)}, {isinf}(Y)), -{inf}()); }} }}
  else if ({isinf}(Y)) {{ w = {T}({pi(0.5)}, -{inf}()); }}
  else {{ w = {core}({T}(x, Y)); }}
  if ({sb}(a.y)) {{ return {T}(w.x, -w.y); }}
  return w;"""
            src = f"fn {fn}(a: {T}) -> {T} {{\n  {body}\n}}"
        elif name in ("asinh_core", "atanh_core", "acos_core", "asinh_hard", "hgap", "recip_re"):
            # Finite z: asinh, atanh of (|x|, |y|) and acos of (x, |y|), their tables set the signs.
            # FreeBSD's catrig (Hull, Fairgrieve and Tang; NumPy's npymath): each part within a few
            # ulp at any magnitude, where log(z + sqrt(z^2 + 1)) and kin cancel or overflow
            R = VALUE[r]
            eps = 2.0 ** (-23 if r == "f32" else -52)
            e = lambda v: literal(v, r)  # noqa: E731
            big, ln2, h, th = e(1 / eps), e(math.log(2)), e(0.5), self._atan2(r)
            sqmin = 2.0 ** (-63 if r == "f32" else -511)          # sqrt of the smallest normal
            if name == "hgap":       # (hypot(a, b) - b) / 2 without cancellation, c = hypot(a, b)
                src = f"""fn {fn}(a: {R}, b: {R}, c: {R}) -> {R} {{
  if (b < {z}) {{ return (c - b) * {h}; }}
  if (b == {z}) {{ return a * {h}; }}
  return a * a / (c + b) * {h};
}}"""
            elif name == "asinh_hard":
                g, hy = self.complex_helper("hgap", dt), self.need("hypot_" + r)
                src = f"""fn {fn}(x: {R}, y: {R}) -> vec3<{R}> {{
  // x, y >= 0 below 1 / eps.  A = (|z + i| + |z - i|) / 2, B = y / A: Re asinh z =
  // log(A + sqrt(A^2 - 1)), Im = asin B = atan2(y, sqrt(A^2 - y^2)), with A - 1 and A - y
  // summed from (hypot(a, b) - b) / 2 terms.  Returns (Re, p, q), Im = atan2(p, q) (p, q
  // scaled alike where y / A would underflow)
  let rp = {hy}(x, y + {o}); let rm = {hy}(x, y - {o});
  let A = max((rp + rm) * {h}, {o});
  var re: {R};
  if (A >= {e(10)}) {{ re = {f('log')}(A + sqrt(A * A - {o})); }}
  else if (y == {o} && x < {e(eps * eps / 128)}) {{ re = sqrt(x); }}
  else if (x >= {e(eps)} * abs(y - {o})) {{ let am1 = {g}(x, {o} + y, rp) + {g}(x, {o} - y, rm); re = {f('log1p')}(am1 + sqrt(am1 * (A + {o}))); }}
  else if (y < {o}) {{ re = x / sqrt(({o} - y) * ({o} + y)); }}
  else {{ re = {f('log1p')}((y - {o}) + sqrt((y - {o}) * (y + {o}))); }}
  if (y < {e(4 * sqmin)}) {{ return vec3<{R}>(re, y * {e(2 / eps)}, A * {e(2 / eps)}); }}
  let B = y / A;
  if (B <= {e(0.6417)}) {{ return vec3<{R}>(re, B, sqrt(({o} - B) * ({o} + B))); }}
  if (y == {o} && x < {e(eps / 128)}) {{ return vec3<{R}>(re, y, sqrt(x) * sqrt((A + y) * {h})); }}
  if (x >= {e(eps)} * abs(y - {o})) {{ return vec3<{R}>(re, y, sqrt(({g}(x, y + {o}, rp) + {g}(x, y - {o}, rm)) * (A + y))); }}
  if (y > {o}) {{ return vec3<{R}>(re, y * {e(4 / eps / eps)}, x * {e(4 / eps / eps)} * y / sqrt((y + {o}) * (y - {o}))); }}
  return vec3<{R}>(re, y, sqrt(({o} - y) * ({o} + y)));
}}"""
            elif name == "recip_re":     # x / (x^2 + y^2) for x, y >= 0, one past 1 / eps: no
                cut, top = (13, 178) if r == "f32" else (27, 1508)  # spurious over/underflow
                ex = (lambda v: f"i32(bitcast<u32>({v}) >> 23u)") if r == "f32" else \
                     (lambda v: f"i32(u32(bitcast<u64>({v}) >> 52u))")
                scale = "bitcast<f32>(u32(255 - ex) << 23u)" if r == "f32" else \
                        "bitcast<f64>(u64(u32(2047 - ex)) << 52u)"     # 2^(1 - exponent of x)
                src = f"""fn {fn}(x: {R}, y: {R}) -> {R} {{
  let ex = {ex('x')}; let ey = {ex('y')};
  if (ex - ey >= {cut}) {{ return {o} / x; }}
  if (ey - ex >= {cut}) {{ return x / y / y; }}
  if (ex <= {top}) {{ return x / (x * x + y * y); }}
  let s = {scale}; let xs = x * s; let ys = y * s;
  return xs / (xs * xs + ys * ys) * s;
}}"""
            elif name == "atanh_core":   # Re = log1p(4x / ((x - 1)^2 + y^2)) / 4, Im = arg(1 - z^2) / 2
                rr = self.complex_helper("recip_re", dt)
                src = f"""fn {fn}(a: {T}) -> {T} {{
  let x = a.x; let y = a.y;
  if (y == {z} && x <= {o}) {{ return {T}({f('atanh')}(x), y); }}
  if (x == {z}) {{ return {T}(x, {f('atan')}(y)); }}
  if (max(x, y) > {big}) {{ return {T}({rr}(x, y), {e(math.pi / 2)}); }}
  if (max(x, y) < {e(math.sqrt(3 * eps) / 2)}) {{ return a; }}
  var re: {R};
  if (x == {o} && y < {e(eps)}) {{ re = ({ln2} - {f('log')}(y)) * {h}; }}
  else {{ let d = x - {o}; re = {f('log1p')}({e(4)} * x / select(d * d + y * y, d * d, y < {e(sqmin)})) * {e(0.25)}; }}
  let q = ({o} - x) * ({o} + x);
  var im = {th}({e(2)} * y, q - y * y);
  if (x == {o}) {{ im = {th}({e(2)}, -y); }} else if (y < {e(eps)}) {{ im = {th}({e(2)} * y, q); }}
  return {T}(re, im * {h});
}}"""
            else:
                hard, lg = self.complex_helper("asinh_hard", dt), self.complex_helper("log", dt)
                tiny = e(math.sqrt(6 * eps) / 4)
                if name == "asinh_core":     # log 2z past 1 / eps, z itself below sqrt(6 eps) / 4
                    body = f"""if (max(a.x, a.y) > {big}) {{ return {lg}(a) + {T}({ln2}, {z}); }}
  if (max(a.x, a.y) < {tiny}) {{ return a; }}
  let w = {hard}(a.x, a.y);
  return {T}(w.x, {th}(w.y, w.z));"""
                else:    # acos (Im z >= 0): -i log 2z past 1 / eps, pi/2 - z below sqrt(6 eps) / 4, else
                    # Re acos z = acos(+-B) (x's sign), Im = -Re asinh(y + i|x|), B = |x| / A of that asinh
                    sb = self.need("sbit_" + r)
                    lo = e(-4.371139006309477e-08 if r == "f32" else 6.123233995736766e-17)  # pi/2 - its rounding
                    body = f"""let X = abs(a.x);
  if (max(X, a.y) > {big}) {{ let w = {lg}(a); return {T}(w.y, -(w.x + {ln2})); }}
  if (max(X, a.y) < {tiny}) {{ return {T}({e(math.pi / 2)} - (a.x - {lo}), -a.y); }}
  let w = {hard}(a.y, X);
  return {T}({th}(w.z, select(w.y, -w.y, {sb}(a.x))), -w.x);"""
                src = f"fn {fn}(a: {T}) -> {T} {{\n  {body}\n}}"
        if src is None:
            raise RenderError(f"wgsl: op {name!r} is not defined for {dt}")
        self.helpers[fn] = src
        return fn

    # Scaling of complex arguments (exact powers of 2): parts below 2^-100 (f32) / 2^-1000 (f64)
    # are scaled up by 2^64 / 2^128 (even: sqrt halves it), above 2^126 / 2^1022 down by 1/4
    CSCALE = {"f32": (-100, 64, 126), "f64": (-1000, 128, 1022)}
    # e^x overflows past LO; e^x = e^(x - KLN2) 2^K for LO < x < HI, KLN2 ~ K ln 2 (msun's
    # __ldexp_cexp: x - KLN2 is exact there, and e^KLN2 is 2^K within 0.4 ulp)
    CEXP = {"f32": (88.0, 250.0, 235, 162.88958740234375), "f64": (709.0, 1950.0, 1799, 1246.9717778273416)}

    def _cscale(self, r):
        """(TINY, UP, UP's log, HUGE) literals of :data:`CSCALE` for real type ``r``."""
        lo, up, hi = self.CSCALE[r]
        return literal(2.0 ** lo, r), literal(2.0 ** up, r), literal(up * math.log(2), r), literal(2.0 ** hi, r)

    def cexps(self, r):
        """``fn(x, c, s, h) -> (e^x h c, e^x h s)``, h 1 or 1/2, finite where the products are
        though e^x overflows: e^(x - KLN2)'s mantissa (times 2^(emax - 1)) times c and s, then
        the power of 2 in two exact steps."""
        fn = f"cexps_{r}"
        if fn in self.helpers:
            return fn
        lo, hi, K, kln2 = self.CEXP[r]
        R = VALUE[r]
        U, mbits, bias = ("u32", 23, 127) if r == "f32" else ("u64", 52, 1023)
        o, sh = literal(1, r), f"{mbits}u"
        mant = literal((1 << mbits) - 1, U)
        top = literal((2 * bias - 1) << mbits, U)          # exponent field of 2^(bias - 1)
        pw = (lambda n: f"bitcast<{R}>(u32({n} + {bias}) << {sh})") if r == "f32" else \
             (lambda n: f"bitcast<{R}>(u64(u32({n} + {bias})) << {sh})")
        e, isnan = self.real_fn("exp", r), self.need("isnan_" + r)
        self.helpers[fn] = f"""fn {fn}(x: {R}, c: {R}, s: {R}, h: {R}) -> vec2<{R}> {{
  if ({isnan}(x) || !(x > {literal(lo, r)} && x < {literal(hi, r)})) {{ let w = {e}(x) * h; return vec2<{R}>(w * c, w * s); }}
  let er = {e}(x - {literal(kln2, r)});
  let b = bitcast<{U}>(er);
  let m = bitcast<{R}>((b & {mant}) | {top});
  let n = i32(u32(b >> {sh})) - {2 * bias - 1} + {K} + select(0, -1, h < {o});
  let n1 = n / 2;
  let p1 = {pw('n1')}; let p2 = {pw('(n - n1)')};
  return vec2<{R}>(((c * m) * p1) * p2, ((s * m) * p1) * p2);
}}"""
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
