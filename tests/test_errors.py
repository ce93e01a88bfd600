"""Bad input gives clear errors: a dtype outside a function's category is a TypeError naming the
function and the dtype; a shape mismatch is a ValueError naming both shapes; non-arrays are
TypeErrors naming the argument; a dtype the device lacks is a TypeError listing what it has."""
import subprocess
import sys

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


def test_missing_bfloat16_is_named():
    """Without ml_dtypes there is no ruda.bfloat16 (a None would read as dtype=None, the
    default dtype): the AttributeError says what to install, and the rest works."""
    block = ("import sys\n"
             "class B:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name.split('.')[0] == 'ml_dtypes': raise ImportError('blocked')\n"
             "sys.meta_path.insert(0, B())\n")
    code = block + ("import ruda as xp\n"
                    "from ruda import *\n"
                    "assert getattr(xp, 'bfloat16', None) is None\n"
                    "assert xp.zeros(2, dtype=xp.float16).dtype == xp.float16\n"
                    "xp.bfloat16\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "AttributeError: module 'ruda' has no attribute 'bfloat16': it needs ml_dtypes, which " \
           "is not installed (pip install ruda[bf16])" in r.stderr, r.stderr


def test_host_index_and_power_errors_name_the_function():
    """NumPy's own errors on the host come through prefixed with the ruda function."""
    x = xp.asarray([10.0, 20.0, 30.0, 40.0, 50.0], device="cpu")
    i = xp.asarray([7], device="cpu")
    cases = [(IndexError, r"ruda\.take: index 7 is out of bounds", lambda: xp.take(x, i)),
             (IndexError, r"ruda\.take_along_axis: index 7 is out", lambda: xp.take_along_axis(x, i)),
             (ValueError, r"ruda\.searchsorted: Sorter index out of range",
              lambda: xp.searchsorted(x, xp.asarray([25.0, 45.0]), sorter=xp.asarray([0, 1, 2, 3, 9]))),
             (ValueError, r"ruda\.pow: Integers to negative integer powers",
              lambda: xp.asarray([2, 3]) ** -1),
             (ValueError, r"ruda\.pow: Integers to negative", lambda: xp.pow(2, xp.asarray([1, -1])))]
    for exc, pattern, call in cases:
        with pytest.raises(exc, match=pattern):
            call()


def test_axis_errors(device):
    x = _arr(device, supported(device, "real floating")[0], (2, 3))
    with pytest.raises(IndexError, match=r"ruda\.flip: axis=-3 is out of bounds for an array of 2 dimensions"):
        xp.flip(x, axis=-3)
    with pytest.raises(TypeError, match=r"ruda\.sum: axis must be an integer; got float"):
        xp.sum(x, axis=1.0)
    for fn, call in [("sum", lambda: xp.sum(x, axis=True)), ("mean", lambda: xp.mean(x, axis=(np.True_,))),
                     ("permute_dims", lambda: xp.permute_dims(x, (True, 0))),
                     ("concat", lambda: xp.concat([x, x], axis=False))]:     # a bool is no axis
        with pytest.raises(TypeError, match=rf"ruda\.{fn}: (axis|axes) must be an integer; got bool"):
            call()
    with pytest.raises(ValueError, match=r"ruda\.unstack: x must have at least one dimension"):
        xp.unstack(xp.sum(x))


def test_shape_argument_errors(device):
    with pytest.raises(TypeError, match=r"ruda\.zeros: shape must be a tuple of integers"):
        xp.zeros((2, 1.5), device=device)
    with pytest.raises(TypeError, match=r"ruda\.empty: shape must be an integer or a tuple of integers"):
        xp.empty("3", device=device)


@pytest.mark.parametrize("call,pattern", [
    (lambda d, x: xp.linspace(0, 1, 5.0, device=d), r"linspace: num must be an integer; got float"),
    (lambda d, x: xp.eye(3.0, device=d), r"eye: n_rows must be an integer; got float"),
    (lambda d, x: xp.eye(3, 2.0, device=d), r"eye: n_cols must be an integer; got float"),
    (lambda d, x: xp.eye(3, k=1.0, device=d), r"eye: k must be an integer; got float"),
    (lambda d, x: xp.tril(x, k=0.5), r"tril: k must be an integer; got float"),
    (lambda d, x: xp.triu(x, k="1"), r"triu: k must be an integer; got str"),
    (lambda d, x: xp.reshape(x, (2.0, 2)), r"reshape: each shape entry must be an integer"),
    (lambda d, x: xp.tile(x, (1.5,)), r"tile: each repetition must be an integer; got float"),
    (lambda d, x: xp.repeat(x, 2.0), r"repeat: repeats must be an integer; got float"),
    (lambda d, x: xp.roll(x, 1.0, axis=(0, 1)), r"roll: shift must be an integer; got float"),
    (lambda d, x: xp.diff(x, n=1.0), r"diff: n must be an integer; got float"),
    (lambda d, x: xp.tensordot(x, x, axes=1.0), r"tensordot: axes must be an integer; got float"),
    (lambda d, x: xp.linalg.matrix_power(x, 1.5), r"linalg\.matrix_power: n must be an integer"),
    (lambda d, x: xp.linalg.diagonal(x, offset=1.0), r"linalg\.diagonal: offset must be an integer"),
    (lambda d, x: xp.linalg.trace(x, offset=1.0), r"linalg\.trace: offset must be an integer"),
])
def test_integer_argument_errors(device, call, pattern):
    """A non-integer where an integer goes: a TypeError naming the function and argument."""
    x = _arr(device, supported(device, "real floating")[0], (2, 2))
    with pytest.raises(TypeError, match=r"ruda\." + pattern):
        call(device, x)


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
    "fft.fft": (xp.fft.fft, "integral"),
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


# NumPy/CuPy/PyTorch spellings: the error names the function, what was typed and the standard's
# spelling.  (function, args, kwargs, pattern of the TypeError's message)
def _keyword_cases(x, m, c):
    return [
        (xp.std, (x,), {"ddof": 1}, r"ruda\.std: unexpected keyword argument 'ddof'; the array API spells it "
                                    r"correction= \(correction=1 is NumPy's ddof=1\)"),
        (xp.var, (x,), {"unbiased": True}, r"ruda\.var: .*'unbiased'; .*spells it correction="),
        (xp.sum, (x,), {"keepdim": True}, r"ruda\.sum: unexpected keyword argument 'keepdim'; the array API spells it keepdims="),
        (xp.max, (x,), {"dim": 0}, r"ruda\.max: .*'dim'; the array API spells it axis="),
        (xp.permute_dims, (m,), {"axis": (1, 0)}, r"ruda\.permute_dims: .*'axis'; the array API spells it axes="),
        (xp.concat, ([x, x],), {"axes": 0}, r"ruda\.concat: .*'axes'; the array API spells it axis="),
        (xp.reshape, (m,), {"newshape": (6,)}, r"ruda\.reshape: .*'newshape'; the array API spells it shape="),
        (xp.sort, (x,), {"kind": "stable"}, r"ruda\.sort: .*'kind'; the array API spells it stable="),
        (xp.argsort, (x,), {"kind": "stable"}, r"ruda\.argsort: .*'kind'; the array API spells it stable="),
        (xp.clip, (x,), {"a_min": 0}, r"ruda\.clip: .*'a_min'"),
        (xp.roll, (x,), {"shift": 1, "shifts": 1}, r"ruda\.roll: .*'shifts'; the array API spells it shift="),
        (xp.linalg.pinv, (m,), {"rcond": 1e-3}, r"ruda\.linalg\.pinv: .*'rcond'; the array API spells it rtol="),
        (xp.linalg.matrix_rank, (m,), {"tol": 1e-3}, r"ruda\.linalg\.matrix_rank: .*'tol'; NumPy's tol is "
                                                    r"an absolute cut-off; .*rtol = tol / max\("),
        (xp.round, (x,), {"decimals": 1}, r"ruda\.round: .*'decimals'; ruda\.round rounds to integers"),
        (xp.fft.fftn, (c,), {"axis": 0}, r"ruda\.fft\.fftn: .*'axis'; the array API spells it axes="),
        (xp.sum, (x,), {"out": x}, r"ruda\.sum: .*'out'; ruda functions return a new array"),
        (xp.add, (x, x), {"out": x}, r"ruda\.add: .*'out'; ruda functions return a new array"),
        (xp.mean, (x,), {"dtype": xp.float64}, r"ruda\.mean: .*'dtype'; cast first with ruda\.astype"),
        (xp.unique_values, (x,), {"return_counts": True}, r"ruda\.unique_values: .*ruda\.unique_counts"),
        (xp.zeros, (3,), {"order": "C"}, r"ruda\.zeros: .*'order'; ruda arrays have no memory order"),
        (xp.sum, (), {"x": x}, r"ruda\.sum: x is positional-only: pass it without x="),
        (xp.sum, (), {"a": x}, r"ruda\.sum: .*'a'; pass the array positionally"),
        (xp.sum, (x,), {"keepdimz": True}, r"ruda\.sum: .*'keepdimz'; did you mean keepdims=\? It takes "
                                           r"ruda\.sum\(x, /, \*, axis=None"),
        (xp.sum, (x,), {"bogus": 1}, r"ruda\.sum: unexpected keyword argument 'bogus'\. It takes ruda\.sum\("),
        (xp.reshape, (m, (6,)), {"shape": (6,)}, r"ruda\.reshape: got multiple values for argument 'shape'"),
    ]


def test_numpy_keyword_spellings_get_hints(device):
    f = supported(device, "real floating")[0]
    x, m = _arr(device, f, (6,)), _arr(device, f, (2, 3))
    c = xp.astype(m, xp.complex64 if f == xp.float32 else xp.complex128)
    for fn, args, kwargs, pattern in _keyword_cases(x, m, c):
        with pytest.raises(TypeError, match=pattern):
            fn(*args, **kwargs)
    # the methods delegate to the namespace functions: the same hint
    with pytest.raises(TypeError, match=r"ruda\.std: .*'ddof'; the array API spells it correction="):
        x.std(ddof=1)


def test_pytorch_and_numpy_keywords_in_nn_and_random_get_hints(device):
    """ruda.nn takes the array API's keywords where PyTorch's differ, ruda.random the array
    API's shape= where NumPy's Generator takes size=: the TypeError says which."""
    import ruda.nn as nn
    f = supported(device, "real floating")[0]
    m = _arr(device, f, (2, 3))
    g = xp.random.Generator(0)
    for fn, args, kwargs, pattern in [
            (nn.softmax, (m,), {"dim": -1}, r"^ruda\.nn\.softmax: unexpected keyword argument 'dim'; "
                                           r"the array API spells it axis=\. It takes "
                                           r"ruda\.nn\.softmax\(x, axis=-1, dtype=None\)$"),
            (nn.log_softmax, (m,), {"dim": 1}, r"ruda\.nn\.log_softmax: .*'dim'; .*spells it axis="),
            (nn.top_k, (m, 2), {"dim": -1}, r"ruda\.nn\.top_k: .*'dim'; .*spells it axis="),
            (nn.top_k, (m, 2), {"largest": False}, r"ruda\.nn\.top_k: .*'largest'; .*top_k\(-x, k\)"),
            (nn.relu, (m,), {"inplace": True}, r"ruda\.nn\.relu: .*'inplace'; ruda\.nn functions "
                                               r"return a new array"),
            (nn.layer_norm, (), {"input": m, "normalized_shape": (3,)},
             r"ruda\.nn\.layer_norm: .*'input'; pass the array positionally"),
            (g.normal, (), {"size": 3}, r"^ruda\.random\.normal: unexpected keyword argument 'size'; "
                                        r"the array API spells it shape=\. It takes ruda\.random\.normal"
                                        r"\(loc=0\.0, scale=1\.0, shape=\(\), \*, dtype=None, device=None\)$"),
            (g.integers, (0, 5), {"size": 3}, r"ruda\.random\.integers: .*'size'; .*spells it shape=")]:
        with pytest.raises(TypeError, match=pattern):
            fn(*args, **kwargs)
    # the hinted functions still run, pickle as themselves and keep their signatures
    import inspect
    import pickle
    np.testing.assert_allclose(np.asarray(nn.softmax(xp.asarray([[0.0, 0.0]]), axis=-1)), [[0.5, 0.5]])
    assert g.normal(shape=(4,), device=device).shape == (4,)
    for fn in (nn.softmax, nn.scaled_dot_product_attention, xp.random.Generator.normal):
        assert pickle.loads(pickle.dumps(fn)) is fn
    assert str(inspect.signature(nn.softmax)) == "(x, axis=-1, dtype=None)"


def test_errors_inside_a_function_keep_their_message(device):
    """A TypeError raised while the function runs (not while its keywords bind) is left alone."""
    x = _arr(device, supported(device, "real floating")[0], (2, 3))
    with pytest.raises(TypeError, match=r"^ruda\.sum: axis must be an integer; got float$"):
        xp.sum(x, axis=1.0)
    with pytest.raises(TypeError, match=r"^ruda\.zeros: dtype must be a ruda dtype"):
        xp.zeros(3, dtype="floaty", device=device)


def test_keyword_hints_keep_signatures():
    import inspect
    assert str(inspect.signature(xp.std)) == ("(x: 'Array', /, *, axis: 'Axis' = None, correction: "
                                              "'int | float' = 0.0, keepdims: 'bool' = False) -> 'Array'")
    assert str(inspect.signature(xp.linalg.solve)) == "(x1: ruda.Array, x2: ruda.Array, /) -> ruda.Array"
    assert str(inspect.signature(xp.fft.fftn)) == (
        "(x: ruda.Array, /, *, s: tuple[int, ...] | None = None, axes: tuple[int, ...] | None = None, "
        "norm: str = 'backward') -> ruda.Array")
    assert xp.std.__name__ == "std" and xp.fft.fftn.__name__ == "fftn"


@pytest.mark.parametrize("module,name,pattern", [
    (xp, "concatenate", r"^module 'ruda' has no attribute 'concatenate'; the array API spells it ruda\.concat$"),
    (xp, "absolute", r"spells it ruda\.abs$"),
    (xp, "arccos", r"spells it ruda\.acos$"),
    (xp, "power", r"spells it ruda\.pow$"),
    (xp, "left_shift", r"spells it ruda\.bitwise_left_shift$"),
    (xp, "invert", r"spells it ruda\.bitwise_invert$"),
    (xp, "amax", r"spells it ruda\.max$"),
    (xp, "transpose", r"ruda\.permute_dims\(x, axes\); ruda\.matrix_transpose"),
    (xp, "swapaxes", r"ruda\.permute_dims.*ruda\.moveaxis"),
    (xp, "ravel", r"ruda\.reshape\(x, \(-1,\)\)"),
    (xp, "asnumpy", r"x\.to_device\('cpu'\)"),
    (xp, "inv", r"it is ruda\.linalg\.inv$"),
    (xp, "rfft", r"it is ruda\.fft\.rfft$"),
    (xp.linalg, "norm", r"^module 'ruda\.linalg' has no attribute 'norm'; use ruda\.linalg\.vector_norm"),
    (xp.fft, "fft2", r"^module 'ruda\.fft' has no attribute 'fft2'; use ruda\.fft\.fftn\(x, axes=\(-2, -1\)\)"),
    (xp, "double", r"spells it ruda\.float64$"),
    (xp, "ascontiguousarray", r"spells it ruda\.asarray$"),
    (xp, "nanmean", r"not in the array API: with m = ruda\.isnan\(x\), ruda\.sum\(ruda\.where\(m, 0\.0, x\)\) / "),
    (xp, "median", r"ruda\.sort\(x, axis=\.\.\.\) and the middle entries$"),
    (xp, "deg2rad", r"x \* \(ruda\.pi / 180\)$"),
    (xp.random, "rand", r"^module 'ruda\.random' has no attribute 'rand'; draw from a generator: "
                        r"g = ruda\.random\.default_rng\(seed\), then g\.random\(shape\)$"),
    (xp.random, "seed", r"g = ruda\.random\.default_rng\(seed\), then g\.random\(\.\.\.\)"),
    (xp.random, "not_a_numpy_name", r"^module 'ruda\.random' has no attribute 'not_a_numpy_name'$"),
    (xp, "not_a_numpy_name", r"^module 'ruda' has no attribute 'not_a_numpy_name'$"),
])
def test_numpy_attribute_names_get_hints(module, name, pattern):
    with pytest.raises(AttributeError, match=pattern):
        getattr(module, name)
    assert not hasattr(module, name)


def test_subpackages_not_yet_imported_are_named():
    """``ruda.nn`` (and data, distributed) before ``import ruda.nn``: the error says to import
    it (a fresh process: this one imported them already)."""
    import subprocess
    import sys
    code = ("import ruda\n"
            "for name in ('nn', 'data', 'distributed'):\n"
            "    try:\n"
            "        getattr(ruda, name)\n"
            "    except AttributeError as e:\n"
            "        print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        f"module 'ruda' has no attribute {n!r}; import ruda.{n} first"
        for n in ("nn", "data", "distributed")], out.stdout + out.stderr


def test_namespace_calls_warn_nothing(device):
    """ruda's own calls on ordinary input warn nothing (NumPy 2's fftn(s=..., axes=None)
    deprecation included): every warning is an error here."""
    import warnings
    f = supported(device, "real floating")[-1]
    cdt = xp.complex128 if f == xp.float64 else xp.complex64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = xp.asarray(a, dtype=f, device=device)
        c = xp.astype(x, cdt)
        sq = x[:, :4] + 5 * xp.eye(4, dtype=f, device=device)
        v = xp.asarray(rng.standard_normal(6), dtype=f, device=device)
        i = xp.arange(6, device=device)
        out = [
            xp.linspace(0, 1, 5, device=device), xp.full((2,), 3, device=device), xp.zeros_like(x),
            xp.sin(x), x * 2.5 + 1.0, x / (xp.abs(x) + 1), i // 2, i % 4, i / 3, xp.pow(xp.abs(x), 0.5),
            xp.sum(x, axis=0), xp.mean(x), xp.std(x, correction=1), xp.var(x, axis=1), xp.max(x),
            xp.cumulative_sum(x, axis=1), xp.diff(x), xp.argmax(x, axis=1), xp.sort(v), xp.argsort(v),
            xp.unique_values(i % 3), xp.searchsorted(xp.sort(v), v), xp.where(x > 0, x, 0.0),
            xp.nonzero(x > 0)[0], xp.take(v, i[:3]), xp.concat([x, x]), xp.stack([v, v]),
            xp.reshape(x, (-1,)), xp.permute_dims(x, (1, 0)), xp.clip(x, -1, 1), xp.astype(i, f),
            x @ xp.matrix_transpose(x), xp.vecdot(x, x), xp.tensordot(x, x, axes=((1,), (1,))),
            xp.linalg.inv(sq), xp.linalg.solve(sq, v[:4]), xp.linalg.det(sq), xp.linalg.svdvals(x),
            xp.linalg.qr(sq).R, xp.linalg.eigh(sq + xp.matrix_transpose(sq)).eigenvalues,
            xp.linalg.vector_norm(x), xp.linalg.matrix_norm(sq), xp.linalg.cholesky(sq @ xp.matrix_transpose(sq)),
            xp.fft.fft(c), xp.fft.rfft(x), xp.fft.irfft(xp.fft.rfft(x)),
            xp.fft.fftn(c, s=(8,)), xp.fft.fftn(c, s=(2, 8)), xp.fft.ifftn(c, s=(3,)),
            xp.fft.rfftn(x, s=(4, 6)), xp.fft.irfftn(c, s=(4, 8)), xp.fft.fftn(c, s=(4, 6), axes=(0, 1)),
            xp.fft.fftfreq(8, device=device), xp.fft.fftshift(x),
        ]
        for r in out:
            r.to_device("cpu")
    fs = xp.fft.fftn(c, s=(2, 8))   # s without axes: the last len(s) axes
    assert_close = np.testing.assert_allclose
    assert_close(np.asarray(fs.to_device("cpu")), np.fft.fftn(a.astype(np.complex128), s=(2, 8), axes=(0, 1)),
                 rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"ruda\.fft\.fftn: s \(2, 2, 2\) has more sizes than x has axes"):
        xp.fft.fftn(c, s=(2, 2, 2))
