"""The part of kernel rendering the WGSL and CUDA C renderers share: the walk of a kernel's
expression DAG into memoized temporaries, folds (loops carrying an accumulator) and strided
index sums.

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

    def fold(self, node, sc):
        init = self.expr(node.init, sc)
        start = self.expr(node.start, sc)
        stop = self.expr(node.stop, sc)
        acc = self.tmp()
        sc.lines.append(self.declare(acc, node.dtype, init, mutable=True))
        inner = Scope(sc)
        body = self.expr(node.body, inner)
        comb = self.op(ir.Op(node.op, (node.init, node.body), node.dtype), [acc, body])
        sc.lines.append(self.loop(node.var.name, node.var.dtype, start, stop))
        sc.lines.extend("  " + ln for ln in inner.lines)
        sc.lines.append(f"  {acc} = {comb};")
        sc.lines.append("}")
        sc.memo[node] = acc
        return acc

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
