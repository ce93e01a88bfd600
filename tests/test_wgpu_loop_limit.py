"""Reductions longer than one invocation may loop: lavapipe ends a shader invocation after
65,535 loop iterations in all (llvmpipe's loop limiter), silently, so on a CPU adapter no
reduction kernel may walk that far (``_reductions.RED_CPU_MAX_STEPS``).  Values, indices
(first maximum, first NaN) and dtypes against NumPy, on every device.
"""
import numpy as np
import pytest

import ruda as xp
from strategies import assert_result, default, rand, supported

OPS = ("sum", "mean", "max", "min", "argmax", "argmin", "any", "all", "count_nonzero")


def _from_rows(b, shape, axis):
    """The array of ``shape`` whose (outputs, reduced) rows along ``axis`` are ``b``."""
    if axis is None:
        return b.reshape(shape)
    rest = tuple(n for d, n in enumerate(shape) if d != axis)
    return np.ascontiguousarray(np.moveaxis(b.reshape(rest + (shape[axis],)), -1, axis))


def _sum_dtype(device, dt):
    """The standard's sum dtype: integers narrower than the default integer widen to it."""
    dt, dint = np.dtype(dt), np.dtype(default(device, "integral"))
    if dt.kind == "b":
        return dint
    if dt.kind in "iu" and dt.itemsize < dint.itemsize:
        return np.dtype(f"{'u' if dt.kind == 'u' else ''}int{8 * dint.itemsize}")
    return dt


def _tailed(shape, axis):
    """uint8 values in [1, 3], but each output's last two elements along the reduced axis are
    0 and 9 (in turn): every reduction of every output depends on its tail."""
    R = shape[axis] if axis is not None else int(np.prod(shape))
    b = np.random.default_rng(3).integers(1, 4, (int(np.prod(shape)) // R, R), dtype=np.uint8)
    b[0::2, -2:] = (0, 9)
    b[1::2, -2:] = (9, 0)
    return _from_rows(b, shape, axis)


def _check(device, op, a, axis):
    """``op`` of ``a`` (as its dtype asks: mean of float32, any of a == 0, all of a != 0) along
    ``axis``: values and dtype as NumPy's."""
    dint = np.dtype(default(device, "integral"))
    if op == "mean":
        a = a.astype(np.float32)
        assert_result(xp.mean(xp.asarray(a, device=device), axis=axis),
                      np.mean(a.astype(np.float64), axis=axis), dtype=np.float32)
        return
    if op in ("any", "all"):
        a = (a == 0) if op == "any" else (a != 0)
    x = xp.asarray(a, device=device)
    got = getattr(xp, op)(x, axis=axis)
    want_dt = {"argmax": np.dtype(default(device, "indexing")), "argmin": np.dtype(default(device, "indexing")),
               "count_nonzero": dint, "sum": _sum_dtype(device, a.dtype)}.get(op, a.dtype)
    want = getattr(np, op)(a.astype(want_dt) if op == "sum" else a, axis=axis)
    assert_result(got, np.asarray(want), dtype=want_dt)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape, axis", [((66000, 256), 0), ((256, 66000), 1), ((66000, 256), None)])
def test_reductions_past_the_loop_limit(device, op, shape, axis):
    """Each of >= 256 outputs over 66,000 elements (one invocation each on a GPU: 66,000
    iterations), and all 16.9M at once (a workgroup: 66,000 iterations per invocation for the
    index reductions): lavapipe had stopped at 65,535 (sum 65535 for 70000 ones)."""
    _check(device, op, _tailed(shape, axis), axis)


@pytest.mark.parametrize("op", ("argmax", "argmin"))
def test_full_index_reduction_past_2_to_24(device, op):
    """argmax over 2**24 + 5 elements: the extreme in the last one (it was index 0)."""
    a = np.ones(2**24 + 5, np.uint8)
    a[-1] = 9 if op == "argmax" else 0
    _check(device, op, a, None)


@pytest.mark.parametrize("shape, axis, layout", [
    ((5000, 3), 0, "contiguous"), ((3, 5000), 1, "contiguous"), ((3000, 300), 0, "contiguous"),
    ((40, 300), 0, "contiguous"), ((5000,), None, "contiguous"), ((90, 60), None, "transposed"),
    ((300, 3000), 1, "transposed")])
def test_reductions_in_parts_with_a_tiny_loop_limit(device, monkeypatch, shape, axis, layout):
    """The CPU adapter's choice with a limit of 16 steps: serial reductions as a workgroup per
    output, those split into parts -- index reductions too, where the first best part must
    win: ties (small integers) and NaN (the first) across parts, all -inf; strided views
    whose reduced axes do not collapse.  On other adapters and devices: the usual kernels."""
    from ruda.backends.wgpu import _reductions
    monkeypatch.setattr(_reductions, "RED_CPU_MAX_STEPS", 16)
    rng = np.random.default_rng(7)
    R = shape[axis] if axis is not None else int(np.prod(shape))
    nout = int(np.prod(shape)) // R
    for dt in supported(device, ("integral", "real floating")):
        b = rand(rng, (nout, R), dt, -3, 3)
        if np.dtype(dt).kind == "f":
            b = np.round(b)
            b[0, [R - 2, 7, R - 1]] = np.nan          # the first NaN wins (index 7)
            if nout > 1:
                b[1] = -np.inf
        a = _from_rows(b, shape, axis)
        if layout == "transposed":      # the same values through a transposed view
            x = xp.asarray(np.ascontiguousarray(a.T), device=device).T
        else:
            x = xp.asarray(a, device=device)
        for op in ("argmax", "argmin", "max", "min", "sum"):
            got = getattr(xp, op)(x, axis=axis)
            want = getattr(np, op)(a.astype(np.float64) if a.dtype.kind == "f" else a, axis=axis)
            if op.startswith("arg"):
                want_dt = np.dtype(default(device, "indexing"))
            elif op == "sum":
                want_dt = _sum_dtype(device, dt)
                want = want if a.dtype.kind == "f" else np.sum(a.astype(want_dt), axis=axis)
            else:
                want_dt = a.dtype
            assert_result(got, np.asarray(want), dtype=want_dt)
        for op in ("any", "all", "count_nonzero"):
            got = getattr(xp, op)(x, axis=axis)
            want = getattr(np, op)(a, axis=axis)
            assert_result(got, np.asarray(want),
                          dtype=np.dtype(default(device, "integral")) if op == "count_nonzero" else np.bool_)


def test_reduction_of_a_broadcast_view_past_2_to_32_elements_says_so(device):
    """A broadcast view may hold 2**32 elements that no buffer binds: a kernel indexes fewer, so
    the reduction names the limit (it failed with NumPy's uint32 OverflowError)."""
    if device.kind != "wgpu":
        pytest.skip("wgpu kernels index elements with 32 bits")
    b = xp.broadcast_to(xp.asarray([2.0], dtype=xp.float32, device=device), (65536, 65537))
    with pytest.raises(ValueError, match=r"over 4295032832 elements: kernels index at most 2\*\*32 - 1"):
        xp.sum(b)
    assert float(xp.sum(b[:4096])) == 2.0 * 4096 * 65537      # a part is short enough
