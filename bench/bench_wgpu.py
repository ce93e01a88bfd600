"""wgpu device benchmark: one command, a table of ratios/throughputs, JSON to a path.

    python bench/bench_wgpu.py [out.json] [--size-mib 1024] [--device wgpu:0] [--repeat 10]
                               [--cases add,sum]

Cases (with their targets on an NVIDIA H200 through Vulkan):
  add      f32 elementwise add of SIZE bytes per operand; GB/s counts 2 reads + 1 write
  sum      f32 sum of SIZE bytes; GB/s counts the bytes read
  small    a loop of 1,000 small ops (1e3 elements each): microseconds per op
  readback device-to-host copy of SIZE bytes into a NumPy array: GB/s
Anchors in the same run, when importable: PyTorch (CUDA) and CuPy for add/sum/small/readback.
Diagnostics (no target): add/sum with BATCH ops queued before one sync, so the figure is the
kernels' throughput without the per-sync round trip (which the single-op cases include).
Sizes above the adapter's max-storage-buffer-binding-size are clamped to it (printed).
--cases runs only those of add, sum, small, readback (diagnostics with add and sum), every
contestant alike.
Never a test: it prints measurements, it asserts nothing.
"""
import argparse
import json
import platform
import sys
import time

import numpy as np

import ruda as xp


WARM_S = 1.5   # seconds of the case before timing it: the H200 ran the first ~2 s at ~40% speed


def _best(fn, repeat, sync):
    t0 = time.perf_counter()
    while True:                     # warm up (clocks, pools, compiled pipelines), every contestant alike
        fn()
        sync()
        if time.perf_counter() - t0 > WARM_S:
            break
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return min(times)


BATCH = 10
CASES = ("add", "sum", "small", "readback")


def _batched(fn, repeat, sync):
    """Seconds per op with BATCH ops queued before one sync (best of repeat // 3 runs)."""
    def many():
        for _ in range(BATCH):
            fn()
    return _best(many, max(2, repeat // 3), sync) / BATCH


def _measure(ops, nbytes, repeat, cases):
    """The figures of ``cases`` for one contestant: ``ops`` holds its add, sum, small (a loop
    of 1,000 small ops), readback callables and its sync."""
    add, total, small, readback, sync = (ops[k] for k in ("add", "sum", "small", "readback", "sync"))
    few = max(2, repeat // 3)
    out = {}
    if "add" in cases:
        out["add_GBps"] = 3 * nbytes / _best(add, repeat, sync) / 1e9
    if "sum" in cases:
        out["sum_GBps"] = nbytes / _best(total, repeat, sync) / 1e9
    if "small" in cases:
        out["small_op_us"] = _best(small, few, sync) / 1000 * 1e6
    if "readback" in cases:
        out["readback_GBps"] = nbytes / _best(readback, few, sync) / 1e9
    if "add" in cases:
        out["add_batched_GBps"] = 3 * nbytes / _batched(add, repeat, sync) / 1e9
    if "sum" in cases:
        out["sum_batched_GBps"] = nbytes / _batched(total, repeat, sync) / 1e9
    return out


def _small_loop(s):
    def small():
        z = s
        for _ in range(1000):
            z = z * 1.0001
        return z
    return small


def bench_ruda(dev, nbytes, repeat, cases=CASES):
    b = dev.backend
    n = nbytes // 4
    rng = np.random.default_rng(0)
    host = rng.standard_normal(n, dtype=np.float32)
    x = xp.asarray(host, device=dev)
    y = xp.asarray(host[::-1].copy(), device=dev)
    dst = np.empty(n, np.float32)
    s = xp.asarray(rng.standard_normal(1000, dtype=np.float32), device=dev)
    out = _measure({"add": lambda: x + y, "sum": lambda: xp.sum(x), "small": _small_loop(s),
                    "readback": lambda: b.ctx.read(x._data.st, 0, nbytes, dst.view(np.uint8)),
                    "sync": b.synchronize}, nbytes, repeat, cases)
    if "readback" in cases:
        assert np.array_equal(dst[:1000], host[:1000])
    return out


def bench_torch(nbytes, repeat, cases=CASES):
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    n = nbytes // 4
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    dst = torch.empty(n, pin_memory=True)
    return _measure({"add": lambda: x + y, "sum": lambda: x.sum(),
                     "small": _small_loop(torch.randn(1000, device="cuda")),
                     "readback": lambda: dst.copy_(x), "sync": torch.cuda.synchronize},
                    nbytes, repeat, cases)


def bench_cupy(nbytes, repeat, cases=CASES):
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - not installed or no GPU
        return None
    n = nbytes // 4
    x = cp.random.standard_normal(n, dtype=cp.float32)
    y = cp.random.standard_normal(n, dtype=cp.float32)
    dst = np.empty(n, np.float32)
    return _measure({"add": lambda: x + y, "sum": lambda: x.sum(),
                     "small": _small_loop(cp.random.standard_normal(1000, dtype=cp.float32)),
                     "readback": lambda: x.get(out=dst), "sync": cp.cuda.Device().synchronize},
                    nbytes, repeat, cases)


TARGETS = {"add_GBps": (">=", 3300), "sum_GBps": (">=", 3500), "small_op_us": ("<=", 15),
           "readback_GBps": (">=", 5)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", help="JSON output path")
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--device", default="wgpu")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args(argv)
    cases = tuple(c for c in args.cases.split(",") if c)
    if not cases or set(cases) - set(CASES):
        ap.error(f"--cases takes a comma-separated subset of {','.join(CASES)}, not {args.cases!r}")
    dev = xp.device(args.device)
    ctx = dev.backend.ctx
    nbytes = args.size_mib << 20
    if nbytes > ctx.max_binding:
        print(f"note: {args.size_mib} MiB exceeds max-storage-buffer-binding-size "
              f"({ctx.max_binding >> 20} MiB); using {ctx.max_binding >> 20} MiB", file=sys.stderr)
        nbytes = ctx.max_binding
    results = {"ruda-wgpu": bench_ruda(dev, nbytes, args.repeat, cases)}
    for name, fn in (("torch", bench_torch), ("cupy", bench_cupy)):
        r = fn(nbytes, args.repeat, cases)
        if r is not None:
            results[name] = r
    meta = {"device": dev.backend.describe(), "bytes": nbytes, "python": platform.python_version(),
            "numpy": np.__version__, "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    try:
        import wgpu
        meta["wgpu"] = wgpu.__version__
    except ImportError:
        pass
    cols = list(results)
    print(f"# {meta['device']}  ({nbytes >> 20} MiB, {meta['date']})")
    print(f"{'case':16s}" + "".join(f"{c:>14s}" for c in cols) + f"{'target':>12s}" + "  ratio to anchors")
    for key, (cmp, tgt) in TARGETS.items():
        if key not in results["ruda-wgpu"]:
            continue
        row = f"{key:16s}" + "".join(f"{results[c][key]:14.2f}" for c in cols) + f"{cmp + str(tgt):>12s}"
        mine = results["ruda-wgpu"][key]
        ratios = []
        for c in cols[1:]:
            other = results[c][key]
            ratios.append(f"{c}: {(other / mine if key == 'small_op_us' else mine / other):.2f}x")
        ok = mine >= tgt if cmp == ">=" else mine <= tgt
        print(row + "  " + ", ".join(ratios) + ("" if ok else "   (below target)"))
    for key in ("add_batched_GBps", "sum_batched_GBps"):
        if key not in results["ruda-wgpu"]:
            continue
        print(f"{key:16s}" + "".join(f"{results[c][key]:14.2f}" for c in cols) + f"{'-':>12s}"
              + f"  {BATCH} ops per sync (diagnostic)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "results": results, "targets": TARGETS}, f, indent=2)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
