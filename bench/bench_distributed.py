"""all_reduce of float32 arrays, 1 MB .. 256 MB: ruda.distributed vs raw mpi4py.

    python -m ruda.distributed.run -n 2 bench/bench_distributed.py [--max-mb 256]

Anchors, measured in the same run on the same buffers: raw ``comm.Allreduce`` into a
preallocated output (the floor), and raw ``Allreduce`` into a fresh ``np.empty`` output
(what returning a new array costs without ruda's pool).  Methods are interleaved in a
random order per round, the same on every rank (the earlier fixed rotation gave each method
the same predecessor every round, and on a 2-core VM a call's time depends on it: raw plus an
Allgather, always right after the fresh-output anchor, timed 1.1-1.5x slower than the ruda
call that always followed it), each timed as a batch between barriers;
times are medians over rounds, ratios (anchor time / ruda time, >= 1: ruda as fast)
medians of the per-round ratios.
"ruda, check off" is all_reduce without the cross-rank agreement check (RUDA_DIST_CHECK=0);
"raw + check-sized Allgather" adds to raw the Allgather of one agreement record per call.
"""
import argparse
import os
import platform
import random
import statistics
import time

import numpy as np

import ruda as xp
import ruda.distributed as dist
from ruda.distributed import _check


def all_reduce_unchecked(x):
    """ruda's all_reduce without the agreement check (what RUDA_DIST_CHECK=0 does)."""
    _check.ENABLED = False
    try:
        return dist.all_reduce(x)
    finally:
        _check.ENABLED = True


def timed(comm, fn, reps):
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    comm.Barrier()
    return (time.perf_counter() - t) / reps


def bench_size(comm, mb, rounds, reps=None):
    n = mb * (1 << 20) // 4
    host = np.random.default_rng(comm.rank).random(n, dtype=np.float32)
    x = xp.asarray(host)
    pre = np.empty_like(host)
    rec = _check.record("all_reduce", "sum", -1, -1, x)
    table = np.empty((comm.size, rec.size), np.int64)
    methods = {
        "ruda": lambda: dist.all_reduce(x),
        "ruda_unchecked": lambda: all_reduce_unchecked(x),
        "raw": lambda: comm.Allreduce(host, pre),
        "raw_fresh": lambda: comm.Allreduce(host, np.empty_like(host)),
        "raw_allgather": lambda: (comm.Allgather(rec, table), comm.Allreduce(host, pre)),
    }
    reps = reps or max(2, 16 // mb)
    for f in methods.values():      # warm up (pool, caches)
        timed(comm, f, 2)
    times = {k: [] for k in methods}
    names = list(methods)
    for i in range(rounds):     # a fresh random order each round, the same on every rank
        for k in random.Random(i).sample(names, len(names)):
            times[k].append(timed(comm, methods[k], reps))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k in ("raw", "raw_fresh", "raw_allgather"):     # paired per round: robust to load drift
        med[k + "_ratio"] = statistics.median(a / b for a, b in zip(times[k], times["ruda"]))
    med["raw_unchecked"] = statistics.median(
        a / b for a, b in zip(times["raw"], times["ruda_unchecked"]))
    check = np.asarray(dist.all_reduce(x))
    comm.Allreduce(host, pre)
    assert np.array_equal(check, pre), "ruda all_reduce differs from mpi4py Allreduce"
    return med


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-mb", type=int, default=256)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reps", type=int, default=None,
                   help="calls per timed batch (default 16 MB / size, at least 2); 1 times each "
                        "call alone between barriers, which suits a machine shared with other jobs")
    a = p.parse_args()
    dist.init(backend="mpi")
    import mpi4py
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    if comm.rank == 0:
        print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {dist.world_size()} ranks, "
              f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
              f"NumPy {np.__version__}, mpi4py {mpi4py.__version__} (MPI {MPI.Get_version()}) / "
              f"{MPI.Get_library_version().splitlines()[0].strip()}; {os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}; RUDA_DIST_CHECK={os.environ.get('RUDA_DIST_CHECK', '1')}")
        print("| size | ruda all_reduce | raw Allreduce | ratio raw/ruda | raw, fresh output | "
              "ratio raw fresh/ruda | ruda, check off | ratio raw/(ruda, check off) | "
              "ratio (raw + check-sized Allgather)/ruda |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    mb = 1
    while mb <= a.max_mb:
        m = bench_size(comm, mb, a.rounds, a.reps)
        if comm.rank == 0:
            gbs = mb / 1024 / m["ruda"]
            print(f"| {mb} MB | {m['ruda'] * 1e3:.2f} ms ({gbs:.1f} GB/s) | {m['raw'] * 1e3:.2f} ms | "
                  f"{m['raw_ratio']:.3f} | {m['raw_fresh'] * 1e3:.2f} ms | "
                  f"{m['raw_fresh_ratio']:.3f} | {m['ruda_unchecked'] * 1e3:.2f} ms | "
                  f"{m['raw_unchecked']:.3f} | {m['raw_allgather_ratio']:.3f} |", flush=True)
        mb *= 4
    dist.finalize()


if __name__ == "__main__":
    main()
