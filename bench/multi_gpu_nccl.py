"""Multi-GPU run of ruda.distributed over NCCL, in one command:

    python -m ruda.distributed.run -n <ngpus> bench/multi_gpu_nccl.py [--max-mb 1024]

(-n 1 is the single-GPU check: a real NCCL communicator of world size 1.)
Prints, from rank 0:
1. every collective, every dtype cuda holds, checked against NumPy on every rank;
2. all_reduce bandwidth, 1 MB .. --max-mb, float32 and bfloat16, vs PyTorch's NCCL
   all_reduce in the same run (bus bandwidth = bytes * 2 (n-1) / n / time; for n = 1,
   where it is 0, the algorithm bandwidth bytes / time).  ruda cuda arrays have no
   bfloat16 yet, so the bf16 row times ruda's NCCL engine on a raw CuPy buffer
   (NCCL_BFLOAT16), labelled as such.  "ruda" waits for each call (the blocking API);
   "ruda async" uses async_op=True and waits once per batch, as PyTorch does;
3. the data-parallel example (examples/data_parallel.py) on all GPUs.
Exit status 1 if any check fails.
"""
import argparse
import os
import socket
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests", "distributed_scripts"), os.path.join(HERE, "..", "examples")]
import cases as C  # noqa: E402
import collectives as W  # noqa: E402

import ruda as xp  # noqa: E402
import ruda.distributed as dist  # noqa: E402


def say(*a):
    if dist.rank() == 0:
        print(*a, flush=True)


def check_collectives(device):
    """Run every case on ``device``; -> (cases run, failures) summed over ranks."""
    r, w = dist.rank(), dist.world_size()
    names = [n for n in C.DTYPES if device.backend.supports(C.np_dtype(n))]
    results = W.run_all(device, names)
    fails = []
    for key, got in results.items():
        case, name = key.split("|")
        fn, kw = next((f, k) for c, f, k in C.cases(name) if c == case)
        try:
            C.compare(got, C.expected(fn, kw, case, name, w, r), name)
        except AssertionError as e:
            fails.append(f"rank {r}: {key}: {str(e)[:200]}")
    for line in fails[:20]:
        print("FAIL", line, flush=True)
    counts = dist.all_reduce(xp.asarray([len(results), len(fails)], dtype=xp.int64))
    return [int(v) for v in np.asarray(counts)], names


def _torch(idx):
    try:
        import torch
        import torch.distributed as tdist
    except ImportError:
        return None
    from mpi4py import MPI
    os.environ.setdefault("MASTER_ADDR", MPI.COMM_WORLD.bcast(socket.gethostname(), root=0))
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(idx)
    tdist.init_process_group("nccl", rank=dist.rank(), world_size=dist.world_size(),
                             device_id=torch.device(f"cuda:{idx}"))
    return torch, tdist


def _time(fn, sync, reps, rounds=5):
    from mpi4py import MPI
    out = []
    for _ in range(rounds):
        sync()
        MPI.COMM_WORLD.Barrier()
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        out.append((time.perf_counter() - t) / reps)
    return statistics.median(out)


def bandwidth(device, max_mb):
    import cupy
    from ruda.distributed import _state
    idx, w = device.index, dist.world_size()
    cupy.cuda.Device(idx).use()
    tt = _torch(idx)
    factor = 2 * (w - 1) / w if w > 1 else 1.0
    kind = "bus" if w > 1 else "algorithm"
    eng = _state.get("bench").nccl
    say(f"\n## all_reduce {kind} bandwidth, GB/s ({w} GPUs; ratio = ruda / PyTorch)\n")
    say("| size | ruda f32 | ruda f32 async | PyTorch f32 | ratio | ratio async | "
        "ruda engine bf16 | PyTorch bf16 | ratio |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    sync = cupy.cuda.get_current_stream().synchronize
    for mb in [4 ** k for k in range(8) if 4 ** k <= max_mb]:
        n = mb * (1 << 20) // 4
        x = xp.asarray(np.ones(n, np.float32), device=device)
        reps = max(3, min(50, 2048 // mb))
        t_ruda = _time(lambda: dist.all_reduce(x), sync, reps)
        t_async = _time(lambda: dist.all_reduce(x, async_op=True), sync, reps)
        raw = cupy.ones(2 * n, cupy.uint16)        # bf16 bit patterns, same byte size
        stream = cupy.cuda.get_current_stream().ptr
        t_bf16 = _time(lambda: eng.comm.allReduce(raw.data.ptr, raw.data.ptr, 2 * n, 9, 0, stream),
                       sync, reps)
        row = [_gbs(mb, t_ruda, factor), None, _gbs(mb, t_bf16, factor), None,
               _gbs(mb, t_async, factor)]
        if tt is not None:
            torch, tdist = tt
            tx = torch.ones(n, dtype=torch.float32, device=f"cuda:{idx}")
            tb = torch.ones(2 * n, dtype=torch.bfloat16, device=f"cuda:{idx}")
            row[1] = _gbs(mb, _time(lambda: tdist.all_reduce(tx), torch.cuda.synchronize, reps), factor)
            row[3] = _gbs(mb, _time(lambda: tdist.all_reduce(tb), torch.cuda.synchronize, reps), factor)
        say(f"| {mb} MB | {_fmt(row[0])} | {_fmt(row[4])} | {_fmt(row[1])} | "
            f"{_ratio(row[0], row[1])} | {_ratio(row[4], row[1])} | "
            f"{_fmt(row[2])} | {_fmt(row[3])} | {_ratio(row[2], row[3])} |")
        x = raw = None
    if tt is None:
        say("(PyTorch not installed: no anchor)")
    else:
        tt[1].destroy_process_group()


def _gbs(mb, t, factor):
    return mb / 1024 * factor / t


def _fmt(v):
    return "-" if v is None else f"{v:.1f}"


def _ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-mb", type=int, default=1024)
    p.add_argument("--skip-bandwidth", action="store_true")
    p.add_argument("--dp-path", default=None, help="dataset path all ranks can read "
                   "(default: a temporary file on rank 0's machine)")
    a = p.parse_args()
    dist.init(backend="nccl")
    device = dist.device()
    import cupy
    from cupy.cuda import nccl
    say(f"# ruda.distributed NCCL check, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{dist.world_size()} ranks, {device.backend.describe()}, NCCL {nccl.get_version()}, "
        f"CuPy {cupy.__version__}")
    (ran, failed), names = check_collectives(device)
    say(f"collectives vs NumPy on cuda ({', '.join(names)}): {ran} results, {failed} failures")
    if not a.skip_bandwidth:
        bandwidth(device, a.max_mb)
    import data_parallel
    path = a.dp_path or os.path.join(tempfile.gettempdir(), "ruda_multi_gpu_dp.ruda")
    report = data_parallel.main(["--path", path, "--epochs", "3"], finalize=False)
    ok = failed == 0 and (report is None or report["max_abs_diff_vs_single"] < 1e-4)
    say(f"data-parallel example: {report}\nRESULT: {'PASS' if ok else 'FAIL'}")
    ok = bool(int(np.asarray(dist.all_reduce(xp.asarray([0 if ok else 1]), op="max"))[0]) == 0)
    dist.finalize()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
