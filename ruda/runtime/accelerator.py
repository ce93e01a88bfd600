"""The optional C accelerator: ``speedups`` is the module ``ruda._speedups`` (built at install
where a compiler exists), or None where it is not built or ``RUDA_PURE_PYTHON=1`` turns it off.
It imports no ruda module, so every layer may use it."""
import os

speedups = None
if os.environ.get("RUDA_PURE_PYTHON", "") in ("", "0"):
    try:
        from ruda import _speedups as speedups
    except ImportError:     # not built (no compiler at install): the pure-Python paths
        speedups = None
