"""The standard benchmark set: groups of cases.

A case names its group, op, size label and dtype, says how much work one call does
(``flops`` or ``bytes``) and, for each contestant, builds a zero-argument callable
(``make(contestant) -> fn``) or raises :class:`Skip`.
"""
import numpy as np

from ruda.bench._case import _CPU_MAX_MATMUL, GROUPS, Case  # noqa: F401  (GROUPS: re-exported)
from ruda.bench._libs import Skip


def _rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------------------------------
# host: ruda on cpu vs NumPy, per-call overhead
def _host_ops():
    """(name, setup) pairs; setup(c, n) returns the callable for contestant c on size n."""
    import ruda as xp

    def data(n, dtype=np.float64):
        r = _rng()
        return r.standard_normal(n).astype(dtype), r.standard_normal(n).astype(dtype)

    def both(c, host):
        return host if c.kind == "numpy" else xp.asarray(host)

    def binary(fname):
        def setup(c, n):
            a, b = data(n)
            x, y = both(c, a), both(c, b)
            f = getattr(c.ns, fname)
            return lambda: f(x, y)
        return setup

    def unary(fname, **kw):
        def setup(c, n):
            x = both(c, data(n)[0])
            f = getattr(c.ns, fname)
            return (lambda: f(x, **kw)) if kw else (lambda: f(x))
        return setup

    def op_add(c, n):
        a, b = data(n)
        x, y = both(c, a), both(c, b)
        return lambda: x + y

    def op_add_scalar(c, n):
        x = both(c, data(n)[0])
        return lambda: x * 2.5 + 1.0

    def matmul(c, n):
        m = max(1, int(round(n ** 0.5)))
        r = _rng()
        a = both(c, r.standard_normal((m, m)))
        b = both(c, r.standard_normal((m, m)))
        return lambda: c.ns.matmul(a, b)

    def get_slice(c, n):
        x = both(c, data(n)[0])
        return lambda: x[1:-1]

    def get_int(c, n):
        x = both(c, data(n)[0])
        return lambda: x[n // 2]

    def get_array(c, n):
        x = both(c, data(n)[0])
        idx = both(c, _rng().integers(0, n, n).astype(np.int64))
        return lambda: x[idx]

    def get_mask(c, n):
        a = data(n)[0]
        x, m = both(c, a), both(c, a > 0)
        return lambda: x[m]

    def set_slice(c, n):
        x = both(c, data(n)[0])

        def f():
            x[::2] = 1.0
        return f

    def set_int(c, n):
        x = both(c, data(n)[0])

        def f():
            x[n // 2] = 1.0
        return f

    def astype(c, n):
        x = both(c, data(n)[0])
        if c.kind == "numpy":
            return lambda: x.astype(np.float32)
        return lambda: xp.astype(x, xp.float32)

    def where(c, n):
        a, b = data(n)
        x, y, m = both(c, a), both(c, b), both(c, a > b)
        return lambda: c.ns.where(m, x, y)

    def asarray(c, n):
        a = data(n)[0]
        return lambda: c.ns.asarray(a)

    def reshape(c, n):
        x = both(c, data(n)[0])
        shape = (2, n // 2)
        return lambda: c.ns.reshape(x, shape)

    def transpose(c, n):
        x = both(c, data(n)[0].reshape(2, n // 2))
        if c.kind == "numpy":
            return lambda: np.transpose(x)
        return lambda: xp.permute_dims(x, (1, 0))

    def zeros(c, n):
        return lambda: c.ns.zeros(n)

    def sort(c, n):
        x = both(c, data(n)[0])
        if c.kind == "numpy":          # the standard's sort is stable by default
            return lambda: np.sort(x, kind="stable")
        return lambda: xp.sort(x)

    return [
        ("add", binary("add")), ("x + y", op_add), ("x * 2.5 + 1.0", op_add_scalar),
        ("multiply", binary("multiply")), ("sin", unary("sin")), ("sum", unary("sum")),
        ("mean", unary("mean")), ("max", unary("max")), ("matmul", matmul),
        ("x[i]", get_int), ("x[1:-1]", get_slice), ("x[int array]", get_array),
        ("x[bool mask]", get_mask), ("x[::2] = 1.0", set_slice), ("x[i] = 1.0", set_int),
        ("astype f64->f32", astype), ("where", where), ("sort", sort),
        ("asarray(numpy)", asarray), ("reshape", reshape), ("permute_dims", transpose),
        ("zeros", zeros),
    ]


# ops whose cost does not grow with the array (views, one element, wrapping): per-call
# overhead is all there is, so they keep the small-array target at every size
HOST_CONSTANT_TIME = frozenset({"x[i]", "x[1:-1]", "x[i] = 1.0", "asarray(numpy)", "reshape",
                                "permute_dims"})


def host_cases(quick=False, sizes=None):
    sizes = sizes or ([1000, 1_000_000] if quick else [100, 1000, 10_000_000])
    out = []
    for name, setup in _host_ops():
        for n in sizes:
            if name in HOST_CONSTANT_TIME:
                target = 2.0
            else:
                target = 2.0 if n <= 1000 else 1.05 if n >= 10_000_000 else None
            out.append(Case("host", name, _n(n), "float64", _bind(setup, n), only=("ruda", "numpy"),
                            target=target, elements=n))
    return out


def _bind(setup, n):
    def make(c):
        if c.kind == "ruda" and c.gpu:
            raise Skip("host group compares ruda on cpu with NumPy")
        return setup(c, n)
    return make


def _n(n):
    for unit, v in (("e9", 1e9), ("e8", 1e8), ("e7", 1e7), ("e6", 1e6), ("e5", 1e5), ("e4", 1e4)):
        if n >= v and n % v == 0:
            return f"{n // int(v)}{unit}" if n // int(v) != 1 else f"1{unit}"
    return str(n)


# ---------------------------------------------------------------------------------------
# device groups: every contestant
def elementwise_cases(quick=False, sizes=None):
    sizes = sizes or ([1_000_000] if quick else [100_000, 1_000_000, 10_000_000, 100_000_000])
    out = []
    for n in sizes:
        for op in ("add", "multiply", "exp"):
            def make(c, n=n, op=op):
                r = _rng()
                a = c.put(r.standard_normal(n, dtype=np.float32))
                if op == "exp":
                    f = c.ns.exp
                    return lambda: f(a)
                b = c.put(r.standard_normal(n, dtype=np.float32))
                f = getattr(c.ns, op)
                return lambda: f(a, b)
            nb = 4 * n * (2 if op == "exp" else 3)
            out.append(Case("elementwise", op, _n(n), "float32", make, nbytes=nb, elements=n))
    return out


def reduction_cases(quick=False, sizes=None):
    sizes = sizes or ([1_000_000] if quick else [1_000_000, 10_000_000, 100_000_000])
    out = []
    for n in sizes:
        for op in ("sum", "max", "mean", "sum(axis=-1)"):
            def make(c, n=n, op=op):
                host = _rng().standard_normal(n, dtype=np.float32)
                if op == "sum(axis=-1)":
                    host = host[:n // 256 * 256].reshape(n // 256, 256)
                    a = c.put(host)
                    f = c.ns.sum
                    if c.kind == "torch":
                        return lambda: f(a, dim=-1)
                    return lambda: f(a, axis=-1)
                a = c.put(host)
                f = getattr(c.ns, op)
                return lambda: f(a)
            out.append(Case("reductions", op, _n(n) if op != "sum(axis=-1)" else f"{_n(n // 256)}x256",
                            "float32", make, nbytes=4 * n, elements=n))
    return out


MATMUL_DTYPES = ("float32", "tf32", "float16", "bfloat16")


def matmul_cases(quick=False, sizes=None, dtypes=None):
    batched = not quick and not sizes
    sizes = sizes or ([512, 1024, 2048] if quick else [512, 1024, 2048, 4096, 8192])
    dtypes = dtypes or MATMUL_DTYPES
    out = []
    for dt in dtypes:
        for n in sizes:
            def make(c, n=n, dt=dt):
                c.tf32(dt == "tf32")
                if not c.gpu and n > _CPU_MAX_MATMUL.get(dt, 0):
                    raise Skip(f"host matmul capped at {_CPU_MAX_MATMUL.get(dt, 0)} for {dt}")
                r = _rng()
                a = c.put(r.standard_normal((n, n), dtype=np.float32), dt)
                b = c.put(r.standard_normal((n, n), dtype=np.float32), dt)
                f = c.ns.matmul
                return lambda: f(a, b)
            out.append(Case("matmul", "matmul", f"{n}^3", dt, make, flops=2.0 * n ** 3))
        if batched:
            def make_b(c, dt=dt):
                c.tf32(dt == "tf32")
                if not c.gpu and dt not in ("float32",):
                    raise Skip("host batched matmul only in float32")
                r = _rng()
                a = c.put(r.standard_normal((32, 512, 512), dtype=np.float32), dt)
                b = c.put(r.standard_normal((32, 512, 512), dtype=np.float32), dt)
                f = c.ns.matmul
                return lambda: f(a, b)
            out.append(Case("matmul", "batched", "32x512^3", dt, make_b, flops=2.0 * 32 * 512 ** 3))
    return out


def transfer_cases(quick=False, sizes=None):
    sizes = sizes or ([1 << 20, 64 << 20] if quick else [1 << 20, 64 << 20, 512 << 20])
    out = []
    for nbytes in sizes:
        n = nbytes // 4

        def h2d(c, n=n):
            if not c.gpu:
                raise Skip("no transfer on the host")
            a = np.ones(n, np.float32)
            return lambda: c.put(a)

        def d2h(c, n=n):
            if not c.gpu:
                raise Skip("no transfer on the host")
            x = c.put(np.ones(n, np.float32))
            return lambda: c.get(x)
        label = f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes} B"
        out.append(Case("transfer", "host->device", label, "float32", h2d, nbytes=nbytes))
        out.append(Case("transfer", "device->host", label, "float32", d2h, nbytes=nbytes))
    return out


def latency_cases(quick=False, sizes=None):
    out = []

    def add(c):
        a, b = c.put(np.ones(1, np.float32)), c.put(np.ones(1, np.float32))
        f = c.ns.add
        return lambda: f(a, b)

    def scalar(c):
        a = c.put(np.ones(1, np.float32))
        return lambda: a * 2.0

    def sum_(c):
        a = c.put(np.ones(1000, np.float32))
        f = c.ns.sum
        return lambda: f(a)

    def chain(c):
        a = c.put(np.ones(1000, np.float32))
        ns = c.ns
        return lambda: ns.sum(ns.exp(ns.multiply(a, a)))

    for name, make in (("add 1 elt", add), ("x * 2.0 (1 elt)", scalar), ("sum 1e3", sum_),
                       ("sum(exp(a*a)) 1e3", chain)):
        out.append(Case("latency", name, "1", "float32", make, sync_each=True))
    return out


def cases(groups, quick=False, sizes=None, dtypes=None):
    out = []
    for g in groups:
        if g == "host":
            out += host_cases(quick, sizes)
        elif g == "elementwise":
            out += elementwise_cases(quick, sizes)
        elif g == "reductions":
            out += reduction_cases(quick, sizes)
        elif g == "matmul":
            out += matmul_cases(quick, sizes, dtypes)
        elif g == "transfer":
            out += transfer_cases(quick, sizes)
        elif g == "latency":
            out += latency_cases(quick, sizes)
        elif g == "nn":
            from ruda.bench._nn_cases import cases as nn_cases
            out += nn_cases(quick, sizes)
        elif g == "conv":
            from ruda.bench._conv_cases import cases as conv_cases
            out += conv_cases(quick, sizes)
        elif g == "llm":
            from ruda.bench._llm_cases import cases as llm_cases
            out += llm_cases(quick, sizes)
        else:
            raise ValueError(f"unknown group {g!r}; groups: {', '.join(GROUPS)}")
    return out
