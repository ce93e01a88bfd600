"""The Array object: operators (forward, reflected with Python scalars, in-place), attributes,
Python scalar conversion, repr/str, DLPack, ``__array__`` (host only) and ``to_device``."""
import operator
import sys

import numpy as np
import pytest
from hypothesis import given, strategies as st

import ruda as xp
from conftest import DEVICES, to_numpy
from strategies import assert_result, dtypes, rand, seeds, shapes, supported
from test_elementwise import BINARY, _tols, expected_dtype, oracle_value

# operator -> elementwise function it must agree with
OPERATORS = {
    "__add__": "add", "__sub__": "subtract", "__mul__": "multiply", "__truediv__": "divide",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
    "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
    "__lshift__": "bitwise_left_shift", "__rshift__": "bitwise_right_shift",
    "__lt__": "less", "__le__": "less_equal", "__gt__": "greater", "__ge__": "greater_equal",
    "__eq__": "equal", "__ne__": "not_equal",
}
INPLACE = ["__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
           "__and__", "__or__", "__xor__", "__lshift__", "__rshift__"]
PY = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _kinds(fn):
    return BINARY[fn][0]


@pytest.mark.parametrize("op", sorted(OPERATORS))
@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 1, 4))
def test_binary_operator(device, op, data, seed, shape):
    fn = OPERATORS[op]
    kinds, make1, make2, oracle, loose = BINARY[fn]
    dt = data.draw(dtypes(device, kinds), label="dtype")
    rng = np.random.default_rng(seed)
    a, b = make1(rng, shape, dt), make2(rng, shape[1:], dt)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    res = getattr(operator, op)(x, y)
    assert_result(res, oracle_value(fn, oracle, a, b), dtype=expected_dtype(device, fn, oracle, a, b),
                  loose=loose, **_tols(fn, dt))


@pytest.mark.parametrize("op", sorted(OPERATORS))
@given(data=st.data(), seed=seeds, shape=shapes(1, 2, 1, 5))
def test_reflected_operator_with_python_scalar(device, op, data, seed, shape):
    """``scalar <op> x`` goes through __rop__ and equals the function with the scalar as x1."""
    fn = OPERATORS[op]
    kinds, make1, make2, oracle, loose = BINARY[fn]
    dt = data.draw(dtypes(device, kinds), label="dtype")
    rng = np.random.default_rng(seed)
    s = PY[np.dtype(dt).kind](make1(rng, (), dt).item())
    b = make2(rng, shape, dt)
    y = xp.asarray(b, device=device)
    res = getattr(operator, op)(s, y)
    sa = np.asarray(s, dtype=dt)
    assert_result(res, oracle_value(fn, oracle, sa, b), dtype=expected_dtype(device, fn, oracle, sa, b),
                  loose=loose, **_tols(fn, dt))


@pytest.mark.parametrize("op", INPLACE)
@given(data=st.data(), seed=seeds, shape=shapes(1, 3, 1, 4), scalar=st.booleans())
def test_inplace_operator(device, op, data, seed, shape, scalar):
    fn = OPERATORS[op]
    kinds, make1, make2, oracle, loose = BINARY[fn]
    if fn == "divide":
        kinds = ("real floating", "complex floating")       # int /= would change the dtype
    dt = data.draw(dtypes(device, kinds), label="dtype")
    rng = np.random.default_rng(seed)
    a = make1(rng, shape, dt)
    b = make2(rng, () if scalar else shape[1:], dt)
    x = xp.asarray(a.copy(), device=device)      # asarray may share host memory with `a`
    other = PY[np.dtype(dt).kind](b.item()) if scalar else xp.asarray(b, device=device)
    before = x
    iop = getattr(operator, "__i" + op[2:])
    x = iop(x, other)
    assert x is before
    exp = oracle_value(fn, oracle, a, b)
    assert_result(x, exp.astype(dt) if exp.dtype.kind in "fc" else exp, dtype=dt, loose=loose, **_tols(fn, dt))


def test_inplace_errors(device):
    rng = np.random.default_rng(5)
    ints = supported(device, "signed integer")
    x = xp.asarray(rand(rng, (2, 3), ints[0], -9, 9), device=device)
    with pytest.raises(TypeError, match="in-place"):
        x += 1.5
    with pytest.raises(TypeError, match="in-place"):
        x /= 2
    fdt = supported(device, "real floating")[0]
    y = xp.asarray(rand(rng, (3,), fdt), device=device)
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 3\)"):
        y += xp.asarray(rand(rng, (2, 3), fdt), device=device)
    u = xp.asarray([100, 7], dtype=xp.uint8, device=device)
    with pytest.raises(TypeError, match=r"in-place add cannot store a int16 result in a uint8"):
        u += xp.asarray([-1, 1], dtype=xp.int8, device=device)     # signed into unsigned, as NumPy
    assert u.tolist() == [100, 7]
    i = xp.asarray([100, -7], dtype=xp.int8, device=device)
    i += xp.asarray([1, 1], dtype=xp.uint8, device=device)          # int16 back into int8: as NumPy
    assert i.dtype == xp.int8 and i.tolist() == [101, -6]


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 1, 4))
def test_unary_operators(device, data, seed, shape):
    rng = np.random.default_rng(seed)
    dt = data.draw(dtypes(device, ("signed integer", "real floating", "complex floating")), label="dtype")
    a = rand(rng, shape, dt, -50, 50)
    x = xp.asarray(a, device=device)
    assert_result(-x, -a, dtype=dt)
    assert_result(+x, a, dtype=dt)
    exp_abs = np.abs(a)
    assert_result(abs(x), exp_abs, dtype=exp_abs.dtype)
    idt = data.draw(dtypes(device, ("integral", "bool")), label="int dtype")
    b = rand(rng, shape, idt, -50, 50)
    assert_result(~xp.asarray(b, device=device), ~b, dtype=idt)


@given(data=st.data(), seed=seeds, n=st.integers(1, 5), m=st.integers(1, 5), k=st.integers(1, 5))
def test_matmul_operator(device, data, seed, n, m, k):
    dt = data.draw(dtypes(device, ("real floating", "complex floating")), label="dtype")
    rng = np.random.default_rng(seed)
    a, b, c = rand(rng, (n, k), dt, -2, 2), rand(rng, (k, m), dt, -2, 2), rand(rng, (m, m), dt, -2, 2)
    x = xp.asarray(a, device=device)
    assert_result(x @ xp.asarray(b, device=device), a.astype(np.complex128) @ b if dt.kind == "c" else
                  a.astype(np.float64) @ b, dtype=dt, loose=True)
    y = xp.asarray(a @ b, device=device)
    before = y
    y @= xp.asarray(c, device=device)
    assert y is before
    assert_result(y, (a @ b).astype(np.complex128) @ c, dtype=dt, loose=True)
    with pytest.raises(TypeError):
        x @ 2.0


def test_numpy_operand_is_not_silently_converted(device):
    x = xp.asarray(rand(np.random.default_rng(1), (3,), supported(device, "real floating")[0]), device=device)
    with pytest.raises(TypeError):
        x + np.ones(3)
    with pytest.raises(TypeError):
        np.ones(3) + x
    with pytest.raises(TypeError):
        x + [1, 2, 3]
    for left, right, arg, got in [(x, np.ones(3), "x2", "ndarray"), (np.ones(3), x, "x1", "ndarray"),
                                  (x, [1, 2, 3], "x2", "list"), (x, 2, "x2", "int"), (2.0, x, "x1", "float")]:
        with pytest.raises(TypeError, match=rf"ruda\.matmul: {arg} must be a ruda array; got {got}"):
            left @ right


@given(seed=seeds, shape=shapes(0, 4, 0, 4))
def test_attributes(device, seed, shape):
    rng = np.random.default_rng(seed)
    dt = supported(device, "real floating")[0]
    a = rand(rng, shape, dt)
    x = xp.asarray(a, device=device)
    assert x.shape == shape and isinstance(x.shape, tuple)
    assert x.ndim == len(shape) and x.size == a.size and x.dtype == dt and x.device == device
    if shape:
        assert len(x) == shape[0]
    else:
        with pytest.raises(TypeError, match="len"):
            len(x)
    if len(shape) == 2:
        assert_result(x.T, a.T, dtype=dt)
    else:
        with pytest.raises(ValueError, match=r"Array\.T.*2-D"):
            x.T
    if len(shape) >= 2:
        assert_result(x.mT, np.swapaxes(a, -1, -2), dtype=dt)
    else:
        with pytest.raises(ValueError, match=r"mT"):
            x.mT
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")


def test_array_cannot_be_constructed_or_hashed(device):
    with pytest.raises(TypeError, match="asarray"):
        xp.Array([1, 2])
    with pytest.raises(TypeError):
        hash(xp.asarray([1.5], device=device))


def test_python_scalar_conversion(device):
    rng = np.random.default_rng(9)
    for dt in supported(device):
        v = rand(rng, (), dt, 1, 9)
        x = xp.asarray(v, device=device)
        assert bool(x) == bool(v)
        if dt.kind == "c":
            assert complex(x) == complex(v)
            with pytest.raises(TypeError):
                float(x)
            with pytest.raises(TypeError):
                int(x)
            continue
        assert float(x) == float(v) and isinstance(float(x), float)
        assert int(x) == int(v) and complex(x) == complex(float(v))
        if dt.kind in "iu":
            assert operator.index(x) == int(v)
            assert [10, 20, 30, 40, 50, 60, 70, 80, 90, 100][x] == (int(v) + 1) * 10
        else:
            with pytest.raises(TypeError, match="integer"):
                operator.index(x)
    x = xp.asarray(rand(rng, (2,), supported(device, "real floating")[0]), device=device)
    for conv in (bool, int, float, complex):
        with pytest.raises(TypeError, match="0-d"):
            conv(x)
    fdt = supported(device, "real floating")[0]
    with pytest.raises(ValueError):
        int(xp.asarray(float("nan"), dtype=fdt, device=device))
    with pytest.raises(OverflowError):
        int(xp.asarray(float("inf"), dtype=fdt, device=device))


def test_membership_is_an_elementwise_test(device):
    """``v in x`` is NumPy's (x == v).any(), over every element (2-D included) in one
    reduction, with a scalar or an array that broadcasts."""
    dt = supported(device, "real floating")[0]
    a = np.arange(6.0, dtype=dt).reshape(2, 3)
    x = xp.asarray(a, device=device)
    for v in [3, 7, 2.0, -0.0, float("nan"), np.asarray([3.0, 4.0, 5.0], dt), np.asarray([0.0, 9.0, 9.0], dt)]:
        want = v in a
        got = (xp.asarray(v, device=device) if isinstance(v, np.ndarray) else v) in x
        assert got is want, v


def test_repr_and_str(device):
    rng = np.random.default_rng(2)
    dt = supported(device, "real floating")[0]
    a = np.round(rand(rng, (2, 3), dt), 2)
    x = xp.asarray(a, device=device)
    r = repr(x)
    assert r.startswith("Array(") and f"dtype={dt.name}" in r and f"device='{device}'" in r
    for v in a.ravel():
        assert np.format_float_positional(v, trim="-").rstrip("0") in r.replace(" ", "")
    assert str(x) == str(a)
    e = xp.asarray(np.empty((0, 3), dt), device=device)
    assert "shape=(0, 3)" in repr(e)


@pytest.mark.parametrize("shape", [(2000,), (3, 400), (400, 3), (7, 7, 30), (1001,), (0, 2000),
                                   (1000,), (2, 1000, 1)])
def test_large_arrays_print_as_numpy_under_its_options(device, shape):
    """Past NumPy's threshold, NumPy's summary of the same values (only the edges are read);
    the threshold and edge items are the current print options'."""
    rng = np.random.default_rng(3)
    for dt in supported(device, "real floating")[:1] + supported(device, "integral")[:1]:
        a = (rng.standard_normal(shape) * 100).astype(dt)
        x = xp.asarray(a, device=device)
        assert str(x) == str(a)
        assert repr(x).startswith("Array(" + np.array2string(a, separator=", ", prefix="Array("))
        for opts in (dict(threshold=10**9), dict(threshold=10, edgeitems=1), dict(edgeitems=5)):
            with np.printoptions(**opts):
                assert str(x) == str(a)


@given(data=st.data(), seed=seeds, shape=shapes(0, 3, 0, 5))
def test_to_device_round_trip(device, data, seed, shape):
    dt = data.draw(st.sampled_from(supported(device)), label="dtype")
    a = rand(np.random.default_rng(seed), shape, dt)
    x = xp.asarray(a, device=device)
    assert x.to_device(device) is x
    h = x.to_device("cpu")
    assert h.device == "cpu" and h.dtype == dt
    np.testing.assert_array_equal(np.asarray(h), a)
    back = h.to_device(device)
    assert back.device == device
    assert_result(back, a, dtype=dt, rtol=0, atol=0)
    for other in DEVICES:
        y = x.to_device(other)
        assert y.device == other and y.dtype == dt
        np.testing.assert_array_equal(to_numpy(y), a)


def test_dunder_array_only_on_host(device):
    dt = supported(device, "real floating")[0]
    a = rand(np.random.default_rng(4), (3, 2), dt)
    x = xp.asarray(a, device=device)
    if device == "cpu":
        np.testing.assert_array_equal(np.asarray(x), a)
        assert np.asarray(x, dtype=np.float64).dtype == np.float64
        c = np.array(x, copy=True)
        c[0, 0] = 99
        assert float(x[0, 0]) != 99
        # NumPy 2's protocol: copy=False never copies, it raises where a copy is needed
        other = np.float32 if a.dtype == np.float64 else np.float64
        with pytest.raises(ValueError, match=r"__array__: copy=False.*needs a copy"):
            x.__array__(dtype=other, copy=False)
        shared = x.__array__(copy=False)
        shared[0, 0] = 7
        assert float(x[0, 0]) == 7
        if sys.version_info >= (3, 12):      # PEP 688 buffer protocol from Python
            assert memoryview(x).shape == (3, 2)
    else:
        with pytest.raises(TypeError, match=rf"host array.*'{device}'.*to_device"):
            np.asarray(x)


def test_dlpack_round_trip_with_numpy(device):
    rng = np.random.default_rng(6)
    for dt in supported(device):
        a = rand(rng, (3, 4), dt)
        x = xp.from_dlpack(a, device=device)
        assert x.device == device and x.dtype == dt
        np.testing.assert_array_equal(to_numpy(x), a)
        y = xp.from_dlpack(a, device=device, copy=True)
        np.testing.assert_array_equal(to_numpy(y), a)
        if device == "cpu":
            assert x.__dlpack_device__()[0] == 1
            back = np.from_dlpack(x)
            np.testing.assert_array_equal(back, a)
            assert back.dtype == dt
            # zero-copy: a view of the same memory
            orig = a.copy()
            a[0, 0] = a[0, 1]
            assert to_numpy(x)[0, 0] == a[0, 1]
            np.testing.assert_array_equal(to_numpy(y), orig)        # copy=True did copy
        else:
            h = np.from_dlpack(x.to_device("cpu"))
            np.testing.assert_array_equal(h, a)
    with pytest.raises(TypeError, match="from_dlpack.*DLPack"):
        xp.from_dlpack([1, 2, 3])


class _Export:
    """Hands a consumer ``x.__dlpack__(**kw)``: our dl_device and copy, the consumer's stream and
    max_version (how a test drives one producer call through NumPy's or ruda's from_dlpack)."""

    def __init__(self, x, **kw):
        self.x, self.kw = x, kw

    def __dlpack_device__(self):
        dl = self.kw.get("dl_device")
        return self.x.__dlpack_device__() if dl is None else dl

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.x.__dlpack__(stream=stream, max_version=max_version, **self.kw)


def test_dunder_dlpack_copy_and_dl_device(device):
    """__dlpack__'s copy and dl_device as the standard has them: copy=True copies (on the array's
    device too), dl_device=(kDLCPU, 0) exports host data (a copy for a device array, so
    copy=False raises BufferError there), and the suite's combinations all answer (on wgpu,
    whose buffers have no in-place export, with BufferError)."""
    a = np.arange(6, dtype=supported(device, "real floating")[0])
    x = xp.asarray(a.copy(), device=device)
    own = x.__dlpack_device__()
    for kw in ({}, {"copy": None}, {"copy": False}, {"dl_device": own}, {"dl_device": own, "copy": False}):
        if device.kind == "wgpu":
            with pytest.raises(BufferError, match=r"'wgpu:0' \(kDLWebGPU\) cannot be exported in place"):
                x.__dlpack__(**kw)
            continue
        x.__dlpack__(**kw)
        x.__dlpack__(max_version=(1, 0), **kw)
    copied = xp.from_dlpack(_Export(x, copy=True)) if device.kind != "wgpu" else \
        xp.from_dlpack(_Export(x, dl_device=(1, 0), copy=True), device=device)   # via a host copy
    for kw in ({"dl_device": (1, 0)}, {"dl_device": (1, 0), "copy": True}):
        host = np.from_dlpack(_Export(x, **kw))
        np.testing.assert_array_equal(host, a)
        if kw.get("copy") or device != "cpu":
            x[0] = 40.0
            assert host[0] == 0.0, f"__dlpack__({kw}) shares memory with x"
            x[0] = 0.0
    x[1] = 50.0
    np.testing.assert_array_equal(to_numpy(copied), a)   # copy=True on the device did copy
    if device == "cpu":
        np.testing.assert_array_equal(np.from_dlpack(_Export(x, dl_device=(1, 0), copy=False))[1], 50.0)
    else:
        with pytest.raises(BufferError, match=r"copy=False.*dl_device=\(1, 0\)"):
            x.__dlpack__(dl_device=(1, 0), copy=False)


def test_dlpack_from_ruda_array(device):
    dt = supported(device, "real floating")[0]
    a = rand(np.random.default_rng(8), (5,), dt)
    x = xp.asarray(a, device=device)
    y = xp.from_dlpack(x)
    assert y.device == device
    np.testing.assert_array_equal(to_numpy(y), a)
    z = xp.from_dlpack(x, device="cpu")
    assert z.device == "cpu"
    np.testing.assert_array_equal(np.asarray(z), a)


def test_native_bridge_shares_storage(device, rng):
    """``x.native`` is the device library's own array, shared; ``Array.from_native`` wraps one
    back without a copy, and refuses another device's array or a non-device."""
    a = rng.standard_normal((3, 4)).astype(np.float32)
    x = xp.asarray(a, device=device)
    n = x.native
    assert device.backend.is_native(n) and tuple(n.shape) == (3, 4)
    y = xp.Array.from_native(n, device)
    assert y.device == device and y.dtype == xp.float32
    y[1, 2] = 7.0                                 # the same storage: x sees the write
    a[1, 2] = 7.0
    np.testing.assert_array_equal(to_numpy(x), a)
    with pytest.raises(TypeError, match=r"ruda.Array.from_native: data: expected .*native array, got builtins.list"):
        xp.Array.from_native([1.0], device)
    z = xp.Array.from_native(n, str(device))      # a device's name, as everywhere else
    assert z.device == device and z.native is n
    with pytest.raises(TypeError, match=r"ruda.Array.from_native: device: expected a ruda.Device or "
                                        r"its name, got int"):
        xp.Array.from_native(n, 0)
    if device != xp.device("cpu"):
        with pytest.raises(TypeError, match="native array, got numpy.ndarray"):
            xp.Array.from_native(a, device)
