"""Bench cases of ruda.nn's functional core (group ``nn``): activations, row ops, layers, norms.

Contestants: ruda on each device (ruda.nn) against torch on its device (torch.nn.functional:
``torch:cpu`` on the host, ``torch`` on cuda); others have no such primitive and are skipped.
Sizes: every primitive on a (4096, 4096) float32 array (the cpu target: within 1.5x of torch);
on GPUs also bfloat16, and layer_norm, rms_norm and softmax over 512 MiB ((16384, 8192)
float32, (16384, 16384) bfloat16), timed as bandwidth.
"""
import numpy as np

from ruda.bench._case import Case
from ruda.bench._libs import Skip

GROUP = "nn"
_N = 4096


def _rng():
    return np.random.default_rng(0)


def _fns(c):
    """(ruda.nn or torch.nn.functional, True when torch) for contestant c."""
    if c.kind == "ruda":
        import ruda.nn
        return ruda.nn, False
    if c.kind == "torch":
        return c.ns.nn.functional, True
    raise Skip(f"{c.kind} has no nn primitives")


def _ints(c, a):
    """Integer host array a on contestant c's device, in its own int64 (or default) dtype."""
    if c.kind == "torch":
        t = c.ns.from_numpy(np.ascontiguousarray(a))
        return t.to("cuda") if c.gpu else t
    return c.xp.asarray(a, device=c.dev)


def _x(c, shape, dt, scale=3.0):
    return c.put(_rng().standard_normal(shape, dtype=np.float32) * scale, dt)


# (op, build(F, is_torch, c, x, dt) -> callable); x is the (rows, n) input
def _unary(name, **kw):
    def build(F, t, c, x, dt):
        f = getattr(F, name)
        return lambda: f(x, **kw)
    return name + "".join(f" {k}={v}" for k, v in kw.items()), build


def _row(name):
    def build(F, t, c, x, dt):
        f = getattr(F, name)
        return (lambda: f(x, dim=-1)) if t else (lambda: f(x, axis=-1))
    return name, build


def _glu(F, t, c, x, dt):
    return (lambda: F.glu(x, dim=-1)) if t else (lambda: F.glu(x, axis=-1))


def _swiglu(F, t, c, x, dt):
    up = _x(c, x.shape, dt)
    if t:
        return lambda: F.silu(x) * up
    return lambda: F.swiglu(x, up)


def _logsumexp(F, t, c, x, dt):
    if t:
        return lambda: c.ns.logsumexp(x, -1)
    return lambda: F.logsumexp(x, axis=-1)


def _erf(F, t, c, x, dt):
    return (lambda: c.ns.erf(x)) if t else (lambda: F.erf(x))


def _dropout(F, t, c, x, dt):
    if t:
        return lambda: F.dropout(x, 0.5, training=True)
    import ruda.random
    g = ruda.random.Generator(0)
    return lambda: F.dropout(x, 0.5, training=True, generator=g)


def _normalize(F, t, c, x, dt):
    return (lambda: F.normalize(x, dim=1)) if t else (lambda: F.normalize(x, axis=1))


def _pad(mode):
    def build(F, t, c, x, dt):
        if mode == "constant":
            return lambda: F.pad(x, (1, 1, 1, 1), mode=mode, value=0.0)
        x3 = x[None]                        # torch pads 2 axes of a 3-D (or 4-D) input only
        return lambda: F.pad(x3, (1, 1, 1, 1), mode=mode)
    return f"pad {mode}", build


def _linear(F, t, c, x, dt):
    w = _x(c, (_N, _N), dt, 0.01)
    b = _x(c, (_N,), dt)
    xs = x[:512]                            # 512 x 4096 @ 4096 x 4096: 17 GFLOP
    return lambda: F.linear(xs, w, b)


def _embedding(F, t, c, x, dt):
    idx = _ints(c, _rng().integers(0, x.shape[0], _N))
    return lambda: F.embedding(idx, x)


def _one_hot(F, t, c, x, dt):
    idx = _ints(c, _rng().integers(0, _N, _N))
    return lambda: F.one_hot(idx, _N)


def _layer_norm(F, t, c, x, dt):
    n = x.shape[-1]
    w, b = _x(c, (n,), dt), _x(c, (n,), dt)
    return lambda: F.layer_norm(x, (n,), w, b)


def _rms_norm(F, t, c, x, dt):
    n = x.shape[-1]
    w = _x(c, (n,), dt)
    return lambda: F.rms_norm(x, (n,), w)


def _group_norm(F, t, c, x, dt):
    x3 = _x(c, (16, 256, _N * _N // (16 * 256)), dt)
    w, b = _x(c, (256,), dt), _x(c, (256,), dt)
    return lambda: F.group_norm(x3, 32, w, b)


def _batch_norm(F, t, c, x, dt):
    n = x.shape[1]
    m, w, b = _x(c, (n,), dt), _x(c, (n,), dt), _x(c, (n,), dt)
    v = c.put(_rng().random(n, dtype=np.float32) + 0.5, dt)
    return lambda: F.batch_norm(x, m, v, w, b)


OPS = [
    _unary("relu"), _unary("relu6"), _unary("leaky_relu", negative_slope=0.1), _unary("elu"),
    _unary("gelu"), _unary("gelu", approximate="tanh"), _unary("silu"), _unary("sigmoid"),
    _unary("softplus"), _unary("hardswish"), _unary("hardsigmoid"), ("glu", _glu),
    ("swiglu", _swiglu), _row("softmax"), _row("log_softmax"), ("logsumexp", _logsumexp),
    ("erf", _erf), ("dropout train", _dropout), ("normalize", _normalize), _pad("constant"),
    _pad("reflect"), ("linear 512 rows", _linear), ("embedding", _embedding),
    ("one_hot", _one_hot), ("layer_norm", _layer_norm), ("rms_norm", _rms_norm),
    ("group_norm", _group_norm), ("batch_norm eval", _batch_norm),
]

# the bandwidth targets on GPUs: 512 MiB of input
_BIG = {"softmax": _row("softmax")[1], "layer_norm": _layer_norm, "rms_norm": _rms_norm}


def _make(build, shape, dt, gpu_only):
    def make(c):
        if gpu_only and not c.gpu:
            raise Skip("GPU size or dtype")
        F, t = _fns(c)
        x = _x(c, shape, dt)
        return build(F, t, c, x, dt)
    return make


def cases(quick=False, sizes=None):
    out = []
    shape = (1024, _N) if quick else (_N, _N)
    for dt, gpu_only in (("float32", False), ("bfloat16", True)):
        isz = 4 if dt == "float32" else 2
        for op, build in OPS:
            n = shape[0] * shape[1]
            out.append(Case(GROUP, op, f"{shape[0]}x{shape[1]}", dt, _make(build, shape, dt, gpu_only),
                            nbytes=2 * n * isz, elements=n))
    if not quick:
        for dt, big in (("float32", (16384, 8192)), ("bfloat16", (16384, 16384))):
            n = big[0] * big[1]
            isz = 4 if dt == "float32" else 2
            for op, build in _BIG.items():
                out.append(Case(GROUP, op, f"{big[0]}x{big[1]}", dt, _make(build, big, dt, True),
                                nbytes=2 * n * isz, elements=n))
    try:
        from ruda.bench._nn_attention_cases import cases as attention_cases
    except ImportError:
        return out
    return out + attention_cases(quick, sizes)
