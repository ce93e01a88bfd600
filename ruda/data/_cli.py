"""``python -m ruda data info|verify PATH``: describe or check a dataset file or shard folder."""
import argparse
import os
import sys

from ruda.data._dataset import Dataset
from ruda.data._schema import DatasetError
from ruda.data._store import FORMAT, VERSION


def main(argv):
    ap = argparse.ArgumentParser(prog="python -m ruda data",
                                 description="Inspect ruda.data datasets.")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, what in (("info", "print schema, splits, counts and size"),
                       ("verify", "read every record and check every checksum")):
        sub.add_parser(name, help=what).add_argument("path", help="dataset file or shard folder")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        with Dataset.open(args.path, "r", split=None) as ds:
            print(verify(ds) if args.command == "verify" else info(ds))
    except (DatasetError, OSError, ValueError) as e:
        print(f"python -m ruda data {args.command}: {e}", file=sys.stderr)
        return 1
    return 0


def info(ds):
    files = ds.files
    size = sum(os.path.getsize(f + s) for f in files for s in ("", "-wal")
               if os.path.exists(f + s))
    kind = f"folder of {len(files)} shard files" if os.path.isdir(ds.path) else "file"
    lines = [f"{ds.path}: {FORMAT} version {VERSION}, {kind}, {_size(size)}", "fields:"]
    width = max(len(f.name) for f in ds.fields)
    lines += [f"  {f.name:<{width}}  {f.describe()}" for f in ds.fields]
    lines.append("splits:")
    lines += [f"  {name}: {count} records" for name, count in ds.counts().items()]
    return "\n".join(lines)


def verify(ds):
    counts = ds.verify()
    return f"{ds.path}: ok, " + ", ".join(f"{k}: {v} records" for k, v in counts.items())


def _size(n):
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
