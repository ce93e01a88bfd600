"""Launcher: ``python -m ruda.distributed.run -n 4 script.py [args]``.

Starts ``-n`` ranks of this Python running ``script.py`` (or ``-m module``)
through the installed ``mpiexec``, with the environment passed through.
``--hosts a,b`` and ``--hostfile FILE`` go to mpiexec, so the same command
spans machines.  The exit status is mpiexec's, or 1 when a rank that called
``ruda.distributed.init`` vanished without a normal exit (mpiexec may tear the job
down with status 0 then); such ranks are named on stderr whatever the status.
mpiexec is, in order: ``$RUDA_MPIEXEC``, the one next to this Python (the ``mpich``
wheel installs it there), the first on ``PATH``.
"""
import argparse
import os
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
    return cmd + [sys.executable] + (["-m"] if module else []) + [target] + list(args)


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
        rc = subprocess.call(cmd, env={**os.environ, "RUDA_DIST_STATUS_DIR": status})
        lost = _vanished(status)        # said whatever mpiexec's status (0 or a signal's)
        return rc or lost


def _vanished(status):
    """1 if a rank started ruda.distributed but never exited normally (killed, os._exit):
    mpiexec tears the job down then, sometimes with status 0.  Single-machine runs only."""
    files = os.listdir(status)
    lost = sorted(int(f.split(".")[0]) for f in files
                  if f.endswith(".started") and f.replace(".started", ".done") not in files)
    if lost:
        print(f"ruda.distributed.run: rank(s) {lost} ended without a normal exit "
              f"(killed or os._exit); the job was torn down", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
