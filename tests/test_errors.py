"""Bad input gives clear errors: a dtype outside a function's category is a TypeError naming the
function and the dtype; a shape mismatch is a ValueError naming both shapes; non-arrays are
TypeErrors naming the argument; a dtype the device lacks is a TypeError listing what it has."""
import numpy as np
import pytest

import ruda as xp
from strategies import rand, supported
from test_elementwise import BINARY, UNARY

# a dtype kind outside each category, in order of preference
OUTSIDE = {
    ("integral", "real floating", "complex floating"): ["bool"],
    ("real floating", "complex floating"): ["integral", "bool"],
    ("real floating",): ["complex floating", "integral", "bool"],
    ("integral", "real floating"): ["complex floating", "bool"],
    ("integral",): ["real floating", "bool"],
    ("integral", "bool"): ["real floating", "complex floating"],
    ("bool",): ["real floating", "integral"],
    ("complex floating",): ["real floating", "integral"],
    ("signed integer", "real floating", "complex floating"): ["bool"],
}


def _bad_dtypes(device, kinds):
    out = []
    for k in OUTSIDE[kinds]:
        out += supported(device, k)[:1]
    return out


def _arr(device, dt, shape=(3,)):
    return xp.asarray(rand(np.random.default_rng(0), shape, dt, 1, 5), device=device)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_category_error(device, name):
    kinds = UNARY[name][0]
    if name == "negative":
        kinds = ("integral", "real floating", "complex floating")
    for dt in _bad_dtypes(device, kinds):
        with pytest.raises(TypeError, match=rf"ruda\.{name}: x must have an? .* dtype; got {dt.name}"):
            getattr(xp, name)(_arr(device, dt))


@pytest.mark.parametrize("name", sorted(n for n in BINARY if n not in ("equal", "not_equal")))  # all dtypes
def test_binary_category_error(device, name):
    kinds = BINARY[name][0]
    for dt in _bad_dtypes(device, kinds):
        x = _arr(device, dt)
        with pytest.raises(TypeError, match=rf"ruda\.{name}: x[12] must have an? .* dtype; got {dt.name}"):
            getattr(xp, name)(x, x)


@pytest.mark.parametrize("name", ["add", "atan2", "bitwise_and", "less", "logical_or", "pow"])
def test_binary_shape_mismatch(device, name):
    kinds = BINARY[name][0]
    dt = supported(device, kinds)[0]
    with pytest.raises(ValueError, match=rf"ruda\.{name}: shapes \(2, 3\), \(2,\) cannot be broadcast together"):
        getattr(xp, name)(_arr(device, dt, (2, 3)), _arr(device, dt, (2,)))


@pytest.mark.parametrize("name", ["sin", "add", "sum", "sort", "reshape", "matmul"])
def test_non_array_arguments(device, name):
    args = {"sin": ([1.0],), "add": ([1.0], [2.0]), "sum": ([1, 2],), "sort": ([3, 1],),
            "reshape": ([1, 2], (2,)), "matmul": ([[1.0]], [[1.0]])}[name]
    with pytest.raises(TypeError, match=rf"ruda\.{name}: .*must be a ruda array.*list"):
        getattr(xp, name)(*args)


def test_two_python_scalars_error():
    with pytest.raises(TypeError, match=r"ruda\.add: at least one of x1, x2 must be a ruda array"):
        xp.add(1, 2)


def test_unsupported_python_operand(device):
    x = _arr(device, supported(device, "real floating")[0])
    with pytest.raises(TypeError, match=r"ruda\.add: x2 must be a ruda array, a Python scalar or a NumPy scalar; got str"):
        xp.add(x, "a")


def test_dtype_argument_errors(device):
    with pytest.raises(TypeError, match=r"ruda\.zeros: dtype must be a ruda dtype such as ruda\.float32; got 'floaty'"):
        xp.zeros(3, dtype="floaty", device=device)
    with pytest.raises(TypeError, match=r"ruda\.ones: dtype must be a ruda dtype"):
        xp.ones(3, dtype=object, device=device)
    missing = [d for d in (xp.float64, xp.complex128, xp.int64, xp.uint64, xp.float32)
               if d not in supported(device)]
    for d in missing:
        with pytest.raises(TypeError, match=rf"dtype={d.name} is not supported on device '{device}'( \(the adapter lacks the [a-z0-9-]+ feature\))? \(supported: "):
            xp.zeros(3, dtype=d, device=device)


def test_axis_errors(device):
    x = _arr(device, supported(device, "real floating")[0], (2, 3))
    with pytest.raises(IndexError, match=r"ruda\.flip: axis=-3 is out of bounds for an array of 2 dimensions"):
        xp.flip(x, axis=-3)
    with pytest.raises(TypeError, match=r"ruda\.sum: axis must be an integer; got float"):
        xp.sum(x, axis=1.0)
    with pytest.raises(ValueError, match=r"ruda\.unstack: x must have at least one dimension"):
        xp.unstack(xp.sum(x))


def test_shape_argument_errors(device):
    with pytest.raises(TypeError, match=r"ruda\.zeros: shape must be a tuple of integers"):
        xp.zeros((2, 1.5), device=device)
    with pytest.raises(TypeError, match=r"ruda\.empty: shape must be an integer or a tuple of integers"):
        xp.empty("3", device=device)


# function -> (call on an array x, a dtype kind outside the function's category)
OTHER = {
    "clip": (lambda x: xp.clip(x, 0, 1), "complex floating"),
    "argmax": (xp.argmax, "complex floating"),
    "argmin": (xp.argmin, "bool"),
    "max": (xp.max, "complex floating"),
    "min": (xp.min, "bool"),
    "mean": (xp.mean, "integral"),
    "var": (xp.var, "complex floating"),
    "std": (xp.std, "integral"),
    "sort": (xp.sort, "bool"),
    "argsort": (xp.argsort, "complex floating"),
    "searchsorted": (lambda x: xp.searchsorted(x, x), "complex floating"),
    "matmul": (lambda x: xp.matmul(x, x), "bool"),
    "vecdot": (lambda x: xp.vecdot(x, x), "bool"),
    "tensordot": (lambda x: xp.tensordot(x, x, axes=1), "bool"),
    "linalg.outer": (lambda x: xp.linalg.outer(x, x), "bool"),
    "linalg.inv": (lambda x: xp.linalg.inv(xp.reshape(x[:1], (1, 1))), "integral"),
    "linalg.vector_norm": (xp.linalg.vector_norm, "integral"),
    "linalg.trace": (lambda x: xp.linalg.trace(xp.reshape(x[:1], (1, 1))), "bool"),
    "fft.fft": (xp.fft.fft, "real floating"),
    "fft.rfft": (xp.fft.rfft, "integral"),
}


@pytest.mark.parametrize("name", sorted(OTHER))
def test_other_function_category_error(device, name):
    call, kind = OTHER[name]
    dts = supported(device, kind)
    if not dts:
        pytest.skip(f"no {kind} dtype on {device}")
    dt = dts[0]
    with pytest.raises(TypeError, match=rf"ruda\.{name}: x1? must have an? .* dtype; got {dt.name}"):
        call(_arr(device, dt))


def test_out_of_range_python_int_names_the_function(device):
    x = xp.asarray([1, 2], dtype=xp.uint8, device=device)
    with pytest.raises(OverflowError, match=r"ruda\.add: .*300.*uint8"):
        x + 300
    with pytest.raises(OverflowError, match=r"ruda\.__setitem__: .*300.*uint8"):
        x[0] = 300
