"""WGSL entry points of each IR body: the element-wise map (scalar and vec4), the reductions
(per-output workgroup, split, serial, vec4, with subgroup folds where the adapter has them) and
the per-row scan.  Mixed into :class:`ruda.runtime.wgsl._Render`."""
from ruda.runtime import ir
from ruda.runtime.packing import layout as _layout
from ruda.runtime.render import RenderError, Scope as _Scope
from ruda.runtime.wgsl_types import MAX_GROUPS, STORAGE, VALUE, VEC_UNROLL, WG


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


class MainsMixin:
    """``program()``: the kernel's bindings and its ``main`` for its body's kind."""

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
