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
    return rng.uniform(-2, 2, shape).astype(dt)


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
    rs_op = "max" if name == "bool" else "sum"
    out += [("reduce_scatter-ax1", "reduce_scatter", {"op": rs_op, "axis": 1}),
            ("async-all_reduce", "all_reduce", {"op": rs_op, "async_op": True})]
    return out
