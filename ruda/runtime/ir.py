"""ruda's kernel IR: typed expressions over strided loads and stores.

A :class:`Kernel` is pure data (frozen dataclasses, hashable, comparable), so
it is its own cache key.  It says *what* is computed; a renderer
(``ruda.runtime.wgsl``, ``ruda.runtime.cuda_c``) says how, and
``ruda.runtime.packing`` lays out the runtime metadata that makes one compiled
kernel serve every shape, stride, offset and scalar value.  Nothing here knows
about arrays, devices or any shading language.  Changes to this module are
additive only.

Types
-----
Scalar type names (:data:`DTYPES`): ``bool i8 i16 i32 i64 u8 u16 u32 u64 f16
f32 f64 c64 c128`` (complex = pairs of f32/f64).  Index arithmetic uses
:data:`INDEX` (``i32``): element offsets, strides (may be negative), coordinates.
How a type is *stored* is the renderer's choice (``Renderer.storage``), e.g.
WGSL widens ``i8``/``i16``/``u8``/``u16``/``bool`` to 32-bit words; values are
always computed with the logical type's semantics (integer results wrap to
the logical width, NumPy-style).

Kernel arguments
----------------
``Kernel.args`` is a tuple of :class:`Arg` (buffers).  Each buffer carries, in
the metadata, an element ``offset`` and ``Arg.ndim`` strides (in elements).
``Kernel.params`` is a tuple of scalar types of runtime scalars, read with
:class:`Param`.  The iteration space has ``Kernel.ndim`` dimensions whose
sizes are runtime metadata too.  Only ``ndim`` values, dtypes and the
expression trees are compile-time.

Expressions (all carry ``dtype``)
---------------------------------
``Const(value, dtype)``      a literal.
``Param(i, dtype)``          runtime scalar ``i`` of ``Kernel.params``.
``Coord(d)``                 coordinate ``d`` of the current iteration point (INDEX).
``Size(d)``                  size of iteration dimension ``d`` (INDEX).
``Var(name, dtype)``         a :class:`Fold` loop variable.
``Load(arg, index)``         element of buffer ``arg``; ``index`` is :class:`Strided`
                             or :class:`Flat`.
``Op(op, args, dtype)``      an operation from :data:`OPS` (NumPy semantics).
``Cast(x, dtype)``           value conversion with NumPy ``astype`` semantics
                             (float->int truncates; out-of-range is undefined).
``Bitcast(x, dtype)``        reinterpretation between same-width types.
``Select(cond, a, b)``       ``a if cond else b`` (both evaluated).
``Fold(op, var, start, stop, body, init)``
                             ``acc = init; for var in range(start, stop): acc = op(acc, body)``
                             with ``op`` a binary op name (e.g. ``add``): inner loops (matmul).
``Iterate(var, start, stop, acc, init, body)``
                             ``acc = init; for var in range(start, stop): acc = body``, where
                             ``body`` may read both the loop :class:`Var` ``var`` and the carried
                             :class:`Var` ``acc`` (a loop whose step depends on the previous one,
                             e.g. a binary search with a runtime number of steps, so the kernel
                             text does not depend on sizes).  The renderer gives ``var`` and
                             ``acc`` fresh names (loops never clash) and computes the parts of
                             ``body`` that read neither once, before the loop.

Index maps
----------
``Strided(coords=None)``  element ``offset + sum(c[d] * stride[d])`` of the buffer, with
                          ``c`` = the iteration coordinates (``coords=None``, then
                          ``Arg.ndim == Kernel.ndim``) or the given INDEX expressions.
                          Broadcasting = stride 0; views = any offset/strides.
``Flat(expr)``            element ``offset + expr`` (buffers the caller made contiguous).

Kernel bodies
-------------
``Map(stores)``   for every point of the iteration space run each
                  ``Store(arg, index, value, when=None)`` (skipped where ``when`` is false).
``Reduce(op, value, out, outer_ndim, index_out=None, split=False)``
                  Coordinates ``< outer_ndim`` index an output; the others are reduced:
                  ``out[Strided(coords[:outer_ndim])] = op over the rest of value``.
                  ``op`` is one of :data:`REDUCE_OPS`; ``argmax``/``argmin`` store the
                  value to ``out`` and the first winning reduced linear index (i64 or
                  INDEX per the arg's dtype) to ``index_out``.  ``split=True`` adds a
                  runtime ``nsplit`` (metadata): output ``o`` is computed as ``nsplit``
                  partials written contiguously at ``Flat(o * nsplit + s)`` (to be
                  combined by a second Reduce) -- for long reductions.
``Scan(op, value, out, exclusive=False)``
                  inclusive (or exclusive) prefix ``op`` (``add``/``mul``/``max``/``min``)
                  along the LAST iteration dimension; ``out[Strided()] = scan``.

Helpers: :func:`const`, :func:`op`, :func:`cast`, :func:`load`, :func:`iterate` build nodes
with inferred dtypes.
"""
from dataclasses import dataclass, field

DTYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
          "f16", "f32", "f64", "c64", "c128")
INDEX = "i32"
INTS = frozenset({"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"})
SIGNED = frozenset({"i8", "i16", "i32", "i64"})
FLOATS = frozenset({"f16", "f32", "f64"})
COMPLEX = frozenset({"c64", "c128"})
BITS = {"bool": 8, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "f16": 16, "i32": 32, "u32": 32,
        "f32": 32, "i64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128}
INT_MIN = {d: -(2 ** (BITS[d] - 1)) if d[0] == "i" else 0 for d in INTS}
INT_MAX = {d: 2 ** (BITS[d] - 1) - 1 if d[0] == "i" else 2 ** BITS[d] - 1 for d in INTS}


def scan_identity(op, dt):
    """The value an ``add`` or ``mul`` scan of ``dt`` starts from: 1, or for add 0, and -0.0
    for floats (IEEE's identity of addition, -0 + x is x for every x: a cumulative sum of -0.0s
    stays -0.0, as NumPy's; NumPy's sum of them is +0.0, which sums keep)."""
    if op == "mul":
        return 1
    if dt in FLOATS:
        return -0.0
    return complex(-0.0, -0.0) if dt in COMPLEX else 0


def real_of(dtype):
    return {"c64": "f32", "c128": "f64"}.get(dtype, dtype)


def complex_of(dtype):
    return {"f32": "c64", "f64": "c128", "f16": "c64"}.get(dtype, dtype)


# op name -> (arity, result rule): "same" = operand dtype, "bool", "real" (real part type).
# Semantics are NumPy's for the operand dtype (complex where NumPy defines it).
OPS = {
    # unary arithmetic
    "neg": (1, "same"), "abs": (1, "real"), "square": (1, "same"), "reciprocal": (1, "same"),
    "sign": (1, "same"), "conj": (1, "same"), "real": (1, "real"), "imag": (1, "real"),
    "floor": (1, "same"), "ceil": (1, "same"), "trunc": (1, "same"), "round": (1, "same"),
    "sqrt": (1, "same"), "exp": (1, "same"), "expm1": (1, "same"), "log": (1, "same"),
    "log1p": (1, "same"), "log2": (1, "same"), "log10": (1, "same"),
    "sin": (1, "same"), "cos": (1, "same"), "tan": (1, "same"), "asin": (1, "same"),
    "acos": (1, "same"), "atan": (1, "same"), "sinh": (1, "same"), "cosh": (1, "same"),
    "tanh": (1, "same"), "asinh": (1, "same"), "acosh": (1, "same"), "atanh": (1, "same"),
    # unary predicates / logic / bits
    "isnan": (1, "bool"), "isinf": (1, "bool"), "isfinite": (1, "bool"), "signbit": (1, "bool"),
    "not": (1, "bool"), "invert": (1, "same"),
    # binary arithmetic (operands share a dtype)
    "add": (2, "same"), "sub": (2, "same"), "mul": (2, "same"), "div": (2, "same"),
    "floordiv": (2, "same"), "mod": (2, "same"), "pow": (2, "same"),
    "max": (2, "same"), "min": (2, "same"),          # NaN-propagating (NumPy maximum/minimum)
    "atan2": (2, "same"), "hypot": (2, "same"), "copysign": (2, "same"),
    "nextafter": (2, "same"), "logaddexp": (2, "same"),
    "and": (2, "same"), "or": (2, "same"), "xor": (2, "same"),   # bitwise; logical on bool
    "shl": (2, "same"), "shr": (2, "same"),          # NumPy: counts < 0 or >= width give 0 / sign fill
    # comparisons
    "eq": (2, "bool"), "ne": (2, "bool"), "lt": (2, "bool"), "le": (2, "bool"),
    "gt": (2, "bool"), "ge": (2, "bool"),
    # complex construction from (real, imag) of the real type
    "complex": (2, "complex"),
}
REDUCE_OPS = ("sum", "prod", "max", "min", "all", "any", "argmax", "argmin")
SCAN_OPS = ("add", "mul", "max", "min")


# --------------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Expr:
    pass


@dataclass(frozen=True)
class Const(Expr):
    value: object
    dtype: str


@dataclass(frozen=True)
class Param(Expr):
    index: int
    dtype: str


@dataclass(frozen=True)
class Coord(Expr):
    dim: int
    dtype: str = INDEX


@dataclass(frozen=True)
class Size(Expr):
    dim: int
    dtype: str = INDEX


@dataclass(frozen=True)
class Var(Expr):
    name: str
    dtype: str = INDEX


@dataclass(frozen=True)
class Strided:
    coords: tuple = None


@dataclass(frozen=True)
class Flat:
    expr: Expr


@dataclass(frozen=True)
class Load(Expr):
    arg: int
    index: object
    dtype: str


@dataclass(frozen=True)
class Op(Expr):
    op: str
    args: tuple
    dtype: str


@dataclass(frozen=True)
class Cast(Expr):
    x: Expr
    dtype: str


@dataclass(frozen=True)
class Bitcast(Expr):
    x: Expr
    dtype: str


@dataclass(frozen=True)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True)
class Fold(Expr):
    op: str
    var: Var
    start: Expr
    stop: Expr
    body: Expr
    init: Expr
    dtype: str


@dataclass(frozen=True)
class Iterate(Expr):
    var: Var
    start: Expr
    stop: Expr
    acc: Var
    init: Expr
    body: Expr
    dtype: str


# --------------------------------------------------------------------- kernels
@dataclass(frozen=True)
class Arg:
    name: str
    dtype: str
    ndim: int = 0          # strides carried in the metadata
    writable: bool = False


@dataclass(frozen=True)
class Store:
    arg: int
    index: object
    value: Expr
    when: Expr = None


@dataclass(frozen=True)
class Map:
    stores: tuple


@dataclass(frozen=True)
class Reduce:
    op: str
    value: Expr
    out: int
    outer_ndim: int
    index_out: int = None
    split: bool = False
    # split only: (final output arg, u32 counter arg).  The workgroup that finishes last folds
    # the partials into the output and leaves the counter (zero before the launch) at zero.
    finish: tuple = None


@dataclass(frozen=True)
class Scan:
    op: str
    value: Expr
    out: int
    exclusive: bool = False


@dataclass(frozen=True)
class Kernel:
    name: str
    args: tuple
    params: tuple
    ndim: int
    body: object
    hints: tuple = field(default=())   # renderer hints, e.g. (("vector", 4),); ignorable

    def hint(self, key, default=None):
        for k, v in self.hints:
            if k == key:
                return v
        return default


# --------------------------------------------------------------------- helpers
def const(value, dtype):
    return Const(value, dtype)


def result_dtype(name, dtypes):
    arity, rule = OPS[name]
    if len(dtypes) != arity:
        raise ValueError(f"ir.op: {name!r} takes {arity} operands; got {len(dtypes)}")
    d = dtypes[0]
    if rule == "same":
        return d
    if rule == "bool":
        return "bool"
    if rule == "real":
        return real_of(d)
    if rule == "complex":
        return complex_of(d)
    raise AssertionError(rule)


def op(name, *args):
    if name not in OPS:
        raise ValueError(f"ir.op: unknown op {name!r}")
    return Op(name, tuple(args), result_dtype(name, [a.dtype for a in args]))


def cast(x, dtype):
    return x if x.dtype == dtype else Cast(x, dtype)


def select(cond, a, b):
    return Select(cond, a, b, a.dtype)


def iterate(var, start, stop, acc, init, body):
    """An :class:`Iterate` node; ``acc`` takes ``init``'s dtype, which ``body`` must keep."""
    if not (isinstance(var, Var) and isinstance(acc, Var)):
        raise ValueError("ir.iterate: var and acc must be Var nodes")
    if acc.dtype != init.dtype or body.dtype != init.dtype:
        raise ValueError(f"ir.iterate: acc ({acc.dtype}), init ({init.dtype}) and body "
                         f"({body.dtype}) must share a dtype")
    return Iterate(var, start, stop, acc, init, body, init.dtype)


def load(arg, dtype, index=None):
    return Load(arg, Strided() if index is None else index, dtype)


def walk(node):
    """Every Expr in ``node`` (an Expr, Store, body or Kernel), depth first."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Kernel):
            stack.append(n.body)
            continue
        if isinstance(n, Map):
            stack.extend(n.stores)
            continue
        if isinstance(n, Store):
            stack.append(n.value)
            stack.append(n.index)
            if n.when is not None:
                stack.append(n.when)
            continue
        if isinstance(n, (Reduce, Scan)):
            stack.append(n.value)
            continue
        if isinstance(n, Strided):
            if n.coords:
                stack.extend(n.coords)
            continue
        if isinstance(n, Flat):
            stack.append(n.expr)
            continue
        yield n
        if isinstance(n, Load):
            stack.append(n.index)
        elif isinstance(n, Op):
            stack.extend(n.args)
        elif isinstance(n, (Cast, Bitcast)):
            stack.append(n.x)
        elif isinstance(n, Select):
            stack.extend((n.cond, n.a, n.b))
        elif isinstance(n, Fold):
            stack.extend((n.start, n.stop, n.body, n.init))
        elif isinstance(n, Iterate):
            stack.extend((n.start, n.stop, n.init, n.body))
