"""``python -m ruda.bench``: ruda's benchmark suite, one command on whatever machine is at hand.

Runs the standard set on every available ruda device and, in the same run, on NumPy, CuPy
and PyTorch where installed; prints tables with ratios and writes JSON.  Anything missing
(a device, a library, a dtype, an op a backend lacks) is shown as skipped, with its reason.

Groups (``--only``), in run order: ``matmul`` (512 to 8192, float32 / tf32 / float16 /
bfloat16, plus a batched case), ``elementwise``, ``reductions``, ``transfer`` (host<->device),
``latency`` (one small op with a device sync after every call), ``host`` (ruda on cpu vs NumPy,
per-call overhead: targets 2x for <= 1e3 elements and 1.05x for >= 1e7), ``nn`` (ruda.nn vs
torch.nn.functional on the same device, torch on the host included), ``conv`` (convolution and
MobileNetV2 vs torch), ``llm`` (greedy decode tokens/s of ruda.nn.models vs transformers).

Timing: each contestant is warmed up, calibrated so that one sample of ``number`` calls lasts
``--min-time`` seconds, then sampled ``--repeat`` times, the contestants of a case interleaved
in rotating order; the device is synchronised (``backend.synchronize()``, CuPy stream,
``torch.cuda.synchronize``) before the clock starts and before it stops.  Reported: median
(and min) seconds per call.  Ratios are ``time(ruda) / time(reference)`` of the medians
(host group: also of the minima; a target counts as met on the ratio of minima, the
estimate least disturbed by other load on the machine: noise only adds time): below 1 ruda is
faster.  Matmul also shows TFLOP/s; "0.95x cuBLAS speed" means a ratio <= 1.053.

Examples::

    python -m ruda.bench                       # everything, default sizes
    python -m ruda.bench --quick               # small sizes, few repeats
    python -m ruda.bench --only matmul --devices cuda,wgpu --dtypes float32,bfloat16
    python -m ruda.bench --only host --json host.json
"""
import argparse
import datetime
import json
import math
import os
import platform
import sys
import time

from ruda.bench._groups import GROUPS, MATMUL_DTYPES, cases as make_cases
from ruda.bench._libs import Skip, discover
from ruda.bench._timing import Entry, median, run_case

__all__ = ["main", "run"]


def _parse_sizes(text):
    out = []
    for s in text.split(","):
        s = s.strip()
        if s:
            out.append(int(float(s)))
    return out


def parser():
    p = argparse.ArgumentParser(prog="python -m ruda.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes, fewer repeats")
    p.add_argument("--only", default=None, help=f"comma list of groups ({', '.join(GROUPS)})")
    p.add_argument("--devices", default=None, help="comma list of ruda devices (cpu,cuda,wgpu,cuda:1...)")
    p.add_argument("--refs", default=None, help="comma list of references (numpy,cupy,torch) or 'none'")
    p.add_argument("--sizes", default=None, help="comma list of sizes (elements; matmul: n; "
                   "transfer: bytes) for the selected groups, e.g. 1e6,1e7")
    p.add_argument("--dtypes", default=None, help=f"matmul dtypes (default {','.join(MATMUL_DTYPES)})")
    p.add_argument("--repeat", type=int, default=None, help="samples per contestant (default 9; quick 5)")
    p.add_argument("--min-time", type=float, default=None,
                   help="seconds per sample (default 0.05; quick 0.01)")
    p.add_argument("--max-call", type=float, default=10.0,
                   help="a single call slower than this is measured once (default 10 s)")
    p.add_argument("--budget", type=float, default=None,
                   help="stop starting new cases after this many seconds (the rest are listed as skipped)")
    p.add_argument("--json", default=None, help="where to write results (default ruda-bench-<UTC>.json)")
    p.add_argument("--no-json", action="store_true", help="do not write JSON")
    p.add_argument("--list", action="store_true", help="list the cases and contestants, run nothing")
    return p


def _versions():
    v = {"python": platform.python_version()}
    for mod in ("ruda", "numpy", "cupy", "torch", "wgpu", "ml_dtypes"):
        m = sys.modules.get(mod)
        if m is None:
            try:
                m = __import__(mod) if mod in ("ruda", "numpy", "ml_dtypes") else None
            except ImportError:
                m = None
        if m is not None:
            v[mod] = getattr(m, "__version__", "?")
    return v


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _fmt_t(s):
    if s is None or s != s:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.2f}us"
    if s < 1:
        return f"{s * 1e3:.3f}ms"
    return f"{s:.3f}s"


def _pairs(contestants):
    """(ruda contestant, reference) pairs compared in the ratio columns."""
    out = []
    for r in contestants:
        if r.kind != "ruda":
            continue
        for f in contestants:
            if f.kind in ("numpy", "cupy", "torch") and f.gpu == r.gpu:
                out.append((r, f))
    return out


def _ratio_name(r, f):
    return f"{r.name.split(':', 1)[1]}/{f.name}"


def run(args, out=sys.stdout, save=None):
    """Run the selected cases; ``save(report)`` (if given) is called after every case, so a run
    that is interrupted still leaves its results so far."""
    quick = args.quick
    groups = [g.strip() for g in args.only.split(",")] if args.only else list(GROUPS)
    for g in groups:
        if g not in GROUPS:
            raise SystemExit(f"unknown group {g!r}; groups: {', '.join(GROUPS)}")
    devices = args.devices.split(",") if args.devices else None
    refs = None if args.refs is None else ([] if args.refs == "none" else args.refs.split(","))
    sizes = _parse_sizes(args.sizes) if args.sizes else None
    dtypes = [d.strip() for d in args.dtypes.split(",")] if args.dtypes else None
    repeat = args.repeat or (5 if quick else 9)
    min_time = args.min_time if args.min_time is not None else (0.01 if quick else 0.05)

    def p(*a):
        print(*a, file=out, flush=True)

    contestants, skipped = discover(devices, refs)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "host": platform.node(), "cpu": _cpu_name(), "cores": os.cpu_count(),
            "versions": _versions(), "argv": sys.argv[1:], "repeat": repeat, "min_time": min_time,
            "contestants": {c.name: c.describe() for c in contestants}, "skipped": skipped}
    p(f"ruda.bench {meta['date']} on {meta['cpu']} ({meta['cores']} cores)")
    p("versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    for c in contestants:
        p(f"  + {c.describe()}")
    for name, why in skipped.items():
        p(f"  - {name}: skipped ({why})")
    all_cases = make_cases(groups, quick, sizes, dtypes)
    if args.list:
        for c in all_cases:
            p(f"{c.group:12s} {c.op:20s} {c.size:10s} {c.dtype}")
        return {"meta": meta, "results": [], "ratios": []}

    results, ratios = [], []
    pairs = _pairs(contestants)
    current = None
    not_run = 0
    t_start = time.perf_counter()
    for case in all_cases:
        present = [c for c in contestants if case.allows(c)]
        if args.budget is not None and time.perf_counter() - t_start > args.budget:
            not_run += 1
            for c in present:
                results.append({"group": case.group, "op": case.op, "size": case.size,
                                "dtype": case.dtype, "contestant": c.name,
                                "skipped": f"--budget {args.budget:g} s spent"})
            continue
        if case.group != current:
            current = case.group
            cols = [c.name for c in present]
            rcols = [_ratio_name(r, f) for r, f in pairs if r in present and f in present]
            unit = {"matmul": " (TFLOP/s)", "transfer": " (GB/s)",
                    "llm": " (tokens/s; prefill and matmul: TFLOP/s)"}.get(case.group, " (time per call)")
            p(f"\n## {case.group}{unit}; ratios = time(ruda)/time(reference), < 1: ruda faster")
            head = f"{'op':20s} {'size':10s} {'dtype':9s}" + "".join(f" {n:>12s}" for n in cols) \
                + "".join(f" {n:>12s}" for n in rcols)
            if case.group == "host":
                head += f" {'min-ratio':>9s} {'target':>6s}"
            p(head)
        entries, rows = [], {}
        for c in present:
            row = {"group": case.group, "op": case.op, "size": case.size, "dtype": case.dtype,
                   "contestant": c.name}
            rows[c.name] = row
            try:
                fn = case.make(c)
            except Skip as e:
                row["skipped"] = str(e)
                continue
            except NotImplementedError as e:
                row["skipped"] = f"not implemented: {e}"
                continue
            except Exception as e:  # noqa: BLE001 - e.g. out of memory, unsupported dtype
                row["skipped"] = f"{type(e).__name__}: {e}"[:300]
                continue
            if case.sync_each:
                fn = _synced(fn, c.sync)
            entries.append((c, Entry(c.name, fn, c.sync)))
        run_case([e for _, e in entries], repeat=repeat, min_time=min_time, max_call_s=args.max_call)
        med = {}
        for c, e in entries:
            row = rows[c.name]
            if e.skip is not None:
                row["skipped"] = e.skip
                continue
            m = median(e.samples)
            med[c.name] = (m, min(e.samples))
            row.update(median_s=m, min_s=min(e.samples), samples=len(e.samples), number=e.number)
            if case.flops:
                row["tflops"] = case.flops / m / 1e12
            if case.nbytes:
                row["gb_s"] = case.nbytes / m / 1e9
            if case.tokens:
                row["tokens_s"] = case.tokens / m
        for c in present:
            try:
                c.tf32(False)
            except Skip:
                pass
        results.extend(rows.values())
        line = f"{case.op[:20]:20s} {case.size:10s} {case.dtype:9s}"
        for c in present:
            if c.name not in med:
                line += f" {'skip':>12s}"
            elif case.flops:
                line += f" {case.flops / med[c.name][0] / 1e12:12.2f}"
            elif case.tokens:
                line += f" {case.tokens / med[c.name][0]:12.1f}"
            elif case.nbytes and case.group == "transfer":
                line += f" {case.nbytes / med[c.name][0] / 1e9:12.2f}"
            else:
                line += f" {_fmt_t(med[c.name][0]):>12s}"
        for r, f in pairs:
            if r not in present or f not in present:
                continue
            if r.name in med and f.name in med:
                ratio = med[r.name][0] / med[f.name][0]
                rmin = med[r.name][1] / med[f.name][1]
                ratios.append({"group": case.group, "op": case.op, "size": case.size,
                               "dtype": case.dtype, "ruda": r.name, "reference": f.name,
                               "ratio": ratio, "ratio_min": rmin, "target": case.target,
                               "ok": None if case.target is None else bool(rmin <= case.target)})
                line += f" {ratio:12.2f}"
                if case.group == "host":
                    tgt = "-" if case.target is None else \
                        f"{case.target:g}x" + ("" if rmin <= case.target else " MISS")
                    line += f" {rmin:9.2f} {tgt:>6s}"
            else:
                line += f" {'-':>12s}"
        p(line)
        del entries
        if save is not None:
            save({"meta": meta, "results": results, "ratios": ratios, "complete": False})
    p(f"\n{len(results)} measurements in {time.perf_counter() - t_start:.1f} s")
    if not_run:
        p(f"--budget {args.budget:g} s spent: {not_run} cases not run (listed as skipped in the JSON)")
    reasons = {}
    for r in results:
        if "skipped" in r:
            reasons.setdefault((r["contestant"], r["skipped"]), []).append(f"{r['op']} {r['size']} {r['dtype']}")
    if reasons:
        p("skipped:")
        for (who, why), what in reasons.items():
            more = f" (+{len(what) - 3} more)" if len(what) > 3 else ""
            p(f"  {who}: {why} -- {', '.join(what[:3])}{more}")
    misses = [r for r in ratios if r["ok"] is False]
    if any(r["target"] is not None for r in ratios):
        p(f"host targets: {sum(1 for r in ratios if r['ok'])} met, {len(misses)} missed"
          + "".join(f"\n  MISS {m['op']} {m['size']}: {m['ratio']:.2f}x (min {m['ratio_min']:.2f}x) "
                    f"> {m['target']:g}x" for m in misses))
    crit = criteria(results)
    if crit:
        p("matmul criteria (speed = time(reference)/time(ruda)):")
        for c in crit:
            verdict = "not measured" if c["ok"] is None else ("PASS" if c["ok"] else "FAIL")
            val = "-" if c["value"] is None else f"{c['value']:.3g}"
            p(f"  {c['criterion']:40s} {c['size']:8s} {val:>8s} (target >= {c['target']:g})  {verdict}")
    return {"meta": meta, "results": results, "ratios": ratios, "criteria": crit, "complete": True}


def criteria(results):
    """The matmul targets, evaluated on this run's rows (4096^3 and 8192^3)."""
    rows = {}
    for r in results:
        if r["group"] == "matmul" and r["op"] == "matmul" and "median_s" in r:
            kind = r["contestant"].split(":")[1] if r["contestant"].startswith("ruda:") else r["contestant"]
            rows.setdefault((kind, r["dtype"], r["size"]), r)
    if not rows:
        return []
    out = []

    def add(name, size, value, target):
        out.append({"criterion": name, "size": size, "value": value, "target": target,
                    "ok": None if value is None else bool(value >= target)})

    def speed(kind, ref, dtype, size):
        a, b = rows.get((kind, dtype, size)), rows.get((ref, dtype, size))
        return None if a is None or b is None else b["median_s"] / a["median_s"]
    for size, goal in (("4096^3", 25.0), ("8192^3", 30.0)):
        r = rows.get(("wgpu", "float32", size))
        add("wgpu float32 TFLOP/s", size, r["tflops"] if r else None, goal)
    for size in ("4096^3", "8192^3"):
        add("cuda float32 vs cuBLAS (cupy)", size, speed("cuda", "cupy", "float32", size), 0.95)
        add("cuda bfloat16 vs torch", size, speed("cuda", "torch", "bfloat16", size), 0.95)
        add("cuda tf32 vs torch", size, speed("cuda", "torch", "tf32", size), 0.95)
    return out


def _synced(fn, sync):
    def call():
        fn()
        sync()
    return call


def _json_default(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


def main(argv=None, out=sys.stdout):
    args = parser().parse_args(argv)
    path = None
    if not args.no_json and not args.list:
        path = args.json or f"ruda-bench-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"

    def save(report):
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1, default=_json_default)
        os.replace(tmp, path)

    report = run(args, out=out, save=save if path else None)
    if path:
        save(report)
        print(f"wrote {path}", file=out)
    return 0
