"""The part of kernel rendering the WGSL and CUDA C renderers share: the walk of a kernel's
expression DAG into memoized temporaries, folds and iterations (loops carrying an accumulator)
and strided index sums.

A renderer subclasses ``ExprRender`` and gives its syntax: ``literal``, ``size``, ``param``,
``load``, ``op``, ``cast``, ``bitcast``, ``select``, ``declare``, ``loop``, ``index_sum``, and for
reductions ``infinity``, ``isnan_fn``, ``bool_as_int`` and ``R_INDEX``.
"""
from ruda.runtime import ir
from ruda.runtime.packing import layout


class RenderError(ValueError):
    """A kernel the renderer cannot express; the message names the renderer."""


class Scope:
    """Lines of one block and the temporaries visible in it (inherited from the parent)."""

    def __init__(self, parent=None):
        self.memo = dict(parent.memo) if parent else {}
        self.lines = []


class ExprRender:
    NAME = "render"                         # in error messages
    SELECT_ORDER = ("cond", "a", "b")       # the order a Select's operands are rendered in

    def __init__(self, kernel):
        self.k = kernel
        self.lay = layout(kernel)
        self.helpers = {}
        self.counter = 0
        self.bound = []                     # the Vars of the loops being rendered, outermost first

    def tmp(self):
        self.counter += 1
        return f"t{self.counter}"

    def cname(self, d):
        return f"c{d}"

    def const(self, node):
        return self.literal(node.value, node.dtype)

    def check(self, node):
        """Refuse a node before it is rendered (a dtype the target lacks)."""

    def expr(self, node, sc):
        """The name (or literal) holding ``node``'s value; its computation goes into ``sc``."""
        name = sc.memo.get(node)
        if name is not None:
            return name
        if isinstance(node, ir.Const):
            return self.const(node)
        if isinstance(node, ir.Var):
            return node.name
        if isinstance(node, ir.Coord):
            return self.cname(node.dim)
        if isinstance(node, ir.Size):
            return self.size(node.dim)
        if isinstance(node, ir.Fold):
            return self.fold(node, sc)
        self.check(node)
        if isinstance(node, ir.Iterate):
            return self.iterate(node, sc)
        if isinstance(node, ir.Param):
            s = self.param(node.index, node.dtype)
        elif isinstance(node, ir.Load):
            s = self.load(node, sc)
        elif isinstance(node, ir.Op):
            s = self.op(node, [self.expr(a, sc) for a in node.args])
        elif isinstance(node, ir.Cast):
            s = self.cast(self.expr(node.x, sc), node.x.dtype, node.dtype)
        elif isinstance(node, ir.Bitcast):
            s = self.bitcast(node.dtype, self.expr(node.x, sc))
        elif isinstance(node, ir.Select):
            part = {f: self.expr(getattr(node, f), sc) for f in self.SELECT_ORDER}
            s = self.select(part["cond"], part["a"], part["b"])
        else:
            raise RenderError(f"{self.NAME}: unknown IR node {type(node).__name__}")
        t = self.tmp()
        sc.lines.append(self.declare(t, node.dtype, s))
        sc.memo[node] = t
        return t

    def bind(self, *vs):
        """Enter a loop binding Vars ``vs``; a Var an enclosing loop binds is refused (the memo
        would confuse the two)."""
        for v in vs:
            if any(v.name == b.name for b in self.bound):
                raise RenderError(f"{self.NAME}: loop variable {v.name!r} of {self.k.name!r} is already "
                                  f"bound by an enclosing loop; nested loops need distinct Vars")
        self.bound.extend(vs)

    def fold(self, node, sc):
        init = self.expr(node.init, sc)
        start = self.expr(node.start, sc)
        stop = self.expr(node.stop, sc)
        acc = self.tmp()
        sc.lines.append(self.declare(acc, node.dtype, init, mutable=True))
        inner = Scope(sc)
        self.bind(node.var)
        body = self.expr(node.body, inner)
        del self.bound[-1]
        comb = self.op(ir.Op(node.op, (node.init, node.body), node.dtype), [acc, body])
        sc.lines.append(self.loop(node.var.name, node.var.dtype, start, stop))
        sc.lines.extend("  " + ln for ln in inner.lines)
        sc.lines.append(f"  {acc} = {comb};")
        sc.lines.append("}")
        sc.memo[node] = acc
        return acc

    def iterate(self, node, sc):
        """``acc = init; for var in [start, stop): acc = body`` with fresh names for ``var`` and
        ``acc``; the parts of ``body`` that read neither are computed before the loop."""
        init = self.expr(node.init, sc)
        start = self.expr(node.start, sc)
        stop = self.expr(node.stop, sc)
        self.hoist(node.body, (node.var, node.acc), sc)
        acc, i = self.tmp(), self.tmp()
        sc.lines.append(self.declare(acc, node.dtype, init, mutable=True))
        inner = Scope(sc)
        inner.memo[node.var] = i
        inner.memo[node.acc] = acc
        self.bind(node.var, node.acc)
        body = self.expr(node.body, inner)
        del self.bound[-2:]
        sc.lines.append(self.loop(i, node.var.dtype, start, stop))
        sc.lines.extend("  " + ln for ln in inner.lines)
        sc.lines.append(f"  {acc} = {body};")
        sc.lines.append("}")
        sc.memo[node] = acc
        return acc

    _LEAVES = (ir.Const, ir.Coord, ir.Size, ir.Var)          # names or literals, no temporaries
    _HOISTABLE = (ir.Param, ir.Load, ir.Op, ir.Cast, ir.Bitcast, ir.Select)

    def hoist(self, body, bound, sc):
        """Render into ``sc`` the largest subexpressions of ``body`` that read none of the Vars
        ``bound`` (nested loops stay where they are).  Nodes are visited once each (by identity):
        a loop body is a DAG whose tree may be far larger."""
        dep = {}

        def children(n):
            if isinstance(n, ir.Load):
                idx = n.index
                return (idx.expr,) if isinstance(idx, ir.Flat) else (idx.coords or ())
            if isinstance(n, ir.Op):
                return n.args
            if isinstance(n, (ir.Cast, ir.Bitcast)):
                return (n.x,)
            if isinstance(n, ir.Select):
                return (n.cond, n.a, n.b)
            return ()

        def reads_bound(n):
            got = dep.get(id(n))
            if got is None:
                if isinstance(n, ir.Var):
                    got = any(n == b for b in bound)
                elif isinstance(n, self._HOISTABLE):
                    got = False
                    for c in children(n):      # no short cut: every child gets its answer
                        got = reads_bound(c) or got
                else:
                    got = not isinstance(n, self._LEAVES)     # Fold, Iterate: left in the loop
                dep[id(n)] = got
            return got

        reads_bound(body)
        seen = set()
        stack = [body]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if not dep.get(id(n), True) and isinstance(n, self._HOISTABLE):
                self.expr(n, sc)
            elif isinstance(n, self._HOISTABLE):
                stack.extend(children(n))

    def index(self, arg, idx, sc):
        """Element index of ``idx`` into arg ``arg``: its offset plus coordinates times strides."""
        at = self.lay.arg_at[arg]
        if isinstance(idx, ir.Flat):
            return self.index_sum(self.wi(at), [(self.expr(idx.expr, sc), None)])
        coords = idx.coords
        if coords is None:
            coords = [self.cname(d) for d in range(self.k.args[arg].ndim)]
        else:
            coords = [self.expr(c, sc) for c in coords]
        return self.index_sum(self.wi(at), [(c, self.wi(at + 1 + d)) for d, c in enumerate(coords)])

    def emit_store(self, st, sc):
        a = self.k.args[st.arg]
        v = self.expr(st.value, sc)
        idx = self.index(st.arg, st.index, sc)
        line = f"a{st.arg}[{idx}] = {self.store_value(v, a.dtype)};"
        if st.when is not None:
            c = self.expr(st.when, sc)
            line = f"if ({c}) {{ {line} }}"
        sc.lines.append(line)

    # ---------------------------------------------------------------- reductions
    def identity(self, op, dt):
        if op == "add" and dt != "bool":
            return self.literal(ir.scan_identity(op, dt), dt)
        if op in ("sum", "add", "any"):
            return self.literal(0, dt) if dt != "bool" else "false"
        if op in ("prod", "mul", "all"):
            return self.literal(1, dt) if dt != "bool" else "true"
        if op in ("max", "argmax", "min", "argmin"):
            low = op in ("max", "argmax")
            if dt in ir.FLOATS:
                return self.infinity(dt, low)
            if dt == "bool":
                return "false" if low else "true"
            return self.literal((ir.INT_MIN if low else ir.INT_MAX)[dt], dt)
        raise RenderError(f"{self.NAME}: no identity for {op!r} of {dt}")

    def combine(self, op, x, y, dt):
        bop = {"sum": "add", "prod": "mul", "all": "and", "any": "or"}.get(op, op)
        dummy = ir.Op(bop, (ir.Const(0, dt),) * 2, dt)
        return self.op(dummy, [x, y])

    def accumulate(self, body, k, sc, v, dt, is_arg):
        """Body of a reduction loop over ``r``: the element's coordinates, its value ``v``, folded
        into ``acc`` (and its index into ``acci`` for arg-reductions), indented for the loop."""
        inner = self.coords_from("o", 0, body.outer_ndim) + self.coords_from("r", body.outer_ndim, k.ndim)
        inner += sc.lines
        if is_arg:
            r = self.R_INDEX
            inner.append(f"if ({self.arg_better(body.op, v, r, 'acc', 'acci', dt)}) {{ acc = {v}; acci = {r}; }}")
        else:
            inner.append(f"acc = {self.combine(body.op, 'acc', v, dt)};")
        return ["    " + ln for ln in inner]

    def arg_better(self, op, va, ia, vb, ib, dt):
        """(va, ia) wins over (vb, ib): NumPy's first-NaN / first-extreme rule."""
        cmp = ">" if op == "argmax" else "<"
        if dt in ir.FLOATS:
            n = self.isnan_fn(dt)
            return (f"(({n}({va}) && (!{n}({vb}) || {ia} < {ib})) || (!{n}({vb}) && !{n}({va}) && "
                    f"({va} {cmp} {vb} || ({va} == {vb} && {ia} < {ib}))))")
        if dt == "bool":
            va, vb = self.bool_as_int(va), self.bool_as_int(vb)
        return f"({va} {cmp} {vb} || ({va} == {vb} && {ia} < {ib}))"
