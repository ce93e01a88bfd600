"""The benchmark harness (python -m ruda.bench) runs, skips what is missing and writes JSON.

These tests check the harness's behaviour with tiny sizes; they assert nothing about speed.
"""
import io
import json
import math
import subprocess
import sys

import pytest

from ruda import bench
from ruda.bench import _groups, _libs, _timing

FAST = ["--repeat", "2", "--min-time", "0.0002"]


def _run(tmp_path, *argv):
    path = tmp_path / "out.json"
    out = io.StringIO()
    assert bench.main([*argv, *FAST, "--json", str(path)], out=out) == 0
    return json.loads(path.read_text()), out.getvalue()


def test_host_group(tmp_path):
    report, text = _run(tmp_path, "--only", "host", "--sizes", "100", "--devices", "cpu",
                        "--refs", "numpy")
    assert "## host" in text and "host targets:" in text
    ops = {name for name, _ in _groups._host_ops()}
    measured = {(r["op"], r["contestant"]) for r in report["results"] if "median_s" in r}
    assert {op for op, _ in measured} == ops
    assert {c for _, c in measured} == {"ruda:cpu", "numpy"}
    for r in report["results"]:
        assert r["median_s"] > 0 and r["min_s"] <= r["median_s"] and r["samples"] == 2
    assert len(report["ratios"]) == len(ops)
    for r in report["ratios"]:
        assert r["ruda"] == "ruda:cpu" and r["reference"] == "numpy"
        assert math.isfinite(r["ratio"]) and r["ratio"] > 0
        assert r["target"] == 2.0 and r["ok"] == (r["ratio_min"] <= 2.0)
    assert report["complete"] is True
    meta = report["meta"]
    assert meta["versions"]["numpy"] and meta["cpu"] and "ruda:cpu" in meta["contestants"]


def test_missing_things_are_skipped_not_fatal(tmp_path):
    report, text = _run(tmp_path, "--only", "matmul,transfer,latency", "--sizes", "64",
                        "--dtypes", "float32,tf32,float16,bfloat16",
                        "--devices", "cpu,cuda,wgpu")
    rows = report["results"]
    assert rows and all(("median_s" in r) != ("skipped" in r) for r in rows)
    by = {(r["op"], r["dtype"], r["contestant"]): r for r in rows}
    assert "median_s" in by[("matmul", "float32", "ruda:cpu")]
    assert "tflops" in by[("matmul", "float32", "numpy")]
    assert "TF32" in by[("matmul", "tf32", "numpy")]["skipped"]
    assert "skipped" in by[("host->device", "float32", "ruda:cpu")]
    assert "median_s" in by[("add 1 elt", "float32", "ruda:cpu")]
    # devices asked for but absent here are listed with a reason
    names = {r["contestant"] for r in rows} | set(report["meta"]["skipped"])
    for kind in ("cuda", "wgpu"):
        assert any(n.startswith(f"ruda:{kind}") for n in names)


def test_budget_skips_the_rest(tmp_path):
    report, text = _run(tmp_path, "--only", "latency", "--devices", "cpu", "--refs", "numpy",
                        "--budget", "0")
    rows = report["results"]
    assert rows and all("budget" in r["skipped"] for r in rows[2:])


def test_list_and_bad_group(tmp_path):
    out = io.StringIO()
    assert bench.main(["--list", "--quick"], out=out) == 0
    text = out.getvalue()
    for g in _groups.GROUPS:
        assert g in text
    with pytest.raises(SystemExit):
        bench.main(["--only", "nonsense", "--no-json"], out=io.StringIO())


def test_run_case_interleaves_and_survives_failures():
    order = []

    def mk(name, fail=False, slow=0.0):
        def fn():
            order.append(name)
            if fail:
                raise RuntimeError("boom")
        return _timing.Entry(name, fn, sync=None)
    a, b, bad = mk("a"), mk("b"), mk("bad", fail=True)
    _timing.run_case([a, b, bad], repeat=3, min_time=0.0, max_call_s=10)
    assert "boom" in bad.skip and bad.samples == []
    assert len(a.samples) == len(b.samples) == 3 and a.number == b.number == 1
    timed = [n for n in order if n != "bad"][4:]          # after warm-up + calibration
    assert timed == ["a", "b", "b", "a", "a", "b"]
    slow = _timing.Entry("slow", lambda: None)
    _timing.run_case([slow], repeat=5, min_time=0.0, max_call_s=0.0)
    assert len(slow.samples) == 1


def test_matmul_criteria():
    def row(who, dtype, size, t, tflops=None):
        return {"group": "matmul", "op": "matmul", "contestant": who, "dtype": dtype, "size": size,
                "median_s": t, "tflops": tflops}
    rows = [row("ruda:wgpu:0", "float32", "4096^3", 1.0, 26.0), row("ruda:wgpu:0", "float32", "8192^3", 1.0, 20.0),
            row("ruda:cuda:0", "float32", "4096^3", 1.0), row("cupy", "float32", "4096^3", 0.97),
            row("ruda:cuda:0", "bfloat16", "4096^3", 1.0), row("torch", "bfloat16", "4096^3", 0.9)]
    got = {(c["criterion"], c["size"]): c for c in bench.criteria(rows)}
    assert got[("wgpu float32 TFLOP/s", "4096^3")]["ok"] is True
    assert got[("wgpu float32 TFLOP/s", "8192^3")]["ok"] is False
    assert got[("cuda float32 vs cuBLAS (cupy)", "4096^3")]["value"] == pytest.approx(0.97)
    assert got[("cuda float32 vs cuBLAS (cupy)", "4096^3")]["ok"] is True
    assert got[("cuda bfloat16 vs torch", "4096^3")]["ok"] is False
    assert got[("cuda tf32 vs torch", "8192^3")]["ok"] is None
    assert bench.criteria([]) == []


def test_ratio_pairs():
    class C:
        def __init__(self, name, kind, gpu):
            self.name, self.kind, self.gpu = name, kind, gpu
    cs = [C("ruda:cpu", "ruda", False), C("ruda:cuda:0", "ruda", True), C("numpy", "numpy", False),
          C("cupy", "cupy", True), C("torch", "torch", True)]
    pairs = {bench._ratio_name(r, f) for r, f in bench._pairs(cs)}
    assert pairs == {"cpu/numpy", "cuda:0/cupy", "cuda:0/torch"}


def test_discover_reports_unknown_refs():
    cs, skipped = _libs.discover(["cpu"], ["numpy", "cupy", "torch"])
    assert [c.name for c in cs if c.kind == "ruda"] == ["ruda:cpu"]
    assert any(c.name == "numpy" for c in cs)
    for name in ("cupy", "torch"):
        assert name in skipped or any(c.name == name for c in cs)


def test_command_line_entry(tmp_path):
    path = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "ruda.bench", "--only", "latency", "--devices", "cpu",
                        "--refs", "numpy", *FAST, "--json", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "## latency" in r.stdout
    assert json.loads(path.read_text())["results"]
