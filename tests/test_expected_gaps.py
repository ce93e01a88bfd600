"""The backend-gap list: a listed gap is recognised with its reason, anything else is not."""
import pytest

import expected_gaps
from conftest import _listed_gaps
from ruda.backends import OPS, Backend


def _gap(kind, op):
    """The NotImplementedError a backend of ``kind`` raises for an op it lacks (the real text)."""
    class Lacking(Backend):
        pass
    Lacking.kind = kind
    with pytest.raises(NotImplementedError) as info:
        getattr(object.__new__(Lacking), op)
    return info.value


def test_listed_and_unlisted_gaps():
    op = sorted(OPS)[0]
    assert expected_gaps.gap_of(_gap("wgpu", op)) == ("wgpu", op)
    assert expected_gaps.expected(_gap("wgpu", op)) is None            # not listed: the test fails
    assert _listed_gaps(_gap("wgpu", op)) == []
    # the text of cuda's bfloat16 linalg gap (a wildcard entry)
    listed = NotImplementedError("ruda: 'linalg.cholesky' is not implemented on device 'cuda' "
                                 "for bfloat16; cast to float32 first")
    assert expected_gaps.expected(listed) == expected_gaps.EXPECTED_GAPS[("cuda", "linalg.*")]
    assert _listed_gaps(ExceptionGroup("two", [listed, listed])) == [expected_gaps.expected(listed)] * 2
    assert _listed_gaps(ExceptionGroup("mixed", [listed, ValueError("x")])) == []
    assert expected_gaps.expected(ValueError("'getitem' is not implemented on device 'wgpu'")) is None
