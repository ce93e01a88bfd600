"""Multi-rank worker: runs every collective for every dtype, then the mismatch cases.

Usage: python -m ruda.distributed.run -n W tests/distributed_scripts/collectives.py OUTDIR
Each rank pickles {case|dtype: result or None} and the errors it saw to OUTDIR/rank<r>.pkl;
tests/test_distributed.py checks them against NumPy.
"""
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cases as C  # noqa: E402

import ruda as xp  # noqa: E402
import ruda.distributed as dist  # noqa: E402


WGPU_DTYPES = ("float32", "int32", "uint8")


def run_case(fn, kw, name, r, w, device=None):
    kw = dict(kw)
    x = xp.asarray(C.make(kw.pop("case"), name, r), device=device)
    if "root" in kw:
        kw["root"] %= w
    if kw.pop("none", False) and r != kw["root"]:
        x = None
    if fn == "ring":
        return ring(x, r, w)
    out = getattr(dist, fn)(x, **kw)
    return out.wait() if kw.get("async_op") else out


def ring(x, r, w):
    """Send to the next rank, receive from the previous one.  MPI: a non-blocking send, then
    recv.  NCCL (cuda), whose sends may wait for their recv on the same stream: blocking,
    even ranks sending first."""
    if x.device.kind != "cuda" or w == 1:
        work = dist.send(x, (r + 1) % w, async_op=True)
        y = dist.recv((r - 1) % w)
        work.wait()
        return y
    if r % 2 == 0:
        dist.send(x, (r + 1) % w)
        return dist.recv((r - 1) % w)
    y = dist.recv((r - 1) % w)
    dist.send(x, (r + 1) % w)
    return y


def to_host(y, device="cpu"):
    if y is None:
        return None
    assert y.device == xp.device(device), (y.device, device)
    return np.asarray(y.to_device("cpu")).copy()


def run_all(device="cpu", dtypes=C.DTYPES, prefix=""):
    """{prefix+case|dtype: host copy of this rank's result (None where it gets none)}."""
    r, w = dist.rank(), dist.world_size()
    results = {}
    for name in dtypes:
        for case, fn, kw in C.cases(name):
            y = run_case(fn, dict(kw, case=case), name, r, w, device)
            results[f"{prefix}{case}|{name}"] = to_host(y, device)
    return results


_POOLED = (1 << 20) // 4 + 3        # float32 elements: outputs above the pool's minimum size


def pooled_outputs(r, w):
    """Large host all_reduce results (pooled outputs) stay intact while anything refers to
    them: the array, or only a view of it."""
    total = w * (w + 1) / 2

    def ar(k, op="sum"):
        return dist.all_reduce(xp.full(_POOLED, k * (r + 1.0), dtype=xp.float32), op=op)
    y1 = ar(1)
    tail = np.asarray(y1)[5:]
    y2 = ar(2)
    del y1
    y3 = ar(3)
    ok = [bool((tail == total).all()), bool((np.asarray(y2) == 2 * total).all()),
          bool((np.asarray(y3) == 3 * total).all())]
    del tail, y2, y3
    y4 = ar(4, "mean")
    ok.append(bool((np.asarray(y4) == 4 * total / w).all()))
    return ok


def mismatch_cases(r):
    """Each returns what this rank raised (type name, message)."""
    f32 = xp.ones(3, dtype=xp.float32)
    calls = {
        "shape": lambda: dist.all_reduce(xp.ones(3 if r == 0 else 4)),
        "dtype": lambda: dist.all_gather(f32 if r == 0 else xp.ones(3, dtype=xp.float64)),
        "op": lambda: dist.all_reduce(f32, op="sum" if r == 0 else "max"),
        "root": lambda: dist.broadcast(f32, root=0 if r == 0 else 1),
        "collective": lambda: dist.all_reduce(f32) if r == 0 else dist.all_gather(f32),
        "not-divisible": lambda: dist.scatter(xp.ones(5), root=0),
        "shape-pooled": lambda: dist.all_reduce(xp.ones(_POOLED + r, dtype=xp.float32)),
    }
    seen = {}
    for key, call in calls.items():
        try:
            call()
            seen[key] = None
        except Exception as e:  # noqa: BLE001 - recorded for the test to judge
            seen[key] = (type(e).__name__, str(e))
    return seen


def main():
    out_dir = sys.argv[1]
    dist.init(backend="mpi")
    r, w = dist.rank(), dist.world_size()
    results = run_all()
    if any(d.kind == "wgpu" for d in xp.devices()):     # staged through the host
        results.update(run_all("wgpu", WGPU_DTYPES, prefix="wgpu:"))
        # a cpu rank beside a wgpu one: the cpu rank's hot path agrees with the other's check
        x = xp.asarray([1.0, 2.0, float(r)], device="cpu" if r % 2 == 0 else "wgpu")
        for op in ("sum", "max"):
            results[f"mixed-{op}|float64"] = to_host(dist.all_reduce(x, op=op), x.device)
    pooled = pooled_outputs(r, w)
    errors = mismatch_cases(r)
    after = to_host(dist.all_reduce(xp.asarray([float(r)])))
    with open(os.path.join(out_dir, f"rank{r}.pkl"), "wb") as f:
        pickle.dump({"rank": r, "world": w, "results": results, "errors": errors,
                     "after": after, "pooled": pooled}, f)
    dist.barrier()
    dist.finalize()


if __name__ == "__main__":
    main()
