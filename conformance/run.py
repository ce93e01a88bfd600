"""Run the official array-api-tests suite against ruda on one device.

    python conformance/run.py PATH_TO_ARRAY_API_TESTS [--device cpu] [pytest args...]

PATH is a checkout of https://github.com/data-apis/array-api-tests with the spec
(https://github.com/data-apis/array-api) at PATH/array-api.  The suite is never
committed here.  The xfails file for the device is conformance/xfails-<kind>.txt
(one test id per line, each with a ``# reason``).  A summary line with pass
figures is printed at the end and written to conformance/results-<kind>.json.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def _ids_only(path):
    """The suite reads bare ids: drop comments and each line's ``# reason``."""
    ids = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    out = pathlib.Path(tempfile.mkstemp(prefix="ruda-xfails-", suffix=".txt")[1])
    out.write_text("".join(f"{i}\n" for i in ids if i))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", type=pathlib.Path, help="path of the array-api-tests checkout")
    p.add_argument("--device", default="cpu", help="ruda device to test (sets RUDA_DEVICE)")
    p.add_argument("--max-examples", type=int, default=None)
    args, rest = p.parse_known_args(argv)
    suite = args.suite.resolve()
    if not (suite / "array_api_tests").is_dir():
        p.error(f"{suite} is not an array-api-tests checkout")
    kind = args.device.split(":")[0]
    xfails = HERE / f"xfails-{kind}.txt"
    report = HERE / f"results-{kind}.json"
    env = dict(os.environ, ARRAY_API_TESTS_MODULE="ruda", RUDA_DEVICE=args.device)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "pytest", "array_api_tests", "-q", "-p", "no:cacheprovider", "-W", "ignore",
           "--json-report", f"--json-report-file={report}", "--json-report-omit", "log", "streams"]
    if xfails.exists():
        cmd.append(f"--xfails-file={_ids_only(xfails)}")
    if args.max_examples:
        cmd.append(f"--max-examples={args.max_examples}")
    rc = subprocess.call(cmd + rest, cwd=suite, env=env)
    if report.exists():
        summary = json.loads(report.read_text()).get("summary", {})
        total = summary.get("collected", 0) - summary.get("deselected", 0)
        passed = summary.get("passed", 0)
        print(f"ruda on {args.device}: {passed}/{total} passed ({100 * passed / max(total, 1):.2f}%), "
              f"failed {summary.get('failed', 0)}, xfailed {summary.get('xfailed', 0)}, "
              f"xpassed {summary.get('xpassed', 0)}, skipped {summary.get('skipped', 0)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
