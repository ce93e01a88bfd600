"""Multi-rank worker: ruda's NCCL engine over a host stand-in for CuPy/NCCL (fake_cupy).

Usage: python -m ruda.distributed.run -n 2 tests/distributed_scripts/nccl_engine_check.py OUTDIR
Checks the engine's buffers, offsets, counts, types and ops (every dtype cuda holds);
tests/test_distributed.py compares the pickled results with NumPy.
"""
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cases as C  # noqa: E402
import fake_cupy  # noqa: E402

cupy = fake_cupy.install()

import ruda.distributed as dist  # noqa: E402
from ruda.distributed import _nccl, _state  # noqa: E402

NAMES = [n for n in C.DTYPES if n != "bfloat16"]


def run(eng, fn, kw, a, r, w):
    root = kw.get("root", 0) % w
    nb = kw.get("async_op", False)
    if fn in ("all_reduce", "reduce_scatter"):
        return getattr(eng, fn)(a, kw["op"], nb).wait()
    if fn == "reduce":
        return eng.reduce(a, kw["op"], root, nb).wait()
    if fn == "broadcast":
        buf = a.copy() if r == root else cupy.empty(a.shape, a.dtype)
        return eng.broadcast(buf, root, nb).wait()
    if fn in ("all_gather", "all_to_all"):
        return getattr(eng, fn)(a, nb).wait()
    if fn == "gather":
        return eng.gather(a, root, nb).wait()
    if fn == "scatter":
        part = (a.shape[0] // w,) + a.shape[1:]
        return eng.scatter(a if r == root else None, part, a.dtype, root, nb).wait()
    if fn == "self":
        eng.send(a, r, 0, nb).wait()
        return eng.recv(cupy.empty(a.shape, a.dtype), r, 0, nb).wait()
    return ring(eng, a, r, w)


def ring(eng, a, r, w):
    out = cupy.empty(a.shape, a.dtype)
    if r % 2 == 0:
        eng.send(a, (r + 1) % w, 0, False).wait()
        return eng.recv(out, (r - 1) % w, 0, False).wait()
    y = eng.recv(out, (r - 1) % w, 0, False).wait()
    eng.send(a, (r + 1) % w, 0, False).wait()
    return y


def main():
    dist.init(backend="mpi")
    ctx = _state.get("nccl_engine_check")
    r, w = ctx.rank, ctx.size
    eng = _nccl.NcclEngine(_nccl.unique_id(), w, r, 0, ctx.wd)
    results = {}
    for name in NAMES:
        for case, fn, kw in C.engine_cases(name):
            a = np.ascontiguousarray(C.make(case, name, r)).view(cupy.ndarray)
            y = run(eng, fn, kw, a, r, w)
            results[f"{case}|{name}"] = None if y is None else np.asarray(y).copy()
    with open(os.path.join(sys.argv[1], f"rank{r}.pkl"), "wb") as f:
        pickle.dump({"rank": r, "world": w, "results": results, "names": NAMES}, f)
    eng.destroy()
    dist.finalize()


if __name__ == "__main__":
    main()
