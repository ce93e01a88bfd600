"""Bench cases of ruda.nn's attention, rotary embeddings and top_k (group ``nn``).

Contestants: ruda on each device (ruda.nn) and torch on its device (torch.nn.functional);
others have no such primitive and are skipped. Sizes: causal attention B=1, H=8, L=S=1024,
D=64 float32 (the cpu target: within 1.5x of torch); on GPUs causal bfloat16 8x32x4096x128,
one query against a 32k-token cache (Hq=32, Hkv=8, D=128, bfloat16), rope and top_k over a
Llama-3 vocabulary (64 x 128256).
"""
import numpy as np

from ruda.bench._case import Case
from ruda.bench._libs import Skip

GROUP = "nn"


def _rng():
    return np.random.default_rng(0)


def _nn(c):
    """ruda.nn, or torch.nn.functional, for contestant c."""
    if c.kind == "ruda":
        import ruda.nn
        return ruda.nn
    if c.kind == "torch":
        return c.ns.nn.functional
    raise Skip(f"{c.kind} has no nn primitives")


def _gpu_only(c):
    if not c.gpu:
        raise Skip("GPU size")


def _attention(B, Hq, Hkv, L, S, D, dt, causal, gpu_only=False):
    def make(c):
        if gpu_only:
            _gpu_only(c)
        f = _nn(c).scaled_dot_product_attention
        r = _rng()
        q = c.put(r.standard_normal((B, Hq, L, D), dtype=np.float32), dt)
        k = c.put(r.standard_normal((B, Hkv, S, D), dtype=np.float32), dt)
        v = c.put(r.standard_normal((B, Hkv, S, D), dtype=np.float32), dt)
        gqa = Hq != Hkv
        # L == S or L == 1 without causality: torch's upper-left causal is the same as ruda's
        return lambda: f(q, k, v, is_causal=causal, enable_gqa=gqa)
    return make


def _rope(shape, dt, gpu_only=False):
    B, H, T, D = shape

    def make(c):
        if gpu_only:
            _gpu_only(c)
        r = _rng()
        x = c.put(r.standard_normal(shape, dtype=np.float32), dt)
        ang = np.arange(T, dtype=np.float64)[:, None] * 10000.0 ** (-np.arange(0, D, 2) / D)
        cos, sin = c.put(np.cos(ang), dt), c.put(np.sin(ang), dt)
        if c.kind == "ruda":
            import ruda.nn
            return lambda: ruda.nn.apply_rope(x, cos, sin)
        if c.kind != "torch":
            raise Skip(f"{c.kind} has no rope")
        t = c.ns
        c2, s2 = t.cat((cos, cos), -1), t.cat((sin, sin), -1)
        h = D // 2

        def torch_rope():        # transformers' apply_rotary_pos_emb (rotate_half)
            return x * c2 + t.cat((-x[..., h:], x[..., :h]), -1) * s2
        return torch_rope
    return make


def _top_k(rows, n, k, dt):
    def make(c):
        x = c.put(_rng().standard_normal((rows, n), dtype=np.float32), dt)
        if c.kind == "ruda":
            import ruda.nn
            return lambda: ruda.nn.top_k(x, k)
        if c.kind != "torch":
            raise Skip(f"{c.kind} has no top_k")
        return lambda: c.ns.topk(x, k)
    return make


def cases(quick=False, sizes=None):
    out = []
    B, H, T, D = 1, 8, 1024, 64
    out.append(Case(GROUP, "sdpa causal", f"{B}x{H}x{T}x{T}x{D}", "float32",
                    _attention(B, H, H, T, T, D, "float32", True),
                    flops=4.0 * B * H * T * T * D / 2))
    B, H, T, D = 8, 32, 4096, 128
    out.append(Case(GROUP, "sdpa causal", f"{B}x{H}x{T}x{T}x{D}", "bfloat16",
                    _attention(B, H, H, T, T, D, "bfloat16", True, gpu_only=True),
                    flops=4.0 * B * H * T * T * D / 2, elements=B * H * T * D))
    S = 32768
    out.append(Case(GROUP, "sdpa decode GQA 32/8", f"1x32x1x{S}x128", "bfloat16",
                    _attention(1, 32, 8, 1, S, 128, "bfloat16", False, gpu_only=True),
                    nbytes=2 * 8 * S * 128 * 2, elements=2 * 8 * S * 128))
    for shape, dt, gpu in (((1, 32, 2048, 128), "float32", False),
                           ((8, 32, 4096, 128), "bfloat16", True)):
        n = int(np.prod(shape))
        size = "x".join(map(str, shape))
        out.append(Case(GROUP, "apply_rope", size, dt, _rope(shape, dt, gpu),
                        nbytes=2 * n * (4 if dt == "float32" else 2), elements=n))
    rows, n = 64, 128256
    out.append(Case(GROUP, "top_k k=50", f"{rows}x{n}", "float32", _top_k(rows, n, 50, "float32"),
                    nbytes=4 * rows * n, elements=rows * n))
    return out
