"""Fused ruda.nn kernels on cuda vs torch cuda: bandwidth for row kernels, TFLOP/s for attention.

    python bench/bench_nn_cuda.py [--json out.json] [--only softmax,sdpa] [--reps 20]

Each kernel is called through the cuda backend (``ruda.device("cuda").backend.nn``) on CuPy
arrays sharing torch's memory (DLPack), timed with CUDA events after warm-up, median of
``--reps``.  Row kernels: bytes read + written / time (512 MiB inputs).  Attention: 4*B*H*L*S*D
flops (causal counted as half); decode also as bytes of K and V read / time.
"""
import argparse
import json
import math
import statistics
import sys

import numpy as np


BUDGET_S = 2.0     # per case: fewer repetitions when one call is slow


def _median_time(fn, reps, event_pair, elapsed_s):
    """Median seconds of ``fn`` between two recorded events (after one warm-up call): ``reps``
    calls, fewer where the first takes a large part of ``BUDGET_S``."""
    times = []
    while not times or len(times) < max(1, min(reps, int(BUDGET_S / max(times[0], 1e-6)))):
        a, b = event_pair()
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(elapsed_s(a, b))
    return statistics.median(times)


def _events_time(fn, reps, cupy):
    fn()
    cupy.cuda.get_current_stream().synchronize()
    return _median_time(fn, reps, lambda: (cupy.cuda.Event(), cupy.cuda.Event()),
                        lambda a, b: cupy.cuda.get_elapsed_time(a, b) / 1e3)


def _torch_time(fn, reps, torch):
    fn()
    torch.cuda.synchronize()
    return _median_time(fn, reps, lambda: (torch.cuda.Event(enable_timing=True),
                                           torch.cuda.Event(enable_timing=True)),
                        lambda a, b: a.elapsed_time(b) / 1e3)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    import cupy
    import torch
    import ruda
    BF16 = ruda.bfloat16.dtype          # ml_dtypes bfloat16

    nn = ruda.device("cuda").backend.nn
    F = torch.nn.functional
    only = set(filter(None, args.only.split(",")))
    dev = torch.device("cuda")

    def cp(t):
        """CuPy view of a torch cuda tensor (bfloat16 as ml_dtypes bfloat16 over its bits)."""
        if t.dtype == torch.bfloat16:
            return cupy.from_dlpack(t.view(torch.int16)).view(np.uint16).view(BF16)
        return cupy.from_dlpack(t)

    rows = []

    def record(name, dtype, shape, ours, theirs, unit, amount):
        r = {"kernel": name, "dtype": dtype, "shape": shape, "ruda_s": ours, "torch_s": theirs,
             "unit": unit, "ruda": amount / ours / 1e12, "torch": amount / theirs / 1e12}
        rows.append(r)
        print(f"{name:12s} {dtype:9s} {str(shape):26s} ruda {r['ruda']:7.2f} {unit}  torch {r['torch']:7.2f} {unit}"
              f"  ratio {theirs / ours:5.2f}", flush=True)

    for dtype, tdt in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        size = torch.empty((), dtype=tdt).element_size()
        for n in (4096, 1024, 128, 32768):
            r = (512 << 20) // (size * n)
            x = torch.randn(r, n, device=dev, dtype=tdt)
            w = torch.randn(n, device=dev, dtype=tdt)
            b = torch.randn(n, device=dev, dtype=tdt)
            xc, wc, bc = cp(x), cp(w), cp(b)
            nbytes = 2 * x.numel() * size
            cases = {
                "softmax": (lambda: nn.softmax(xc, False), lambda: F.softmax(x, -1)),
                "log_softmax": (lambda: nn.softmax(xc, True), lambda: F.log_softmax(x, -1)),
                "layer_norm": (lambda: nn.layer_norm(xc, wc, bc, 1e-5), lambda: F.layer_norm(x, (n,), w, b, 1e-5)),
                "rms_norm": (lambda: nn.rms_norm(xc, wc, 1e-6), lambda: F.rms_norm(x, (n,), w, 1e-6)),
            }
            for name, (ours, theirs) in cases.items():
                if only and name not in only:
                    continue
                record(name, dtype, [r, n], _events_time(ours, args.reps, cupy), _torch_time(theirs, args.reps, torch),
                       "TB/s", nbytes)
            del x, xc
        if not only or "swiglu" in only:
            g = torch.randn((256 << 20) // size, device=dev, dtype=tdt)
            u = torch.randn_like(g)
            gc, uc = cp(g), cp(u)
            record("swiglu", dtype, list(g.shape), _events_time(lambda: nn.swiglu(gc, uc), args.reps, cupy),
                   _torch_time(lambda: F.silu(g) * u, args.reps, torch), "TB/s", 3 * g.numel() * size)
        if not only or "apply_rope" in only:
            B, H, T, D = 8, 32, 4096, 128
            x = torch.randn(B, H, T, D, device=dev, dtype=tdt)
            cos = torch.randn(T, D // 2, device=dev, dtype=torch.float32)
            sin = torch.randn(T, D // 2, device=dev, dtype=torch.float32)
            xc, cc, sc = cp(x), cp(cos), cp(sin)

            def trope():
                x1, x2 = x[..., :D // 2], x[..., D // 2:]
                c, s = cos.to(tdt), sin.to(tdt)
                return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)
            record("apply_rope", dtype, [B, H, T, D], _events_time(lambda: nn.apply_rope(xc, cc, sc, False, D), args.reps, cupy),
                   _torch_time(trope, args.reps, torch), "TB/s", 2 * x.numel() * size)
        if not only or "top_k" in only:
            x = torch.randn(4096, 32768, device=dev, dtype=tdt)
            xc = cp(x)
            record("top_k", dtype, [4096, 32768, 8], _events_time(lambda: nn.top_k(xc, 8), args.reps, cupy),
                   _torch_time(lambda: torch.topk(x, 8, -1), args.reps, torch), "TB/s", x.numel() * size)

    if not only or "sdpa" in only:
        for dtype, tdt in (("bfloat16", torch.bfloat16), ("float32", torch.float32)):
            big = ((8, 32, 32, 4096, 4096, 128, True), (8, 32, 32, 4096, 4096, 128, False)) if tdt == torch.bfloat16 else ()
            for (B, H, Hkv, L, S, D, causal) in big + ((1, 8, 8, 1024, 1024, 64, True), (4, 32, 8, 2048, 2048, 128, True)):
                q = torch.randn(B, H, L, D, device=dev, dtype=tdt)
                k = torch.randn(B, Hkv, S, D, device=dev, dtype=tdt)
                v = torch.randn(B, Hkv, S, D, device=dev, dtype=tdt)
                qc, kc, vc = cp(q), cp(k), cp(v)
                flops = 4 * B * H * L * S * D / (2 if causal else 1)
                ours = _events_time(lambda: nn.sdpa(qc, kc, vc, None, causal, 1 / math.sqrt(D), None), args.reps, cupy)
                theirs = _torch_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=H != Hkv),
                                     args.reps, torch)
                record("sdpa" + ("_causal" if causal else ""), dtype, [B, H, Hkv, L, S, D], ours, theirs, "TFLOP/s", flops)
            for (B, H, Hkv, L, S, D) in ((1, 32, 32, 1, 32768, 128), (1, 32, 8, 1, 32768, 128), (8, 32, 8, 1, 8192, 128)):
                q = torch.randn(B, H, L, D, device=dev, dtype=tdt)
                k = torch.randn(B, Hkv, S, D, device=dev, dtype=tdt)
                v = torch.randn(B, Hkv, S, D, device=dev, dtype=tdt)
                qc, kc, vc = cp(q), cp(k), cp(v)
                ours = _events_time(lambda: nn.sdpa(qc, kc, vc, None, False, 1 / math.sqrt(D), None), args.reps, cupy)
                theirs = _torch_time(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=H != Hkv), args.reps, torch)
                record("sdpa_decode", dtype, [B, H, Hkv, L, S, D], ours, theirs, "TB/s", 2 * k.numel() * k.element_size())
    if args.json:
        meta = {"device": ruda.device("cuda").backend.describe(), "torch": torch.__version__, "cupy": cupy.__version__}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
