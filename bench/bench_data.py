"""Benchmark of ruda.data against h5py and a NumPy memmap, measured in the same run.

    python bench/bench_data.py [--records 200000] [--random 50000] [--repeat 1] [--dir /tmp]
                               [--small 1000000] [--epochs 2] [--shuffled-only] [--runs 1]

Records: a (3, 32, 32) uint8 image and an int64 label.  Prints ingestion (MB/s),
sequential batched reads (batch 256, GB/s; a first pass, which for ruda.data includes
checking every chunk's CRC-32, and a second pass over the same open dataset), random
single-record reads (records/s) for each store, the ratio of ruda to each anchor, and the
issue's targets.  Files are read right after they are written (warm OS page cache) in all
three stores alike.  With --repeat, each figure is the best of the repeats (the machine may
be shared).

Shuffled batches: ``ds.batches(256, shuffle=True, seed=epoch)`` over --small records of
40 bytes (a float32 (8,) vector and an int64 label) and over the --records image records,
against a NumPy memmap gathering the same permutation's batches (``m[idx]``); the first
epoch (for ruda.data: with the CRC-32 checks) and the best of the next --epochs, for each of
--runs openings of the same files, with the spread of the ratios.
"""
import argparse
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time

import numpy as np

import ruda
import ruda.data as rd

BATCH = 256
WRITE_BATCH = 8192
COLUMNS = ("ingest MB/s", "seq GB/s", "seq again GB/s", "random records/s")
TARGETS = {0: 300, 1: 1.0, 3: 50_000}


def _data(n):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n, 3, 32, 32), dtype=np.uint8), np.arange(n, dtype=np.int64)


def _timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_ruda(path, images, labels, order):
    n = len(labels)

    def write():
        ds = rd.Dataset.create(path, {"image": ("uint8", (3, 32, 32)), "label": ("int64", ())},
                               overwrite=True)
        for i in range(0, n, WRITE_BATCH):
            ds.extend({"image": images[i:i + WRITE_BATCH], "label": labels[i:i + WRITE_BATCH]})
        ds.close()

    ds = None

    def seq():
        for b in ds.batches(BATCH, device="cpu"):
            pass

    def rand():
        for i in order:
            ds[i]

    t_write = _timed(write)
    ds = rd.Dataset.open(path)
    out = t_write, _timed(seq), _timed(seq), _timed(rand)
    _check(ds[int(order[0])]["image"], images[order[0]])
    ds.close()
    return out


def bench_h5py(path, images, labels, order):
    import h5py
    n = len(labels)

    def write():
        with h5py.File(path, "w") as f:
            im = f.create_dataset("image", images.shape, np.uint8)
            lb = f.create_dataset("label", labels.shape, np.int64)
            for i in range(0, n, WRITE_BATCH):
                im[i:i + WRITE_BATCH] = images[i:i + WRITE_BATCH]
                lb[i:i + WRITE_BATCH] = labels[i:i + WRITE_BATCH]

    t_write = _timed(write)
    with h5py.File(path, "r") as f:
        im, lb = f["image"], f["label"]

        def seq():
            for i in range(0, n, BATCH):
                im[i:i + BATCH], lb[i:i + BATCH]

        def rand():
            for i in order:
                im[i], lb[i]
        return t_write, _timed(seq), _timed(seq), _timed(rand)


def bench_memmap(folder, images, labels, order):
    n = len(labels)
    paths = os.path.join(folder, "image.npy"), os.path.join(folder, "label.npy")

    def write():
        for p, a in zip(paths, (images, labels)):
            m = np.lib.format.open_memmap(p, "w+", a.dtype, a.shape)
            for i in range(0, n, WRITE_BATCH):
                m[i:i + WRITE_BATCH] = a[i:i + WRITE_BATCH]
            m.flush()
            del m

    t_write = _timed(write)
    im, lb = (np.load(p, mmap_mode="r") for p in paths)

    def seq():
        for i in range(0, n, BATCH):
            np.array(im[i:i + BATCH]), np.array(lb[i:i + BATCH])

    def rand():
        for i in order:
            np.array(im[i]), np.array(lb[i])
    return t_write, _timed(seq), _timed(seq), _timed(rand)


def bench_feed(folder, images, labels, device):
    """Batches delivered on ``device`` (second pass) against a memmap + ruda.asarray anchor,
    and the time with and without prefetch when each batch is followed by stand-in compute."""
    n, dev = len(labels), ruda.device(device)
    path = os.path.join(folder, "feed.ruda")
    rd.from_numpy(path, {"image": images, "label": labels}, progress=False).close()
    ds = rd.Dataset.open(path)

    def feed(prefetch=2, pause=0.0):
        for b in ds.batches(BATCH, device=dev, prefetch=prefetch):
            time.sleep(pause)
    feed()                                                    # first pass: checksums
    t_ruda = _timed(feed)
    paths = os.path.join(folder, "image.npy"), os.path.join(folder, "label.npy")
    for p, a in zip(paths, (images, labels)):
        np.save(p, a)
    im, lb = (np.load(p, mmap_mode="r") for p in paths)

    def anchor():
        for i in range(0, n, BATCH):
            ruda.asarray(np.array(im[i:i + BATCH]), device=dev)
            ruda.asarray(np.array(lb[i:i + BATCH]), device=dev)
    t_anchor = _timed(anchor)
    batches = -(-n // BATCH)
    pause = t_ruda / batches                                   # compute as long as reading
    t_compute = _timed(lambda: [time.sleep(pause) for _ in range(batches)])
    t_serial, t_overlap = _timed(lambda: feed(0, pause)), _timed(lambda: feed(2, pause))
    ds.close()
    return dev, t_ruda, t_anchor, pause, t_compute, t_serial, t_overlap


def bench_shuffled(folder, arrays, epochs, runs=1):
    """Seconds per shuffled epoch (the first, then the best of the next ``epochs``) for
    ruda.data and a memmap anchor, for each of ``runs`` openings of the same files (ruda.data
    checks every chunk again after each opening), with the values of one batch checked
    against NumPy.  Returns a list of {store: (first, later, CPU seconds of the first)}: on a
    machine whose cores are all busy with other jobs the wall-clock ratio tends to that of
    the CPU times."""
    n = len(next(iter(arrays.values())))
    path = os.path.join(folder, "shuffled.ruda")
    rd.from_numpy(path, arrays, progress=False).close()
    paths = {k: os.path.join(folder, f"shuffled-{k}.npy") for k in arrays}
    for k, a in arrays.items():
        np.save(paths[k], a)
    out = []
    for _ in range(runs):
        maps = {k: np.load(p, mmap_mode="r") for k, p in paths.items()}
        ds = rd.Dataset.open(path)

        def ruda_epoch(seed):
            for b in ds.batches(BATCH, shuffle=True, seed=seed, device="cpu"):
                pass

        def memmap_epoch(seed):
            perm = np.random.default_rng(seed).permutation(n)
            for i in range(0, n, BATCH):
                idx = perm[i:i + BATCH]
                for m in maps.values():
                    m[idx]

        run = {}
        for name, epoch in (("ruda.data", ruda_epoch), ("memmap", memmap_epoch)):
            cpu = time.process_time()
            times = [_timed(lambda fn=epoch: fn(0))]
            cpu = time.process_time() - cpu            # every thread's, first epoch only
            times += [_timed(lambda fn=epoch, seed=e: fn(seed)) for e in range(1, epochs + 1)]
            run[name] = times[0], min(times[1:]), cpu
        out.append(run)
        first = next(ds.batches(BATCH, shuffle=True, seed=7, device="cpu"))
        idx = np.random.default_rng(7).permutation(n)[:BATCH]
        for k, a in arrays.items():
            _check(first[k], a[idx])
        ds.close()
    return out


def _small(n):
    rng = np.random.default_rng(2)
    return {"x": rng.standard_normal((n, 8), dtype=np.float32), "y": np.arange(n, dtype=np.int64)}


def _mb(v):
    return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"


def _print_shuffled(what, n, nbytes, runs):
    print(f"shuffled batches ({BATCH}), {n} records of {nbytes / n:.0f} bytes ({what}): "
          f"records/s (MB/s) in the first epoch, then the best later epoch, then the first "
          f"epoch's CPU seconds (all threads)"
          + (f"; {len(runs)} runs" if len(runs) > 1 else ""))
    ratios = []
    for j, run in enumerate(runs):
        for k, times in run.items():
            label = k if len(runs) == 1 else f"{j + 1}: {k}"
            print(f"  {label:<14}" + "".join(f"{n / t:>14,.0f} ({_mb(nbytes / t / 1e6)})"
                                         for t in times[:2]) + f"{times[2]:>10.3f} CPU-s")
        ratios.append([m / r for r, m in zip(run["ruda.data"], run["memmap"])])
        print(f"  {'ratio':<14}" + "".join(f"{v:>22.3f}" for v in ratios[-1][:2]) +
              f"{ratios[-1][2]:>10.3f} CPU")
    if len(runs) > 1:
        for name, pick in (("min", min), ("median", np.median), ("max", max)):
            v = [pick(r) for r in zip(*ratios)]
            print(f"  {'ratio ' + name:<14}" + "".join(f"{r:>22.3f}" for r in v[:2]) +
                  f"{v[2]:>10.3f} CPU")


def _check(got, want):
    if not np.array_equal(np.asarray(got), want):
        raise SystemExit("bench_data: ruda.data read back wrong values")


def _versions():
    try:
        import h5py
        h5 = h5py.__version__
    except ImportError:                 # only the shuffled cases run without it
        h5 = "absent"
    return (f"Python {platform.python_version()}, NumPy {np.__version__}, SQLite "
            f"{sqlite3.sqlite_version}, h5py {h5}, ruda {ruda.__version__}, "
            f"CPU {_cpu()} ({os.cpu_count()} cores)")


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--random", type=int, default=50_000, help="random single-record reads")
    ap.add_argument("--repeat", type=int, default=1, help="runs; each figure is the best")
    ap.add_argument("--dir", default=None, help="folder for the files (default: a temp folder)")
    ap.add_argument("--device", default="cpu", help="device that batches are fed to")
    ap.add_argument("--small", type=int, default=1_000_000, help="40-byte records, shuffled")
    ap.add_argument("--epochs", type=int, default=2, help="shuffled epochs after the first")
    ap.add_argument("--shuffled-only", action="store_true", help="only the shuffled batches")
    ap.add_argument("--runs", type=int, default=1,
                    help="openings of each shuffled dataset, each with its own first epoch")
    args = ap.parse_args(argv)
    images, labels = _data(args.records)
    if args.shuffled_only:
        return _shuffled(args, images, labels)
    order = np.random.default_rng(1).integers(0, args.records, args.random)
    nbytes = images.nbytes + labels.nbytes
    amounts = (nbytes / 1e6, nbytes / 1e9, nbytes / 1e9, args.random)
    figures = {}
    for _ in range(args.repeat):
        folder = tempfile.mkdtemp(prefix="bench_data_", dir=args.dir)
        try:
            runs = {"ruda.data": bench_ruda(os.path.join(folder, "d.ruda"), images, labels, order),
                    "h5py": bench_h5py(os.path.join(folder, "d.h5"), images, labels, order),
                    "memmap": bench_memmap(folder, images, labels, order)}
        finally:
            shutil.rmtree(folder)
        for k, times in runs.items():
            rates = [a / t for a, t in zip(amounts, times)]
            figures[k] = [max(a, b) for a, b in zip(figures.get(k, rates), rates)]
    folder = tempfile.mkdtemp(prefix="bench_data_", dir=args.dir)
    try:
        dev, t_ruda, t_anchor, pause, t_compute, t_serial, t_overlap = bench_feed(
            folder, images, labels, args.device)
    finally:
        shutil.rmtree(folder)
    print(f"ruda.data benchmark, {time.strftime('%Y-%m-%d')}: {args.records} records of "
          f"{nbytes / args.records:.0f} bytes ({nbytes / 1e6:.0f} MB), best of {args.repeat}; "
          f"{_versions()}; load average {os.getloadavg()[0]:.1f}")
    print(f"{'store':<13}" + "".join(f"{c:>18}" for c in COLUMNS))
    for k, f in figures.items():
        print(f"{k:<13}" + "".join(f"{v:>18.0f}" if v >= 100 else f"{v:>18.2f}" for v in f))
    ours = figures["ruda.data"]
    for k in ("h5py", "memmap"):
        print(f"{'ratio/' + k:<13}" + "".join(f"{a / b:>18.2f}" for a, b in zip(ours, figures[k])))
    print(f"feeding {dev} (second pass, batch {BATCH}): ruda.data {nbytes / t_ruda / 1e9:.2f} "
          f"GB/s, memmap + ruda.asarray {nbytes / t_anchor / 1e9:.2f} GB/s (ratio "
          f"{t_anchor / t_ruda:.2f})")
    print(f"prefetch overlap, each batch followed by {pause * 1e3:.2f} ms of stand-in compute "
          f"(time.sleep): prefetch=0 {t_serial:.2f} s, prefetch=2 {t_overlap:.2f} s; reading "
          f"alone {t_ruda:.2f} s, compute alone {t_compute:.2f} s")
    print("targets: " + ", ".join(f"{COLUMNS[j]} >= {t}: {'met' if ours[j] >= t else 'NOT met'}"
                                  for j, t in TARGETS.items()))
    return _shuffled(args, images, labels)


def _shuffled(args, images, labels):
    print(f"{time.strftime('%Y-%m-%d %H:%M')}; {_versions()}")
    for what, arrays in (("float32 (8,) and int64", _small(args.small)),
                         ("uint8 (3, 32, 32) and int64", {"image": images, "label": labels})):
        folder = tempfile.mkdtemp(prefix="bench_data_", dir=args.dir)
        try:
            runs = bench_shuffled(folder, arrays, args.epochs, args.runs)
        finally:
            shutil.rmtree(folder)
        n = len(next(iter(arrays.values())))
        _print_shuffled(what, n, sum(a.nbytes for a in arrays.values()), runs)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
