"""Backend gaps the suite expects: (device kind, op) -> why the op is missing there.

A device backend raises ``NotImplementedError("ruda: 'op' is not implemented on device 'kind'
...")`` for an op it lacks. A test that hits a gap listed here is an expected failure with that
reason; a gap not listed fails the test, so an op that goes missing is never a quiet skip.
"""
import re

EXPECTED_GAPS = {
    ("cuda", "linalg.*"): "the linalg decompositions and solvers take no bfloat16 on cuda "
                          "(cast to float32 first)",
}

_GAP = re.compile(r"'([\w.]+)'.* is not implemented on device '(\w+)'")


def gap_of(exc):
    """(kind, op) of a backend gap exception, or None."""
    m = isinstance(exc, NotImplementedError) and _GAP.search(str(exc))
    return (m.group(2), m.group(1)) if m else None


def expected(exc):
    """The listed reason for backend gap ``exc``, or None (not a gap, or not listed)."""
    key = gap_of(exc)
    if key is None:
        return None
    kind, op = key
    return EXPECTED_GAPS.get(key) or EXPECTED_GAPS.get((kind, op.split(".")[0] + ".*"))
