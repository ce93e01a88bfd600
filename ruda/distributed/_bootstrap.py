"""Each rank's entry under the launcher: ``python -m ruda.distributed._bootstrap [-m] target args``.

Runs the script (or ``-m`` module) as ``python script.py args`` would, as ``__main__``
with the script's folder first on ``sys.path``, and watches how it ends:

- an unhandled exception, or ``sys.exit`` with a non-zero status: the traceback (or
  status) is printed with the rank and the whole job ends at once (see ``_failfast``);
- a normal end after ``init()``: ``finalize()``, which meets the other ranks, so one
  still waiting in a collective fails at once instead of after the timeout;
- a normal end without ``init()``: the rank meets the others at their first step of
  ``init()``; if any is there, it would wait for this rank forever, so the job ends.
  When no rank calls ``init()`` they all meet here and the job ends normally.
"""
import os
import runpy
import sys

from ruda.distributed import _failfast

_SKIP = (os.path.abspath(__file__), runpy.__file__, runpy.run_path.__code__.co_filename)


def run(target, args, module=False):
    """Run the user's program in this process; returns normally only when it ended normally."""
    sys.argv = [target, *args]
    try:
        if module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.realpath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None or code == 0:
            return
        if isinstance(code, int):
            _failfast.fail(f"{target} exited with status {code}", code)
        _failfast.fail(str(code), 1)
    except BaseException as e:  # noqa: BLE001 - every way out is reported
        _failfast.fail(_failfast.describe(e, _SKIP), 1)


def finish():
    """After a normal end: meet the other ranks (finalize, or the check that none is inside
    init()), then tell the launcher."""
    from ruda.distributed import _state
    try:
        if _state.is_initialized():
            _state.finalize()
        elif "mpi4py.MPI" not in sys.modules:     # MPI the program ran itself is left alone
            _failfast.ended_without_init()
    except BaseException as e:  # noqa: BLE001 - the message says it all; the frames are ours
        _failfast.fail(f"at the end of the script: {type(e).__name__}: {e}", 1)
    _failfast.mark("end")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    module = bool(argv) and argv[0] == "-m"
    if module:
        argv = argv[1:]
    if not argv:
        sys.exit("usage: python -m ruda.distributed._bootstrap [-m] target [args ...]")
    _failfast.mark("pid", str(os.getpid()))
    run(argv[0], argv[1:], module)
    finish()


if __name__ == "__main__":
    main()
