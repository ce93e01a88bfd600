"""ruda on cuda vs CuPy vs PyTorch, measured in one run: one command, one table.

    python bench/bench_cuda.py [--json out.json] [--gib 1] [--tune]

* add: float32 elementwise add of two arrays of ``--gib`` GiB each; TB/s counts bytes read and
  written (3 x size).  CUDA-event timing, best of several rounds of ``--reps`` launches.
* sum: float32 full sum of one ``--gib`` GiB array; TB/s counts bytes read.
* small op: per-call microseconds of ``add`` on 1-element arrays (host clock over many calls, then
  one sync), for ruda, CuPy and PyTorch; and ruda's own overhead = ruda's time minus a bare
  ``cupy.empty`` + ``RawKernel`` launch of the same kernel (what ruda adds on top of the launch).
* transfers: host <-> cuda GB/s of ``to_device`` vs ``cupy.asarray`` / ``cupy.asnumpy``.
* ``--tune`` first sweeps ruda's kernel launch configurations (unroll, blocks per SM, cache
  hints) for add and sum and keeps the fastest for the rest of the run (printing it, so it can be
  made the default in ruda/backends/cuda/_kernels.py).
Never a timed test: ratios are printed, nothing asserts.
"""
import argparse
import itertools
import json
import platform
import sys
import time

import numpy as np

import ruda


def _events_time(fn, reps, rounds=5):
    import cupy
    best = float("inf")
    fn()
    cupy.cuda.get_current_stream().synchronize()
    for _ in range(rounds):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3 / reps)
    return best


def _host_time(fn, sync, calls=5000, rounds=3):
    best = float("inf")
    for _ in range(200):
        fn()
    sync()
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def tune(x, y, reps):
    from ruda.backends.cuda import _fast, _kernels
    base = {k: dict(v) for k, v in _kernels.CONFIG.items()}
    nbytes = x._data.nbytes
    rows = []
    for unroll, bps, (load, store) in itertools.product((1, 2, 4), (4, 8, 16), (
            ("plain", "plain"), ("ldcs", "stcs"), ("plain", "stcs"))):
        cfg = dict(base["binary"], unroll=unroll, blocks_per_sm=bps, load=load, store=store)
        _kernels.CONFIG.update(binary=cfg, sum=cfg)
        _fast.reset()
        t_add = _events_time(lambda: ruda.add(x, y), reps, rounds=3)
        t_sum = _events_time(lambda: ruda.sum(x), reps, rounds=3)
        rows.append((3 * nbytes / t_add / 1e12, nbytes / t_sum / 1e12, cfg))
        print(f"  tune unroll={unroll} blocks/SM={bps:2d} load={load:5s} store={store:5s}: "
              f"add {rows[-1][0]:.3f} TB/s  sum {rows[-1][1]:.3f} TB/s", flush=True)
    best_add = max(rows, key=lambda r: r[0])
    best_sum = max(rows, key=lambda r: r[1])
    print(f"  best add: {best_add[0]:.3f} TB/s with {best_add[2]}")
    print(f"  best sum: {best_sum[1]:.3f} TB/s with {best_sum[2]}")
    _kernels.CONFIG.update(binary=best_add[2], sum=best_sum[2])
    _fast.reset()
    return {"rows": [{"add_tbs": a, "sum_tbs": s, **c} for a, s, c in rows],
            "best_add": best_add[2], "best_sum": best_sum[2]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", help="write the results as JSON to this path")
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--tune", action="store_true")
    args = p.parse_args(argv)

    import cupy
    try:
        import torch
        has_torch = torch.cuda.is_available()
    except ImportError:
        torch, has_torch = None, False
    from ruda.backends.cuda import _fast, _kernels

    n = int(args.gib * 2**30) // 4
    nbytes = n * 4
    rng = np.random.default_rng(0)
    host_a = rng.random(n, dtype=np.float32)
    host_b = rng.random(n, dtype=np.float32)
    x, y = ruda.asarray(host_a, device="cuda"), ruda.asarray(host_b, device="cuda")
    ca, cb = x._data, y._data
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "device": ruda.device("cuda").backend.describe(), "python": platform.python_version(),
           "numpy": np.__version__, "cupy": cupy.__version__,
           "torch": torch.__version__ if torch else None, "ruda": ruda.__version__,
           "bytes_per_array": nbytes, "cupy_accelerators": repr(cupy._core.get_reduction_accelerators())}
    print(f"# {res['device']}\n# {res['date']}  numpy {res['numpy']}  cupy {res['cupy']}  "
          f"torch {res['torch']}  python {res['python']}", flush=True)
    if args.tune:
        res["tune"] = tune(x, y, args.reps)
    res["config"] = {k: dict(v) for k, v in _kernels.CONFIG.items()}

    # correctness spot check of the timed paths
    got = cupy.asnumpy(ruda.add(x, y)._data[:1 << 20])
    assert np.array_equal(got, host_a[:1 << 20] + host_b[:1 << 20]), "ruda.add gave a wrong result"

    t = {}
    t["add_ruda"] = _events_time(lambda: ruda.add(x, y), args.reps)
    t["add_cupy"] = _events_time(lambda: cupy.add(ca, cb), args.reps)
    if has_torch:
        ta, tb = torch.from_dlpack(ca), torch.from_dlpack(cb)
        t["add_torch"] = _events_time(lambda: torch.add(ta, tb), args.reps)
    t["sum_ruda"] = _events_time(lambda: ruda.sum(x), args.reps)
    t["sum_cupy"] = _events_time(lambda: cupy.sum(ca), args.reps)
    cupy._core.set_reduction_accelerators(["cub"])     # CuPy's best case (CUB device reduce)
    t["sum_cupy_cub"] = _events_time(lambda: cupy.sum(ca), args.reps)
    if has_torch:
        t["sum_torch"] = _events_time(lambda: torch.sum(ta), args.reps)
    ca = cb = ta = tb = None     # free the device memory before the next group

    # small ops: per-call host cost
    sync = cupy.cuda.get_current_stream().synchronize
    sx, sy = ruda.asarray(np.ones(1, np.float32), device="cuda"), ruda.asarray(np.ones(1, np.float32), device="cuda")
    sa, sb = sx._data, sy._data
    kern = _fast._KERNELS[("add", np.dtype("float32"), "vv", 0)]
    grid, block, n64 = _fast._config(1, 4, 0)
    empty = cupy.empty

    f32 = np.dtype("float32")

    def raw():
        out = empty((1,), f32)
        kern(grid, block, (sa, sb, out, n64))
        return out

    t["small_ruda"] = _host_time(lambda: ruda.add(sx, sy), sync)
    t["small_ruda_scalar"] = _host_time(lambda: sx + 1.0, sync)
    _fast._FORCE_FALLBACK = True
    t["small_ruda_via_cupy"] = _host_time(lambda: ruda.add(sx, sy), sync)
    _fast._FORCE_FALLBACK = False
    t["small_raw_launch"] = _host_time(raw, sync)
    t["small_cupy"] = _host_time(lambda: cupy.add(sa, sb), sync)
    if has_torch:
        st1, st2 = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
        t["small_torch"] = _host_time(lambda: torch.add(st1, st2), torch.cuda.synchronize)

    # transfers (256 MiB)
    m = min(n, 64 << 20)
    h = host_a[:m]
    t["h2d_ruda"] = min(_timed(lambda: ruda.asarray(h, device="cuda"), sync) for _ in range(3))
    t["h2d_cupy"] = min(_timed(lambda: cupy.asarray(h), sync) for _ in range(3))
    d = ruda.asarray(h, device="cuda")
    t["d2h_ruda"] = min(_timed(lambda: d.to_device("cpu"), sync) for _ in range(3))
    t["d2h_cupy"] = min(_timed(lambda: cupy.asnumpy(d._data), sync) for _ in range(3))
    res["seconds"] = t

    tbs = lambda k, mult: mult * nbytes / t[k] / 1e12 if k in t else float("nan")  # noqa: E731
    res["add_tbs"] = {w: tbs(f"add_{w}", 3) for w in ("ruda", "cupy", "torch")}
    res["sum_tbs"] = {w: tbs(f"sum_{w}", 1) for w in ("ruda", "cupy", "cupy_cub", "torch")}
    res["small_us"] = {k[6:]: v * 1e6 for k, v in t.items() if k.startswith("small_")}
    res["small_us"]["ruda_overhead"] = (t["small_ruda"] - t["small_raw_launch"]) * 1e6
    res["transfer_gbs"] = {k: m * 4 / v / 1e9 for k, v in t.items() if k[:3] in ("h2d", "d2h")}

    a, s, u = res["add_tbs"], res["sum_tbs"], res["small_us"]
    rows = [
        ("f32 add 1 GiB (TB/s)", a["ruda"], a["cupy"], a["torch"]),
        ("f32 sum 1 GiB (TB/s)", s["ruda"], s["cupy"], s["torch"]),
        ("small add (us/call)", u["ruda"], u["cupy"], u.get("torch", float("nan"))),
    ]
    print(f"{'':24s} {'ruda':>9s} {'CuPy':>9s} {'PyTorch':>9s} {'ruda/CuPy':>10s} {'ruda/PyTorch':>13s}")
    for name, r, c, pt in rows:
        print(f"{name:24s} {r:9.3f} {c:9.3f} {pt:9.3f} {r / c:10.2f} {r / pt:13.2f}")
    print(f"CuPy sum with CUB forced: {s['cupy_cub']:.3f} TB/s; CuPy accelerators in use: {res['cupy_accelerators']}")
    print(f"small ops: ruda + Python scalar {u['ruda_scalar']:.2f} us; bare empty+RawKernel launch "
          f"{u['raw_launch']:.2f} us; ruda's own overhead on top of the launch {u['ruda_overhead']:.2f} us; "
          f"ruda through CuPy's ufunc {u['ruda_via_cupy']:.2f} us")
    g = res["transfer_gbs"]
    print(f"transfers 256 MiB (GB/s): host->cuda ruda {g['h2d_ruda']:.1f} vs cupy.asarray {g['h2d_cupy']:.1f}; "
          f"cuda->host ruda {g['d2h_ruda']:.1f} vs cupy.asnumpy {g['d2h_cupy']:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, default=str)
    return res


def _timed(fn, sync):
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t0


if __name__ == "__main__":
    sys.exit(main() and 0)
