"""Public names: every public module has an ``__all__`` that lists exactly its public names (no
helper leaks into the namespace: ``ruda.v`` is an AttributeError), and the standard's (2025.12)
required names are all there."""
import importlib
import pkgutil
import types

import pytest

import ruda

# The array API standard 2025.12, its function and constant lists (array_api_stubs/_2025_12)
STANDARD = {
    "constants": ["e", "inf", "nan", "newaxis", "pi"],
    "dtypes": ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float32", "float64", "complex64", "complex128"],
    "creation": ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
                 "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"],
    "data type": ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"],
    "elementwise": [
        "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
        "bitwise_left_shift", "bitwise_invert", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
        "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
        "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan", "less",
        "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and", "logical_not",
        "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative", "nextafter",
        "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round", "sign", "signbit",
        "sin", "sinh", "square", "sqrt", "subtract", "tan", "tanh", "trunc"],
    "indexing": ["take", "take_along_axis"],
    "linear algebra": ["matmul", "matrix_transpose", "tensordot", "vecdot"],
    "manipulation": ["broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims",
                     "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack",
                     "tile", "unstack"],
    "searching": ["argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where"],
    "set": ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"],
    "sorting": ["argsort", "sort"],
    "statistical": ["cumulative_sum", "cumulative_prod", "max", "mean", "min", "prod", "std", "sum", "var"],
    "utility": ["all", "any", "diff"],
    "namespace": ["__array_api_version__", "__array_namespace_info__", "linalg", "fft"],
}
LINALG = ["cholesky", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matmul",
          "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr",
          "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
FFT = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
       "rfftfreq", "fftshift", "ifftshift"]
INFO = ["capabilities", "default_device", "default_dtypes", "devices", "dtypes"]
ARRAY = ["T", "mT", "device", "dtype", "ndim", "shape", "size", "to_device", "__array_namespace__",
         "__dlpack__", "__dlpack_device__", "__abs__", "__add__", "__and__", "__bool__", "__complex__",
         "__eq__", "__float__", "__floordiv__", "__ge__", "__getitem__", "__gt__", "__index__", "__int__",
         "__invert__", "__le__", "__lshift__", "__lt__", "__matmul__", "__mod__", "__mul__", "__ne__",
         "__neg__", "__or__", "__pos__", "__pow__", "__rshift__", "__setitem__", "__sub__",
         "__truediv__", "__xor__"]

PUBLIC_MODULES = ["ruda", "ruda.linalg", "ruda.fft", "ruda.data", "ruda.distributed", "ruda.nn",
                  "ruda.nn.models", "ruda.random"]


def _public_submodule(mod, name):
    obj = getattr(mod, name)
    return isinstance(obj, types.ModuleType) and obj.__name__ == f"{mod.__name__}.{name}"


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_all_lists_exactly_the_public_names(modname):
    mod = importlib.import_module(modname)
    assert isinstance(getattr(mod, "__all__", None), list), f"{modname} has no __all__"
    assert len(set(mod.__all__)) == len(mod.__all__), "a name listed twice"
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{modname}.__all__ names what it lacks: {missing}"
    unlisted = [n for n in dir(mod) if not n.startswith("_") and n not in mod.__all__
                and not _public_submodule(mod, n)]
    assert not unlisted, f"{modname} exposes names outside __all__: {unlisted}"
    ns = {}
    exec(f"from {modname} import *", ns)
    assert set(ns) - {"__builtins__"} == set(mod.__all__)


def test_public_submodules_are_packages_of_ruda():
    subs = {m.name for m in pkgutil.iter_modules(ruda.__path__) if not m.name.startswith("_")}
    assert {"linalg", "fft", "data", "distributed"} <= subs


@pytest.mark.parametrize("modname,name", [
    ("ruda", "v"), ("ruda", "operands"), ("ruda", "BINARY"), ("ruda", "UNARY"), ("ruda", "np"),
    ("ruda", "math"), ("ruda", "ELEMENTWISE_UNARY"), ("ruda.linalg", "namedtuple"),
    ("ruda.linalg", "v"), ("ruda.linalg", "builtins"), ("ruda.linalg", "operator"),
    ("ruda.linalg", "Array"), ("ruda.linalg", "promoted"), ("ruda.fft", "v"), ("ruda.fft", "operator"),
    ("ruda.fft", "Array"),
])
def test_helpers_do_not_leak(modname, name):
    mod = importlib.import_module(modname)
    with pytest.raises(AttributeError):
        getattr(mod, name)


@pytest.mark.parametrize("group", sorted(STANDARD))
def test_standard_names_present(group):
    missing = [n for n in STANDARD[group] if n not in ruda.__all__ or not hasattr(ruda, n)]
    assert not missing, f"ruda lacks the standard's {group} names {missing}"


def test_extension_and_inspection_names_present():
    for mod, names in ((ruda.linalg, LINALG), (ruda.fft, FFT)):
        missing = [n for n in names if n not in mod.__all__ or not callable(getattr(mod, n, None))]
        assert not missing, (mod.__name__, missing)
    info = ruda.__array_namespace_info__()
    assert all(callable(getattr(info, n, None)) for n in INFO)
    assert ruda.__array_api_version__ == "2025.12"


def test_array_object_names_present():
    missing = [n for n in ARRAY if not hasattr(ruda.Array, n)]
    assert not missing, missing


def test_namespace_functions_pickle_by_name():
    """pickle (multiprocessing, joblib) and copy give back the very function, C-wrapped ones too."""
    import copy
    import pickle
    for mod in (ruda, ruda.linalg, ruda.fft):
        for n in mod.__all__:
            f = getattr(mod, n)
            if callable(f) and not isinstance(f, type):
                assert pickle.loads(pickle.dumps(f)) is f, f"{mod.__name__}.{n}"
                assert copy.deepcopy(f) is f
