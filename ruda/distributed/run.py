"""Launcher: ``python -m ruda.distributed.run -n 4 script.py [args]``.

Starts ``-n`` ranks of this Python running ``script.py`` (or ``-m module``)
through the installed ``mpiexec``, with the environment passed through; each rank
runs it under ``ruda.distributed._bootstrap``, so that a rank that fails (an
unhandled exception, a non-zero ``sys.exit``) ends every rank at once, and one that
ends without calling ``init()`` while others call it ends the job too.
``--hosts a,b`` and ``--hostfile FILE`` go to mpiexec, so the same command spans
machines.  On one machine the launcher then prints which rank failed, with its
traceback, and ends a job whose rank vanished (killed, ``os._exit``) while others
are in ruda.distributed.  The exit status is the failed rank's, else mpiexec's, or 1
when a rank that used ruda.distributed vanished (mpiexec may end such a job with 0).
mpiexec is, in order: ``$RUDA_MPIEXEC``, the one next to this Python (the ``mpich``
wheel installs it there), the first on ``PATH``.
"""
import argparse
import json
import os
import signal
import shutil
import subprocess
import sys
import sysconfig
import tempfile


def find_mpiexec():
    env = os.environ.get("RUDA_MPIEXEC")
    if env:
        return env
    for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        for name in ("mpiexec", "mpirun"):
            p = os.path.join(d, name)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    found = shutil.which("mpiexec") or shutil.which("mpirun")
    if not found:
        raise SystemExit("ruda.distributed.run: no mpiexec found; pip install 'ruda[mpi]' "
                         "(mpi4py and the mpich wheel) or set RUDA_MPIEXEC")
    return found


def _flavor(mpiexec):
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "mpich"
    return "openmpi" if "Open MPI" in out or "OpenRTE" in out else "mpich"


def command(n, target, args, hosts=None, hostfile=None, module=False, mpiexec=None):
    """The mpiexec command line that runs ``target`` on ``n`` ranks."""
    mpiexec = mpiexec or find_mpiexec()
    cmd = [mpiexec, "-n", str(n)]
    if _flavor(mpiexec) == "openmpi":
        cmd += (["--host", hosts] if hosts else []) + (["--hostfile", hostfile] if hostfile else [])
        cmd += ["--allow-run-as-root"] if os.geteuid() == 0 else []
        cmd += ["-x", "PYTHONPATH"] if "PYTHONPATH" in os.environ else []
    else:
        cmd += (["-hosts", hosts] if hosts else []) + (["-f", hostfile] if hostfile else [])
    return (cmd + [sys.executable, "-m", "ruda.distributed._bootstrap"] + (["-m"] if module else [])
            + [target] + list(args))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ruda.distributed.run",
                                description="Run a script on N ranks through mpiexec.")
    p.add_argument("-n", "--nproc", type=int, required=True, help="number of ranks")
    p.add_argument("--hosts", help="comma-separated hosts, passed to mpiexec")
    p.add_argument("--hostfile", help="host file, passed to mpiexec")
    p.add_argument("-m", dest="module", action="store_true", help="run a module, like python -m")
    p.add_argument("target", help="script (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    ns = p.parse_args(argv)
    if ns.nproc < 1:
        p.error(f"-n must be at least 1; got {ns.nproc}")
    cmd = command(ns.nproc, ns.target, ns.args, ns.hosts, ns.hostfile, ns.module)
    if ns.hosts or ns.hostfile:
        return subprocess.call(cmd, env=os.environ.copy())
    with tempfile.TemporaryDirectory(prefix="ruda-dist-") as status:
        proc = subprocess.Popen(cmd, env={**os.environ, "RUDA_DIST_STATUS_DIR": status})
        try:
            vanished = _watch(proc, status)
        except BaseException:       # Ctrl-C here: mpiexec got it too; let it end the ranks
            proc.wait()
            raise
        return report(status, proc.returncode, vanished)


def _read(status):
    """{suffix: {rank: text}} from the ranks' status files (see ruda.distributed._failfast)."""
    out = {}
    for name in os.listdir(status):
        r, _, what = name.partition(".")
        if not r.isdigit() or what.endswith(".tmp"):
            continue
        try:
            with open(os.path.join(status, name)) as f:
                out.setdefault(what, {})[int(r)] = f.read()
        except OSError:
            pass
    return out


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:                            # a zombie has ended too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _watch(proc, status, poll=0.1):
    """Wait for mpiexec.  A rank that vanished (no normal end, no failure report) while some
    rank is in ruda.distributed leaves that rank waiting for it forever: end the job.
    Returns the vanished ranks so found (empty when none)."""
    while True:
        try:
            proc.wait(timeout=poll)
            return []
        except subprocess.TimeoutExpired:
            pass
        files = _read(status)
        pids = {r: int(p) for r, p in files.get("pid", {}).items() if p.isdigit()}
        done = set(files.get("end", {})) | set(files.get("failed", {}))
        gone = sorted(r for r, p in pids.items() if r not in done and not _alive(p))
        if gone and files.get("init"):
            _end_job(proc, [p for r, p in pids.items() if r not in gone])
            return gone


def _end_job(proc, pids):
    """SIGTERM every live rank (mpiexec tears the job down when one dies by a signal);
    SIGKILL those left after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            pass
    proc.kill()
    proc.wait()


def report(status, rc, vanished=()):
    """Print why the job failed, from the ranks' status files; returns the exit status."""
    files = _read(status)
    say = lambda text: print(f"ruda.distributed.run: {text}", file=sys.stderr)  # noqa: E731
    failed = files.get("failed", {})
    if failed:
        first = None            # the first to fail, which the others' failures may follow
        when = {r: os.path.getmtime(os.path.join(status, f"{r}.failed")) for r in failed}
        for r in sorted(failed, key=lambda r: (when[r], r)):
            try:
                info = json.loads(failed[r])
            except ValueError:
                info = {"status": 1, "text": failed[r]}
            code = int(info.get("status") or 1)
            first = code if first is None else first
            say(f"rank {r} failed (exit status {code}):\n{str(info.get('text', '')).rstrip()}")
        return first
    started = set(files.get("pid", {}))
    lost = sorted(started - set(files.get("end", {})))
    if vanished:
        say(f"rank(s) {list(vanished)} ended without a normal exit (killed or os._exit) "
            f"while rank(s) {sorted(set(files.get('init', {})) - set(vanished))} used "
            f"ruda.distributed, which would wait for them forever; the job was ended")
        return rc or 1
    for r, text in sorted(files.get("timeout", {}).items()):
        say(f"rank {r}: {text.removeprefix(f'ruda.distributed: rank {r}: ')}")
    if files.get("timeout"):
        return rc or 1
    if lost and files.get("init"):  # said whatever mpiexec's status (0 or a signal's)
        say(f"rank(s) {lost} ended without a normal exit (killed or os._exit); the job was "
            f"torn down")
        return rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
