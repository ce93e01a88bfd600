"""Promotion of three or more dtypes (result_type, concat, stack): one promotion of the whole set,
the same in every order of the arguments, NumPy 2's ``np.result_type`` of the set (which is the
standard's answer wherever the standard's table defines every pair), and the half dtypes by the
written table (bfloat16 as float16).  A pairwise left-to-right fold is order dependent: int16,
uint16 then float32 goes through int32 to float64, float32 first stays float32."""
import itertools

import numpy as np
import pytest

import ruda as xp
from strategies import assert_result, rand, supported

HALVES = [xp.float16] + ([xp.bfloat16] if getattr(xp, "bfloat16", None) is not None else [])


def _all_dtypes(device):
    """The standard's dtypes of ``device`` and the half dtypes it has."""
    return supported(device) + [h for h in HALVES if device.backend.supports(np.dtype(h))]


def _oracle(triple):
    """NumPy 2's result_type of the set; with bfloat16 (not in NumPy) the float16 column of the
    written table, which bfloat16 shares; None where both half dtypes are in (checked apart)."""
    names = {d.name for d in triple}
    if {"float16", "bfloat16"} <= names:
        return None
    if "bfloat16" not in names:
        return np.result_type(*[np.dtype(d) for d in triple])
    out = np.result_type(*[np.float16 if d.name == "bfloat16" else np.dtype(d) for d in triple])
    return np.dtype(xp.bfloat16) if out == np.float16 else out


def _triples(device):
    return list(itertools.combinations_with_replacement(_all_dtypes(device), 3))


def _host(rng, d):
    """Two random values of dtype ``d`` (bfloat16 through float32: NumPy's rand has no bfloat16)."""
    if d in HALVES:
        return rand(rng, (2,), np.float32, -9, 9).astype(np.dtype(d))
    return rand(rng, (2,), np.dtype(d), 0 if d.kind == "u" else -9, 9)


def test_result_type_of_three_dtypes_does_not_depend_on_their_order(device):
    """Every permutation of every triple of the device's dtypes: one answer, NumPy's (bfloat16
    as float16), and one that each of the three promotes to pairwise."""
    bad = []
    for triple in _triples(device):
        got = {xp.result_type(*p) for p in itertools.permutations(triple)}
        if len(got) != 1:
            bad.append((triple, got, "order"))
            continue
        r = got.pop()
        want = _oracle(triple)
        if want is not None and r != want:
            bad.append((triple, r, want))
        if any(xp.result_type(r, d) != r for d in triple):
            bad.append((triple, r, "not an upper bound"))
        # arrays stand for their dtypes
        arrays = [xp.ones(1, dtype=d, device=device) for d in triple]
        if xp.result_type(*arrays[::-1]) != r:
            bad.append((triple, r, "arrays"))
    assert not bad, bad[:10]


def test_the_motivating_examples(device):
    a, b, c = (xp.asarray([1], dtype=d, device=device) for d in (xp.int16, xp.uint16, xp.float32))
    for arrays in itertools.permutations((a, b, c)):
        assert xp.concat(list(arrays)).dtype == xp.float32
        assert xp.stack(list(arrays)).dtype == xp.float32
    for p in itertools.permutations((xp.int8, xp.uint8, xp.float16)):
        assert xp.result_type(*p) == xp.float16
    # Python scalars follow the standard: they do not widen the dtypes of the arrays
    assert xp.result_type(xp.int16, xp.uint16, xp.float32, 1.5, 2) == xp.float32
    assert xp.result_type(xp.int8, xp.uint8, 1) == xp.int16
    # diff's prepend/append and asarray of a list of arrays promote the same way
    for x, p, q in itertools.permutations((a, b, c)):
        d = xp.diff(x, prepend=p, append=q)
        assert_result(d, np.diff(np.ones(1, np.float32), prepend=1, append=1), dtype=xp.float32)
        assert_result(xp.asarray([x, p, q]), np.ones((3, 1)), dtype=xp.float32)


def test_concat_and_stack_of_three_dtypes_match_numpy(device, rng):
    """Every triple of distinct dtypes, each in one of its orders (in turn): concat or stack give
    result_type's dtype (NumPy's) and NumPy's values, or, where the device lacks that dtype, a
    TypeError naming the function, the dtypes and the result."""
    distinct = list(itertools.combinations(_all_dtypes(device), 3))
    for k, triple in enumerate(distinct):
        order = list(itertools.permutations(triple))[k % 6]
        want = xp.result_type(*order)
        assert _oracle(order) in (None, want), (order, want)
        hosts = [_host(rng, d) for d in order]
        arrays = [xp.asarray(h, device=device) for h in hosts]
        fn = (xp.concat, xp.stack)[k % 2]
        if not device.backend.supports(np.dtype(want)):
            with pytest.raises(TypeError, match=rf"ruda\.{fn.__name__}: .* promote to {want}, "
                                                rf"which device '{device}' lacks"):
                fn(arrays)
            continue
        expect = (np.concatenate if fn is xp.concat else np.stack)(
            [h.astype(np.dtype(want)) for h in hosts])
        assert_result(fn(arrays), expect, dtype=np.dtype(want))
