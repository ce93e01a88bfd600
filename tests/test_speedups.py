"""The optional C accelerator (ruda/_speedups.c) against the Python code it stands in for.

Every C fast path must give the Python implementation's result or error: each case below runs
both (the C callable and its ``__wrapped__`` Python function, the C operator slots and
ruda._operators' Python operators, the C ``[]`` and ruda._indexing's functions) and compares
dtype, shape, values, and the error's type and message.  Host arrays only (the C paths hand every
other device to the Python code).  The pure-Python mode (``RUDA_PURE_PYTHON=1``) is checked in a
subprocess.
"""
import itertools
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ruda as xp
from ruda import _array, _indexing, _operators
from ruda import _elementwise as ew

accel = pytest.mark.skipif(_array._speedups is None, reason="ruda._speedups not built or disabled")

_DTYPES = [xp.bool, xp.int8, xp.uint8, xp.int32, xp.int64, xp.uint64, xp.float32, xp.float64,
           xp.complex64, xp.complex128]
_SCALARS = [0, 1, -3, 2, 300, 2**63, 2**70, 10**400, 0.5, -2.5, float("nan"), float("inf"), 1e300,
            True, False, 1 + 2j]


def _outcome(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = f()
        except Exception as e:   # noqa: BLE001 - errors are part of the compared outcome
            return ("error", type(e), str(e))
    if r.__class__ is xp.Array:
        d = r._data
        return ("array", d.dtype, d.shape, d.tobytes(), type(d))
    return ("other", repr(r))


def _same(f_c, f_py):
    assert _outcome(f_c) == _outcome(f_py)


def _arrays():
    out = []
    for dt in _DTYPES:
        a = np.arange(-3, 3).astype(dt) if dt != xp.bool else np.array([True, False] * 3)
        out.append(xp.asarray(a))
        out.append(xp.asarray(a[:1].reshape(())))
    return out


_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
              "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "and": "bitwise_and",
              "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
              "rshift": "bitwise_right_shift"}


@accel
@pytest.mark.parametrize("name", sorted(_OPERATORS.values()))
def test_binary_functions_match_python(name):
    fast = getattr(ew, name)
    slow = fast.__wrapped__
    arrays = _arrays()
    for x, y in itertools.product(arrays, arrays[::3]):
        _same(lambda: fast(x, y), lambda: slow(x, y))
    for x, s in itertools.product(arrays, _SCALARS):
        _same(lambda: fast(x, s), lambda: slow(x, s))
        _same(lambda: fast(s, x), lambda: slow(s, x))
    a0 = arrays[0]
    _same(lambda: fast(a0, a0, a0), lambda: slow(a0, a0, a0))
    _same(lambda: fast(1.0, 2.0), lambda: slow(1.0, 2.0))
    _same(lambda: fast(arrays[0], np.ones(6)), lambda: slow(arrays[0], np.ones(6)))


@accel
@pytest.mark.parametrize("op,name", sorted(_OPERATORS.items()))
def test_operators_match_python(op, name):
    import operator as pyop
    forward = getattr(pyop, {"and": "and_", "or": "or_"}.get(op, op))
    inplace = getattr(pyop, f"i{op}")
    slow = getattr(ew, name).__wrapped__
    slow_reflected = _operators.reflected(slow)
    slow_inplace = _operators.inplace(slow, name)
    arrays = _arrays()
    for x, y in itertools.product(arrays, arrays[::3]):
        _same(lambda: forward(x, y), lambda: slow(x, y))
        a, b = xp.asarray(x, copy=True), xp.asarray(x, copy=True)
        _same(lambda: inplace(a, y), lambda: slow_inplace(b, y))
        assert _outcome(lambda: a) == _outcome(lambda: b)
    for x, s in itertools.product(arrays, _SCALARS):
        _same(lambda: forward(x, s), lambda: slow(x, s))
        _same(lambda: forward(s, x), lambda: slow_reflected(x, s))
        a, b = xp.asarray(x, copy=True), xp.asarray(x, copy=True)
        _same(lambda: inplace(a, s), lambda: slow_inplace(b, s))
        assert _outcome(lambda: a) == _outcome(lambda: b)


_KEYS = [0, 1, -1, 5, -6, 6, -7, 2**70, True, None, Ellipsis, (), (0,), (0, 1), (1, -1), (0, 0, 0),
         (Ellipsis, 0), (0, Ellipsis), (Ellipsis, Ellipsis), (slice(None), 1), (1, slice(0, 2)),
         slice(1, -1), slice(None, None, 2), slice(None, None, -1), slice(None, None, 0),
         slice(True, 3), slice(0, 10**30), slice(-10**30, 2), slice(1.0, 2), (None, 0), [0, 1],
         (0, 1.5), 1.5, "a"]


def _host_keys(x):
    keys = list(_KEYS)
    n = x.shape[0] if x.ndim else 1
    keys += [xp.asarray(np.arange(n) % 3), xp.asarray(np.arange(n) > 1),
             xp.asarray(np.array([0, 7])), xp.asarray(np.arange(n, dtype=np.float64)),
             xp.asarray(np.array(True)), xp.asarray(np.ones((2, 2, 2), bool))]
    return keys


def _index_arrays():
    return [xp.asarray(np.arange(6.0)), xp.asarray(np.arange(12).reshape(3, 4)),
            xp.asarray(np.array(2.5)), xp.asarray(np.arange(8, dtype=np.float32).reshape(2, 2, 2)),
            xp.asarray(np.arange(6, dtype=np.int8))]


@accel
def test_getitem_matches_python():
    for x in _index_arrays():
        for k in _host_keys(x):
            _same(lambda: x[k], lambda: _indexing.getitem(x, k))


@accel
def test_getitem_of_integers_is_a_0d_view_in_both_paths():
    x = xp.asarray(np.arange(6.0))
    for r in (x[2], _indexing.getitem(x, 2)):
        assert r.shape == () and r._data.base is not None
    ro = np.arange(3.0)
    ro.flags.writeable = False
    y = xp.asarray(ro)
    assert float(y[1]) == 1.0


@accel
def test_setitem_matches_python():
    values = [1, -1, 2.5, 300, 2**70, 10**400, float("nan"), True, 1j, None, "a",
              xp.asarray(np.array(7.0)), xp.asarray(np.array(7, np.int8)),
              xp.asarray(np.arange(2.0)), xp.asarray(np.array(True))]
    for x in _index_arrays():
        for k, val in itertools.product(_host_keys(x), values):
            a, b = xp.asarray(x, copy=True), xp.asarray(x, copy=True)

            def fast():
                a[k] = val
                return a

            def slow():
                _indexing.setitem(b, k, val)
                return b
            _same(fast, slow)
    ro = np.arange(3.0)
    ro.flags.writeable = False
    y = xp.asarray(ro)

    def fast_ro():
        y[0] = 1.0

    def slow_ro():
        _indexing.setitem(y, 0, 1.0)
    _same(fast_ro, slow_ro)
    _same(lambda: y.__setitem__((0,), 1.0), lambda: _indexing.setitem(y, (0,), 1.0))


@accel
def test_functions_match_python():
    x2 = xp.asarray(np.arange(12.0).reshape(3, 4))
    x0 = xp.asarray(np.array(1.5))
    xc = xp.asarray(np.arange(3) + 1j)
    cases = {
        xp.reshape: [(x2, (4, 3)), (x2, (-1,)), (x2, (-1, -1)), (x2, (5, -1)), (x2, (0, -1)),
                     (x2, 12), (x2, (2, 6), None), (x2, [4, 3]), (x2, (True, 12)), (x2, (-2, -6)),
                     (x0, ()), (x0, (1, 1)), (x2, (12, 2**62))],
        xp.permute_dims: [(x2, (1, 0)), (x2, (-1, 0)), (x2, (0, 0)), (x2, (0, 2)), (x2, (0,)),
                          (x2, [1, 0]), (x0, ()), (x2, (1.0, 0))],
        xp.astype: [(x2, xp.float32), (x2, xp.int8), (xc, xp.float64), (xc, xp.complex64),
                    (x2, "float32"), (x2, np.float32), (x0, xp.bool)],
        xp.asarray: [(np.arange(3.0),), (np.arange(3, dtype=">f8"),), (np.array("a"),), (x2,),
                     (np.arange(3.0).astype(object),), ([1, 2],)],
    }
    v1, m23, m32 = (xp.asarray(np.arange(3.0)), xp.asarray(np.arange(6.0).reshape(2, 3)),
                    xp.asarray(np.arange(6.0).reshape(3, 2)))
    i23, b23 = xp.asarray(np.arange(6).reshape(2, 3)), xp.asarray(np.arange(6).reshape(2, 3) > 2)
    cases[xp.matmul] = [(m23, m32), (m32, m23), (m23, v1), (v1, v1), (v1, m32), (m23, m23),
                        (m23, i23.T), (b23, b23.T), (x0, x0), (m23, 1.0), (xc, xc),
                        (xp.asarray(np.ones((2, 2, 3))), m32)]
    cases[xp.where] = [(b23, m23, m23), (b23, i23, i23), (b23, m23, i23), (i23, m23, m23),
                       (b23, m23, v1), (b23, m23, 1.0), (xp.asarray(np.array(True)), x0, x0),
                       (b23, b23, b23)]
    cases[xp.sort] = [(m23,), (xp.asarray(np.array([3, 1, 2, 1], np.int8)),), (x0,), (xc,),
                      (b23,), (xp.asarray(np.asfortranarray(np.random.rand(3, 4))),),
                      (xp.asarray(np.array([np.nan, 1.0, -0.0, 0.0])),)]
    for name in ("zeros", "ones", "empty"):
        cases[getattr(xp, name)] = [(5,), ((2, 3),), ((),), (-1,), ((2, -1),), ((True,),), ([2],),
                                    (2**70,), ((2**40, 2**40),), (3.0,)]
    for fn, arglists in cases.items():
        for args in arglists:
            r_fast, r_slow = _outcome(lambda: fn(*args)), _outcome(lambda: fn.__wrapped__(*args))
            if fn is xp.empty and r_fast[0] == "array":
                r_fast, r_slow = r_fast[:3], r_slow[:3]   # uninitialized values
            assert r_fast == r_slow, (fn, args)
    for name in ("zeros", "ones"):
        fn = getattr(xp, name)
        for dt in _DTYPES + ["float32", None]:
            _same(lambda: fn((2, 2), dtype=dt), lambda: fn.__wrapped__((2, 2), dtype=dt))
        _same(lambda: fn(3, device="cpu"), lambda: fn.__wrapped__(3, device="cpu"))
    _same(lambda: xp.asarray(np.arange(3.0), dtype=xp.float32),
          lambda: xp.asarray.__wrapped__(np.arange(3.0), dtype=xp.float32))
    assert xp.asarray(x2) is x2


@accel
def test_asarray_follows_the_default_device():
    a = np.arange(3.0)
    with xp.default_device("cpu"):
        assert xp.asarray(a).device == xp.device("cpu")
    devs = [d for d in xp.devices() if d.kind != "cpu"]
    if devs:
        with xp.default_device(devs[0]):
            assert xp.asarray(a).device == devs[0]
            assert xp.zeros(3).device == devs[0]


@accel
def test_wrapped_functions_look_like_functions():
    import inspect
    assert xp.add.__name__ == "add" and "Elementwise add" in xp.add.__doc__
    assert str(inspect.signature(xp.add)) == str(inspect.signature(xp.add.__wrapped__))
    assert list(inspect.signature(xp.add).parameters) == ["x1", "x2"]
    assert str(inspect.signature(xp.reshape)) == str(inspect.signature(xp.reshape.__wrapped__))
    x = xp.asarray(np.arange(3.0))
    assert x.__add__(1.0).shape == (3,)
    with pytest.raises(AttributeError):
        del x[0]
    import copy
    import pickle
    c = copy.copy(x)                       # a copy, as with the pure-Python class
    c[0] = 7.0
    assert x[0] == 0.0 and c[0] == 7.0 and c.dtype == x.dtype
    assert pickle.loads(pickle.dumps(x)).tolist() == [0.0, 1.0, 2.0]


def test_pure_python_mode_in_a_subprocess():
    code = (
        "import ruda as xp, numpy as np\n"
        "from ruda import _array\n"
        "assert _array._speedups is None\n"
        "x = xp.asarray(np.arange(6.0))\n"
        "y = x * 2.5 + 1.0\n"
        "y[1] = 7.0; y[::2] = 0.0; y += x\n"
        "assert y[1].shape == () and float(y[1]) == 8.0\n"
        "assert xp.reshape(y, (2, 3)).shape == (2, 3)\n"
        "assert xp.permute_dims(xp.reshape(y, (2, 3)), (1, 0)).shape == (3, 2)\n"
        "assert xp.zeros(3).dtype == xp.float64 and xp.astype(y, xp.float32).dtype == xp.float32\n"
        "assert float(xp.sum(y)) == float(np.sum(np.asarray(y)))\n"
        "print('ok')\n"
    )
    env = dict(os.environ, RUDA_PURE_PYTHON="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


@accel
def test_temporary_elision_never_touches_a_live_array():
    n = 1 << 17
    x = xp.asarray(np.random.default_rng(0).standard_normal(n))
    ref = x._data * 2.5 + 1.0
    y = x * 2.5 + 1.0                      # the temporary x * 2.5 may be reused
    assert np.array_equal(y._data, ref)
    assert np.array_equal(x._data * 2.5 + 1.0, ref)
    t = x * 2.5                            # a named array is never reused
    t_before = t._data.copy()
    u = t + 1.0
    assert u is not t and np.array_equal(t._data, t_before)
    views = []

    def temporary_with_a_view():
        a = x * 2.5
        views.append(a._data[:])
        return a
    temporary_with_a_view() + 1.0          # a temporary whose data has a view is not reused
    assert np.array_equal(views[0], t_before)
    holder = np.empty(2, object)           # C code (NumPy's object loop) holding the only reference
    holder[0], holder[1] = x * 1.0, 1.0
    kept = holder[0]._data.copy()
    np.add.reduce(holder)
    assert np.array_equal(holder[0]._data, kept)
    lst = [x * 1.0, x * 2.0]
    kept = [a._data.copy() for a in lst]
    sum(lst[1:], lst[0])
    assert all(np.array_equal(a._data, k) for a, k in zip(lst, kept))
