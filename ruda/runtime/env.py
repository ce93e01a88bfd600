"""ruda's environment variables, read one way: every switch takes the same spellings and a
value that means nothing is named, never silently ignored.

* :func:`flag`: ``1/0``, ``true/false``, ``yes/no``, ``on/off`` in any case; unset or empty
  (spaces only too) means the default.
* :func:`number`: a finite int or float within a range; unset or empty means the default.
* :func:`text`: the stripped value, or None where unset or empty (paths, names, modes).

A wrong value raises ValueError naming the variable, its value and what it accepts, where the
variable is read when it takes effect (a call can fail).  Where it is read while ruda (or one
of its packages) is imported, an error would leave ruda unimportable: pass ``at_import=True``
and a wrong value is a RuntimeWarning with the same words, and the default applies.

Imports no ruda module, so every layer may read its variables through it.
"""
import importlib
import math
import os
import sys
import warnings

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
FLAG_SPELLINGS = "1/0, true/false, yes/no or on/off"
_RUDA_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_IMPORTLIB_DIR = os.path.dirname(os.path.abspath(importlib.__file__)) + os.sep  # import_module


def text(name):
    """The variable's value without surrounding spaces, or None where it is unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def invalid(name, value, expected):
    """The ValueError for ``name=value``, saying what ``name`` accepts."""
    return ValueError(f"ruda: {name}={value!r} is not valid: expected {expected}")


def bad_value(name, value, expected, default, at_import):
    """Raise :func:`invalid`'s error, or (``at_import``) warn with its words and return
    ``default``."""
    err = invalid(name, value, expected)
    if not at_import:
        raise err
    shown = ("on" if default else "off") if isinstance(default, bool) else repr(default)
    warn(f"{err}; using the default ({shown})")
    return default


def flag(name, default, *, at_import=False):
    """``name`` as a bool: 1/true/yes/on or 0/false/no/off (any case); unset or empty: ``default``."""
    value = text(name)
    if value is None:
        return default
    low = value.lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    return bad_value(name, value, FLAG_SPELLINGS, default, at_import)


def number(name, default, *, kind=float, low=None, high=None, unit="", at_import=False):
    """``name`` as a finite ``kind`` (int or float) in ``[low, high]``; unset or empty: ``default``.
    ``unit`` words the expectation (``"seconds"``)."""
    value = text(name)
    if value is None:
        return default
    what = ("an integer" if kind is int else "a number") if not unit else \
        f"{'an integer number' if kind is int else 'a number'} of {unit}"
    if low is not None and high is not None:
        what += f" from {low} to {high}"
    elif low is not None:
        what += f" >= {low}"
    elif high is not None:
        what += f" <= {high}"
    try:
        x = kind(value)
    except ValueError:
        return bad_value(name, value, what, default, at_import)
    if not math.isfinite(x) or (low is not None and x < low) or (high is not None and x > high):
        return bad_value(name, value, what, default, at_import)
    return x


def warn(message, category=RuntimeWarning):
    """``warnings.warn`` pointing at the first frame outside ruda and importlib: the user's line
    (an import of ruda, or the call that reached ruda), not a line of ruda's that the user
    cannot act on."""
    frame, level = sys._getframe(1), 2     # the caller, which is stacklevel 2 from here
    while frame is not None and frame.f_code.co_filename.startswith((_RUDA_DIR, _IMPORTLIB_DIR)):
        frame = frame.f_back
        # the warnings module skips importlib's frames when it counts levels: so do we
        while frame is not None and _importlib_frame(frame):
            frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _importlib_frame(frame):
    name = frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name
