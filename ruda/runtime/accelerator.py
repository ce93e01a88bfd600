"""The optional C accelerator: ``speedups`` is the module ``ruda._speedups`` (built at install
where a compiler exists), or None where it is not built or ``RUDA_PURE_PYTHON=1`` turns it off.
It imports no ruda module but the environment reader, so every layer may use it."""
from ruda.runtime import env

speedups = None
# read at import: a value that is not a switch warns and leaves the accelerator on
if not env.flag("RUDA_PURE_PYTHON", False, at_import=True):
    try:
        from ruda import _speedups as speedups
    except ImportError:     # not built (no compiler at install): the pure-Python paths
        speedups = None
