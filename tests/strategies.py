"""Shared hypothesis strategies and oracle helpers for the device-parametrized suite.

Inputs are made from a hypothesis-drawn seed with a NumPy RNG (fresh random values, never
zeros/ones), shapes and dtypes are drawn by hypothesis.  Dtypes are always restricted to what
the device under test supports (``xp.__array_namespace_info__().dtypes(device=...)``).
"""
import math

import numpy as np
import pytest
from hypothesis import strategies as st

import ruda as xp

KIND_NAMES = ("bool", "signed integer", "unsigned integer", "integral", "real floating",
              "complex floating", "numeric")


def supported(device, kind=None):
    """Standard dtypes of ``kind`` (a kind name, tuple of them, or None) supported on ``device``."""
    info = xp.__array_namespace_info__()
    return list(info.dtypes(device=device, kind=kind).values())


def default(device, kind):
    return xp.__array_namespace_info__().default_dtypes(device=device)[kind]


def dtypes(device, kind=None):
    """Strategy: a supported dtype of ``kind`` on ``device`` (skips when there is none)."""
    dts = supported(device, kind)
    if not dts:
        pytest.skip(f"no {kind} dtype on {device}")
    return st.sampled_from(dts)


def need(device, dtype):
    """Skip unless ``device`` supports ``dtype``."""
    if dtype not in supported(device):
        pytest.skip(f"{dtype} is not supported on {device}")
    return dtype


seeds = st.integers(0, 2**32 - 1)


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=5):
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def broadcastable_pair(max_dims=3, max_side=4):
    """Two shapes that broadcast together (some dimensions set to 1 or dropped)."""
    @st.composite
    def pair(draw):
        base = draw(shapes(0, max_dims, 1, max_side))

        def derive():
            n = draw(st.integers(0, len(base)))
            sub = list(base[len(base) - n:])
            for i in range(len(sub)):
                if draw(st.booleans()):
                    sub[i] = 1
            return tuple(sub)
        a, b = derive(), derive()
        if draw(st.booleans()):
            a = base
        return a, b
    return pair()


def rand(rng, shape, dtype, lo=-10.0, hi=10.0):
    """Random values of ``dtype`` in [lo, hi] (integers: rounded, clipped to the dtype's range)."""
    return np.asarray(_rand(rng, shape, dtype, lo, hi))


def _rand(rng, shape, dtype, lo, hi):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        ilo, ihi = max(math.ceil(lo), info.min), min(math.floor(hi), info.max)
        return rng.integers(ilo, ihi, size=shape, endpoint=True).astype(dtype)
    if dtype.kind == "f":
        return rng.uniform(lo, hi, size=shape).astype(dtype)
    re = rng.uniform(lo, hi, size=shape)
    im = rng.uniform(lo, hi, size=shape)
    return (re + 1j * im).astype(dtype)


def rand_nonzero(rng, shape, dtype, lo=-10.0, hi=10.0, eps=0.5):
    """Like ``rand`` but with |value| >= eps (integers: never 0)."""
    dtype = np.dtype(dtype)
    a = rand(rng, shape, dtype, lo, hi)
    if dtype.kind in "iu":
        return np.where(a == 0, np.asarray(1, dtype), a).astype(dtype)
    if dtype.kind == "b":
        return a
    fix = np.where(a.real < 0, -eps, eps)
    return np.where(np.abs(a) < eps, a + fix, a).astype(dtype)


def to_ruda(a, device):
    return xp.asarray(a, device=device)


def host64(a):
    """A widened host copy for oracle computation (float64 / complex128 for floating inputs)."""
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a


def tolerance(dtype, loose=False):
    """(rtol, atol) for comparing results of ``dtype`` against a float64 oracle."""
    dtype = np.dtype(dtype)
    k = 2.5 if loose else 1.0       # loose: transcendental functions (GPU libm: a few ulp more)
    if dtype in (np.float32, np.complex64):
        return 2e-5 * k, 2e-6 * k
    if dtype in (np.float64, np.complex128):
        return 1e-11 * k, 1e-12 * k
    return 0, 0


def assert_result(res, expected, dtype=None, loose=False, rtol=None, atol=None, equal_nan=True):
    """Check a ruda result's dtype, shape and values against a NumPy oracle value.

    ``dtype`` (default: ``expected.dtype``) is the dtype ``res`` must have; ``expected`` may be a
    widened (float64) oracle, compared with tolerances appropriate for ``dtype``.
    """
    from conftest import to_numpy
    expected = np.asarray(expected)
    dtype = expected.dtype if dtype is None else np.dtype(dtype)
    assert isinstance(res, xp.Array), f"expected a ruda Array, got {type(res).__name__}"
    assert res.dtype == dtype, f"dtype {res.dtype} != expected {dtype}"
    got = to_numpy(res)
    assert got.dtype == dtype
    assert got.shape == expected.shape, f"shape {got.shape} != expected {expected.shape}"
    if dtype.kind in "fc":
        r, a = tolerance(dtype, loose)
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        np.testing.assert_allclose(host64(got), host64(expected), rtol=r, atol=a, equal_nan=equal_nan)
    else:
        np.testing.assert_array_equal(got, expected.astype(dtype) if expected.dtype != dtype else expected)


layouts = st.sampled_from(["contiguous", "reversed", "strided", "transposed"])


def view(x, a, layout):
    """The same non-contiguous view of ruda array ``x`` and its NumPy twin ``a`` (views are a
    common source of device-kernel bugs: strides, offsets, negative steps)."""
    if layout == "contiguous" or a.ndim == 0:
        return x, a
    if layout == "reversed":
        key = (Ellipsis, slice(None, None, -1))
    elif layout == "strided":
        key = (Ellipsis, slice(1, None, 2)) if a.shape[-1] > 1 else (Ellipsis, slice(None))
    else:
        if a.ndim < 2:
            return x[::-1], a[::-1]
        return xp.matrix_transpose(x), np.swapaxes(a, -1, -2)
    return x[key], a[key]
