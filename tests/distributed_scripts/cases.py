"""Inputs and the case list shared by the multi-rank worker and the pytest checks.

Each rank's input is a pure function of (case, dtype, rank), so the test process
recomputes every rank's input and the expected result with NumPy.
"""
import zlib

import numpy as np

import ruda

DTYPES = [str(np.dtype(d)) if d != ruda.bfloat16 else "bfloat16"
          for d in ruda._dtypes.all_dtypes + ruda._dtypes.extension_dtypes]
SHAPE = (4, 8)          # divisible by 2 and 4 along both axes
OPS = ("sum", "prod", "min", "max", "mean")


def np_dtype(name):
    return ruda.bfloat16 if name == "bfloat16" else np.dtype(name)


def valid_ops(name):
    dt = np_dtype(name)
    if dt == np.bool_:
        return ("min", "max")
    ops = ["sum", "prod"]
    if dt.kind != "c":
        ops += ["min", "max"]
    if dt.kind in "fcV":
        ops.append("mean")
    return tuple(ops)


def make(case, name, rank, shape=SHAPE):
    """Rank ``rank``'s input for ``case`` as a NumPy array of dtype ``name``."""
    rng = np.random.default_rng(zlib.crc32(f"{case}|{name}|{rank}".encode()))
    dt = np_dtype(name)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo = -3 if dt.kind == "i" else 0
        return rng.integers(lo, 4, size=shape).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(dt)
    if "big" in case:                   # float16: a sum past its range, a mean within it
        return rng.uniform(30000, 40000, shape).astype(dt)
    x = rng.uniform(-2, 2, shape).astype(dt)
    if "nan" in case:                   # NaNs at different places on each rank
        x.flat[rank::5] = np.nan
    return x


def cases(name):
    """(case id, collective, keyword arguments) run for dtype ``name``."""
    out = [(f"all_reduce-{op}", "all_reduce", {"op": op}) for op in valid_ops(name)]
    out += [("reduce-max-root-last", "reduce", {"op": valid_ops(name)[-1], "root": -1}),
            ("broadcast-root1", "broadcast", {"root": 1}),
            ("broadcast-none", "broadcast", {"root": 0, "none": True}),
            ("all_gather-ax0", "all_gather", {"axis": 0}),
            ("all_gather-ax1", "all_gather", {"axis": 1}),
            ("gather-ax1-root0", "gather", {"axis": 1, "root": 0}),
            ("scatter-ax0", "scatter", {"axis": 0, "root": 0}),
            ("scatter-ax1-none", "scatter", {"axis": 1, "root": 1, "none": True}),
            ("all_to_all-ax0", "all_to_all", {"axis": 0}),
            ("all_to_all-ax1", "all_to_all", {"axis": 1}),
            ("send-recv-ring", "ring", {}),
            ("async-all_gather", "all_gather", {"axis": 0, "async_op": True})]
    if np_dtype(name).kind in "fV":    # NaN propagates through min and max, from any rank
        out += [("all_reduce-max-nan", "all_reduce", {"op": "max"}),
                ("all_reduce-min-nan", "all_reduce", {"op": "min"}),
                ("async-all_reduce-max-nan", "all_reduce", {"op": "max", "async_op": True}),
                ("reduce_scatter-min-nan", "reduce_scatter", {"op": "min", "axis": 0})]
    if name == "float16":
        out += [("all_reduce-mean-big", "all_reduce", {"op": "mean"})]
    rs_op = "max" if name == "bool" else "sum"
    out += [("reduce_scatter-ax1", "reduce_scatter", {"op": rs_op, "axis": 1}),
            ("async-all_reduce", "all_reduce", {"op": rs_op, "async_op": True})]
    return out


def engine_cases(name):
    """Cases for the NCCL engine itself (axis 0, native arrays; see nccl_engine_check.py)."""
    ops = valid_ops(name)
    last = "max" if name == "bool" else "prod"
    out = [(f"nccl-all_reduce-{op}", "all_reduce", {"op": op}) for op in ops]
    return out + [("nccl-async-all_reduce", "all_reduce", {"op": ops[0], "async_op": True}),
                  ("nccl-reduce", "reduce", {"op": last, "root": -1}),
                  ("nccl-broadcast", "broadcast", {"root": 1}),
                  ("nccl-all_gather", "all_gather", {}),
                  ("nccl-gather", "gather", {"root": 0}),
                  ("nccl-scatter", "scatter", {"root": 0}),
                  ("nccl-reduce_scatter", "reduce_scatter", {"op": ops[0]}),
                  ("nccl-reduce_scatter-last", "reduce_scatter", {"op": last}),
                  ("nccl-all_to_all", "all_to_all", {}),
                  ("nccl-ring", "ring", {}),
                  ("nccl-self", "self", {})]


def _reduce(xs, op, dt):
    stack = np.stack(xs)
    if dt in (np_dtype("bfloat16"), np.float16):      # reduced in float32, rounded once
        return _reduce([x.astype(np.float32) for x in xs], op, np.dtype(np.float32)).astype(dt)
    if op == "sum":
        return np.sum(stack, axis=0, dtype=dt)
    if op == "prod":
        return np.prod(stack, axis=0, dtype=dt)
    if op == "mean":
        return (np.sum(stack, axis=0, dtype=dt) / len(xs)).astype(dt)
    return (np.min if op == "min" else np.max)(stack, axis=0)


def expected(fn, kw, case, name, w, r):
    xs = [make(case, name, k) for k in range(w)]
    dt = np_dtype(name)
    root = kw.get("root", 0) % w
    ax = kw.get("axis", 0)
    if fn == "all_reduce":
        return _reduce(xs, kw["op"], dt)
    if fn == "reduce":
        return _reduce(xs, kw["op"], dt) if r == root else None
    if fn == "broadcast":
        return xs[root]
    if fn == "all_gather":
        return np.concatenate(xs, axis=ax)
    if fn == "gather":
        return np.concatenate(xs, axis=ax) if r == root else None
    if fn == "scatter":
        return np.split(xs[root], w, axis=ax)[r]
    if fn == "all_to_all":
        return np.concatenate([np.split(xs[j], w, axis=ax)[r] for j in range(w)], axis=ax)
    if fn == "reduce_scatter":
        return np.split(_reduce(xs, kw["op"], dt), w, axis=ax)[r]
    if fn == "ring":
        return xs[(r - 1) % w]
    if fn == "self":
        return xs[r]
    raise AssertionError(fn)


def _tol(name):
    return {"float32": 1e-5, "complex64": 1e-5, "float64": 1e-12, "complex128": 1e-12,
            "float16": 2e-3, "bfloat16": 2e-2}.get(name)


def compare(got, want, name):
    if want is None:
        assert got is None
        return
    assert got is not None
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    tol = _tol(name)
    if tol is None:
        np.testing.assert_array_equal(got, want)
    else:
        f = np.float32 if name == "bfloat16" else None
        np.testing.assert_allclose(got.astype(f) if f else got, want.astype(f) if f else want,
                                   rtol=tol, atol=tol)
