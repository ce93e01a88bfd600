"""Data-parallel logistic regression with ruda.distributed over a sharded ruda.data dataset.

    python -m ruda.distributed.run -n 4 examples/data_parallel.py [--steps-per-epoch ...]

Rank 0 writes a synthetic dataset; every rank reads its shard
(``batches(shard=(rank, world_size))``) on its device (cuda under NCCL where
present, else cpu), computes the gradient sum of its part of each global batch,
and one ``all_reduce`` adds the parts.  Rank 0 then trains in one process on the
same global batches and prints how far the two results are (they agree up to
float summation order).
"""
import argparse
import json
import os
import tempfile

import numpy as np

import ruda as xp
import ruda.data
import ruda.distributed as dist

FEATURES = 8


def make_dataset(path, n, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    w_true = rng.normal(size=FEATURES)
    y = (x @ w_true + 0.3 * rng.normal(size=n) > 0).astype(np.float32)
    ds = ruda.data.Dataset.create(path, {"x": ("float32", (FEATURES,)), "y": ("float32", ())},
                                  overwrite=True)
    ds.extend({"x": x, "y": y})
    ds.close()


def gradient_sum(params, x, y):
    """Sum over the batch of the logistic loss gradient, packed as [dw..., db]."""
    w, b = params[:FEATURES], params[FEATURES]
    p = 1.0 / (1.0 + xp.exp(-(xp.matmul(x, w) + b)))
    r = p - y
    return xp.concat([xp.matmul(r, x), xp.reshape(xp.sum(r), (1,))])


def shard_batches(ds, epoch, per_rank, rank, world, device):
    return ds.batches(per_rank, shuffle=True, seed=epoch, drop_last=True,
                      shard=(rank, world), device=device, prefetch=0)


def train(ds, epochs, per_rank, lr, rank, world, device):
    """Data-parallel SGD: every step all-reduces the gradient sums of one global batch."""
    params = xp.zeros(FEATURES + 1, dtype=xp.float32, device=device)
    for epoch in range(epochs):
        for batch in shard_batches(ds, epoch, per_rank, rank, world, device):
            g = dist.all_reduce(gradient_sum(params, batch["x"], batch["y"]))
            params = params - lr * g / (per_rank * world)
    return params


def train_single(ds, epochs, per_rank, lr, world):
    """The same global batches (the union of every shard's k-th batch), in one process."""
    params = xp.zeros(FEATURES + 1, dtype=xp.float32)
    for epoch in range(epochs):
        shards = [shard_batches(ds, epoch, per_rank, r, world, "cpu") for r in range(world)]
        for parts in zip(*shards):
            g = sum(gradient_sum(params, p["x"], p["y"]) for p in parts)
            params = params - lr * g / (per_rank * world)
    return params


def accuracy(params, ds):
    host = next(iter(ds.batches(len(ds), device="cpu", prefetch=0)))
    z = xp.matmul(host["x"], params[:FEATURES]) + params[FEATURES]
    return float(xp.mean(xp.astype((z > 0) == (host["y"] > 0.5), xp.float32)))


def main(argv=None, finalize=True):
    """Run the example; returns rank 0's report (None on other ranks)."""
    a = argparse.ArgumentParser()
    a.add_argument("--samples", type=int, default=2048)
    a.add_argument("--per-rank", type=int, default=32, help="batch size on each rank")
    a.add_argument("--epochs", type=int, default=3)
    a.add_argument("--lr", type=float, default=0.5)
    a.add_argument("--path", default=None, help="dataset file (default: a temporary file)")
    args = a.parse_args(argv)
    dist.init()
    rank, world = dist.rank(), dist.world_size()
    path = args.path or os.path.join(tempfile.gettempdir(), f"ruda_dp_{os.getppid()}.ruda")
    path = dist.broadcast(xp.asarray(list(path.encode()), dtype=xp.uint8) if rank == 0 else None)
    path = bytes(np.asarray(path).tolist()).decode()
    if rank == 0:
        make_dataset(path, args.samples)
    dist.barrier()
    ds = ruda.data.Dataset.open(path)
    device = dist.device()
    params = train(ds, args.epochs, args.per_rank, args.lr, rank, world, device)
    report = None
    if rank == 0:
        got = params.to_device("cpu")
        ref = train_single(ds, args.epochs, args.per_rank, args.lr, world)
        report = {"world": world, "device": str(device), "accuracy": accuracy(got, ds),
                  "single_process_accuracy": accuracy(ref, ds),
                  "max_abs_diff_vs_single": float(xp.max(xp.abs(got - ref)))}
        print(json.dumps(report), flush=True)
    ds.close()
    dist.barrier()
    if rank == 0 and args.path is None:
        os.remove(path)
    if finalize:
        dist.finalize()
    return report


if __name__ == "__main__":
    main()
