"""Run the official array-api-tests suite against ruda on one device.

    python conformance/run.py PATH_TO_ARRAY_API_TESTS [--device cpu] [pytest args...]
    python conformance/run.py PATH --device wgpu --without shader-f64,shader-int64   # browser-class

PATH is a checkout of https://github.com/data-apis/array-api-tests with the spec
(https://github.com/data-apis/array-api) at PATH/array-api; the suite is never
committed here.  The xfails file for the device is conformance/xfails-<kind>.txt
(one test id per line, each with a ``# reason``).  The last line printed gives
the pass figures (passed / collected), which conformance/README.md records.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
# the dtypes an adapter loses without each optional wgpu feature (ruda/backends/wgpu README)
_COSTS = {"shader-f64": ("float64", "complex128"), "shader-int64": ("int64", "uint64")}
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)")


def _ids_only(path):
    """The suite reads bare ids: drop comments and each line's ``# reason``."""
    ids = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    out = pathlib.Path(tempfile.mkstemp(prefix="ruda-xfails-", suffix=".txt")[1])
    out.write_text("".join(f"{i}\n" for i in ids if i))
    return out


def summarize(device, last_line):
    counts = {k.rstrip("s") if k.startswith("error") else k: int(n) for n, k in _COUNT.findall(last_line)}
    total = sum(v for k, v in counts.items() if k != "deselected")
    passed = counts.get("passed", 0)
    return (f"ruda on {device}: {passed}/{total} passed ({100 * passed / max(total, 1):.2f}%); "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "passed"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", type=pathlib.Path, help="path of the array-api-tests checkout")
    p.add_argument("--device", default="cpu", help="ruda device to test (sets RUDA_DEVICE)")
    p.add_argument("--max-examples", type=int, default=None)
    p.add_argument("--without", default="", metavar="FEATURES",
                   help="wgpu features to withhold, e.g. shader-f64,shader-int64 (a browser-class "
                        "adapter): sets RUDA_WGPU_WITHOUT and skips the dtypes they cost "
                        "(ARRAY_API_TESTS_SKIP_DTYPES)")
    args, rest = p.parse_known_args(argv)
    suite = args.suite.resolve()
    if not (suite / "array_api_tests").is_dir():
        p.error(f"{suite} is not an array-api-tests checkout")
    kind = args.device.split(":")[0]
    xfails = HERE / f"xfails-{kind}.txt"
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="ruda", RUDA_DEVICE=args.device)
    without = [f.strip() for f in args.without.split(",") if f.strip()]
    if without:
        unknown = set(without) - set(_COSTS)
        if unknown or kind != "wgpu":
            p.error(f"--without takes wgpu features among {', '.join(_COSTS)} with --device wgpu; "
                    f"got {args.without!r} with --device {args.device}")
        env["RUDA_WGPU_WITHOUT"] = ",".join(without)
        env["ARRAY_API_TESTS_SKIP_DTYPES"] = ",".join(d for f in without for d in _COSTS[f])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider", "-W", "ignore"]
    if xfails.exists():
        cmd.append(f"--xfails-file={_ids_only(xfails)}")
    if args.max_examples:
        cmd.append(f"--max-examples={args.max_examples}")
    proc = subprocess.Popen(cmd + rest, cwd=suite, env=env, stdout=subprocess.PIPE, text=True)
    last = ""
    for line in proc.stdout:
        sys.stdout.write(line)
        if _COUNT.search(line) and " in " in line:
            last = line
    rc = proc.wait()
    print(summarize(args.device, last))
    return rc


if __name__ == "__main__":
    sys.exit(main())
