"""How a namespace call reaches its backend: the one elementwise table, the generated functions,
the C accelerator's op list, the type hints."""
import inspect
import re
import subprocess
import sys
import types
import typing

import numpy as np
import pytest

import ruda as xp
from ruda import _array, _generate
from ruda.backends import (ELEMENTWISE_BINARY, ELEMENTWISE_BINARY_CATEGORIES, ELEMENTWISE_UNARY,
                           ELEMENTWISE_UNARY_CATEGORIES)
from ruda._dtypes import CATEGORIES


def _python(fn):
    """The Python function behind a namespace function (C Functions keep it as __wrapped__)."""
    return fn if isinstance(fn, types.FunctionType) else fn.__wrapped__


def test_generated_elementwise_module_is_current():
    with open(_generate.PATH) as f:
        assert f.read() == _generate.render(), "run: python3 -m ruda._generate"
    assert _generate.main(["--check"]) == 0


def test_table_names_and_categories():
    assert ELEMENTWISE_UNARY == tuple(ELEMENTWISE_UNARY_CATEGORIES)
    assert ELEMENTWISE_BINARY == tuple(ELEMENTWISE_BINARY_CATEGORIES)
    assert len(ELEMENTWISE_UNARY) == 38 and len(ELEMENTWISE_BINARY) == 28
    cats = set(ELEMENTWISE_UNARY_CATEGORIES.values()) | set(ELEMENTWISE_BINARY_CATEGORIES.values())
    assert cats <= set(CATEGORIES)


@pytest.mark.parametrize("name", ELEMENTWISE_UNARY + ELEMENTWISE_BINARY)
def test_each_function_calls_its_backend_method_by_attribute(name):
    fn = _python(getattr(xp, name))
    assert fn.__module__ == "ruda._elementwise" and fn.__name__ == name
    src = inspect.getsource(fn)
    assert f"._backend.{name}(" in src and "getattr" not in src
    cat = {**ELEMENTWISE_UNARY_CATEGORIES, **ELEMENTWISE_BINARY_CATEGORIES}[name]
    assert f'"{cat}"' in src


@pytest.mark.parametrize("name", ["sin", "isnan", "logical_not", "imag"])
def test_unary_category_error_names_function_and_dtype(name, device):
    cat = ELEMENTWISE_UNARY_CATEGORIES[name]
    bad = next(d for d in (xp.bool, xp.int32, xp.float32) if np.dtype(d.name) not in CATEGORIES[cat])
    x = xp.asarray([True, False] if bad == xp.bool else [1, 2], dtype=bad, device=device)
    with pytest.raises(TypeError, match=rf"ruda\.{name}.*x.*{cat}"):
        getattr(xp, name)(x)


def test_type_hints_resolve():
    for name in ELEMENTWISE_UNARY:
        hints = typing.get_type_hints(_python(getattr(xp, name)))
        assert hints == {"x": xp.Array, "return": xp.Array}
    hints = typing.get_type_hints(_python(xp.add))
    assert hints["return"] is xp.Array and xp.Array in typing.get_args(hints["x1"])
    assert float in typing.get_args(hints["x2"])
    hints = typing.get_type_hints(_python(xp.clip))
    assert type(None) in typing.get_args(hints["min"])


def test_py_typed_is_shipped():
    import pathlib
    import tomllib
    root = pathlib.Path(xp.__file__).parent
    assert (root / "py.typed").exists()
    with open(root.parent / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]["ruda"]
    assert "py.typed" in data


@pytest.mark.skipif(_array._speedups is None, reason="ruda._speedups not built or disabled")
def test_c_op_list_matches_the_table():
    c = _array._speedups.BINARY_OPS
    assert sorted(c) == sorted(ELEMENTWISE_BINARY)
    # and the C source's list is what the build holds
    with open(_generate.PATH.parent / "_speedups_c" / "state.h") as f:
        src = f.read()
    body = re.search(r"OP_NAMES\[N_OPS\] = \{(.*?)\};", src, re.S).group(1)
    assert tuple(re.findall(r'"(\w+)"', body)) == c


def test_stale_c_build_is_a_clear_import_error():
    stale = types.SimpleNamespace(BINARY_OPS=tuple(n for n in ELEMENTWISE_BINARY if n != "hypot")
                                  + ("fmod",))
    with pytest.raises(ImportError, match=r"missing in C \['hypot'\], not in the table \['fmod'\]"
                                          r".*build_ext --inplace.*RUDA_PURE_PYTHON=1"):
        _array.check_build(stale)
    _array.check_build(types.SimpleNamespace(BINARY_OPS=ELEMENTWISE_BINARY))


def test_default_device_as_the_c_fast_path_sees_it():
    """asarray of a NumPy array follows set_default_device, `with default_device` and
    RUDA_DEVICE (the C accelerator is told the default through ruda._devices.watch_default)."""
    code = (
        "import numpy as np, ruda as xp\n"
        "a = np.ones(2)\n"
        "assert str(xp.asarray(a).device) == 'wgpu'\n"          # RUDA_DEVICE
        "xp.set_default_device('cpu'); assert str(xp.asarray(a).device) == 'cpu'\n"
        "with xp.default_device('wgpu'): assert str(xp.asarray(a).device) == 'wgpu'\n"
        "assert str(xp.asarray(a).device) == 'cpu'\n"
        "xp.set_default_device(None); assert str(xp.asarray(a).device) == 'wgpu'\n"
    )
    if "wgpu" not in [d.kind for d in xp.devices()]:
        pytest.skip("no wgpu device")
    import os
    env = dict(os.environ, RUDA_DEVICE="wgpu")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_operators_are_the_namespace_functions(device):
    assert xp.Array.__lt__ is xp.less and xp.Array.__neg__ is xp.negative
    assert xp.Array.__abs__ is xp.abs and xp.Array.__invert__ is xp.bitwise_invert
    if _array._speedups is None:
        assert xp.Array.__add__ is xp.add and xp.Array.__pow__ is xp.pow
    x = xp.asarray([1.0, -2.0], device=device)
    assert (x + x).tolist() == xp.add(x, x).tolist() == [2.0, -4.0]
    assert (2.0 ** x).tolist() == [2.0, 0.25] and (-x).tolist() == [-1.0, 2.0]


def test_host_ufuncs_come_from_the_backend_contract(device):
    import pathlib
    src = (pathlib.Path(xp.__file__).parent / "_operators.py").read_text()
    assert "backends.host" not in src and "_source" not in src
    b = xp.device(device).backend
    expected = np.add if device == "cpu" else None
    assert b.binary_ufunc("add") is expected
    assert b.binary_ufunc("floor_divide") is None     # ruda's own host floor_divide, not NumPy's


def test_integer_keys_give_a_view_on_every_path(device):
    """x[i] and x[i, j] are 0-d arrays sharing x's memory on the host, through the C fast path
    and the Python path alike (the host backend's getitem, no host case in the namespace)."""
    import pathlib
    src = (pathlib.Path(xp.__file__).parent / "_indexing.py").read_text()
    assert "CPU" not in src
    x = xp.reshape(xp.arange(6.0, device=device), (2, 3))
    for key, want in [((1, 2), 5.0), ((-1, 0), 3.0), ((xp.asarray(1, device=device), 2), 5.0),
                      ((0, slice(None)), None)]:
        r = x[key]
        if want is None:
            assert r.shape == (3,)
            continue
        assert r.shape == () and float(r) == want
        if device == "cpu" and all(k.__class__ is int for k in key):
            assert np.shares_memory(np.asarray(r), np.asarray(x))
    if device == "cpu":
        b = xp.device("cpu").backend
        a = np.arange(4.0)
        assert b.getitem(a, 1).__class__ is np.ndarray and np.shares_memory(b.getitem(a, (1,)), a)


def test_namespace_calls_backends_by_attribute():
    """No namespace module looks a backend method up by a string (getattr(dev.backend, name))."""
    import pathlib
    root = pathlib.Path(xp.__file__).parent
    files = [*root.glob("_*.py"), root / "linalg" / "__init__.py", root / "fft" / "__init__.py"]
    found = [f"{f.name}:{i}" for f in files for i, line in enumerate(f.read_text().splitlines(), 1)
             if re.search(r"getattr\([^)]*(backend|_device\b|\bdev\b)", line)]
    assert not found


@pytest.mark.parametrize("fn", [xp.sum, xp.std, xp.argmax, xp.sort, xp.unique_values, xp.tril,
                                xp.linalg.solve, xp.linalg.eigh, xp.fft.fft, xp.fft.rfftn,
                                xp.fft.fftshift, xp.cumulative_sum])
def test_public_functions_are_typed(fn):
    hints = typing.get_type_hints(_python(fn))
    assert hints["return"] is xp.Array or hints["return"].__name__.endswith("Result")
    first = next(iter(inspect.signature(_python(fn)).parameters))
    assert hints[first] is xp.Array


def test_c_replacements_are_listed_in_one_place():
    """Only ruda/_accelerate.py turns namespace functions into C fast-path Functions (ruda/_hints.py
    wraps them for keyword hints, without a fast path) or registers Array's operator slots."""
    import pathlib
    root = pathlib.Path(xp.__file__).parent
    users = sorted(f.name for f in [*root.glob("_*.py"), *root.glob("*/__init__.py")]
                   if re.search(r"_speedups\.(function|binary|operators|indexing|elision)\(",
                                f.read_text()))
    assert users == ["_accelerate.py", "_hints.py"]
    if _array._speedups is not None:
        for fn in (xp.asarray, xp.zeros, xp.astype, xp.matmul, xp.reshape, xp.where, xp.sort,
                   xp.add, xp.equal, xp.linalg.matmul):
            assert fn.__class__ is _array._speedups.Function and callable(fn.__wrapped__)
