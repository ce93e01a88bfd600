"""Everyday Python on ruda arrays: pickle and copy, format, the buffer protocol, Device keys in
dicts, and the familiar array methods (extensions beyond the standard), on every device."""
import copy
import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ruda as xp
from conftest import to_numpy
from strategies import supported


def _random(device, rng, dtype, shape=(3, 4)):
    a = rng.standard_normal(shape) * 10
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def test_pickle_round_trips_every_dtype(device, rng):
    for dt in supported(device):
        a = _random(device, rng, dt) if np.dtype(dt).kind != "b" else rng.integers(0, 2, (3, 4)) > 0
        x = xp.asarray(a, device=device)
        for proto in (2, pickle.HIGHEST_PROTOCOL):
            y = pickle.loads(pickle.dumps(x, protocol=proto))
            assert y.dtype == x.dtype and y.shape == x.shape and y.device == x.device
            np.testing.assert_array_equal(to_numpy(y), a)
    s = xp.asarray(2.5, device=device)[()]                      # 0-d, and a view of a slice
    assert pickle.loads(pickle.dumps(s)).shape == ()
    v = xp.reshape(xp.arange(12, device=device), (3, 4))[1:, ::2]
    np.testing.assert_array_equal(to_numpy(pickle.loads(pickle.dumps(v))), to_numpy(v))


def test_deepcopy_and_copy_are_independent_copies(device, rng):
    a = _random(device, rng, supported(device, "real floating")[0])
    x = xp.asarray(a, copy=True, device=device)
    for c in (copy.copy(x), copy.deepcopy(x), copy.deepcopy({"w": [x]})["w"][0]):
        assert c.device == x.device and c.dtype == x.dtype
        c[0, 0] = 123.0
        assert float(x[0, 0]) == pytest.approx(float(a[0, 0]))
        np.testing.assert_array_equal(to_numpy(c)[1:], a[1:])


def test_unpickling_on_a_missing_device_names_it():
    data = pickle.dumps(xp.asarray([1.0]))
    bad = data.replace(b"\x03cpu", b"\x03tpu") if b"\x03cpu" in data else None
    if bad is None or bad == data:
        pytest.skip("pickle layout without the short device string")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        pickle.loads(bad)


PCA_SCRIPT = """
import pickle, sys, numpy as np, sklearn, ruda as xp
from sklearn.decomposition import PCA
dev = sys.argv[1]
rng = np.random.default_rng(0)
X = rng.standard_normal((40, 6)) @ rng.standard_normal((6, 6))
dt = xp.__array_namespace_info__().default_dtypes(device=dev)["real floating"]
with sklearn.config_context(array_api_dispatch=True):
    pca = PCA(n_components=3, svd_solver="full").fit(xp.asarray(X, dtype=dt, device=dev))
    loaded = pickle.loads(pickle.dumps(pca))
    got = loaded.transform(xp.asarray(X, dtype=dt, device=dev))
assert loaded.components_.device == dev and got.device == dev
want = PCA(n_components=3, svd_solver="full").fit(X).transform(X)
got = np.asarray(got.to_device("cpu"))
sign = np.sign(np.sum(got * want, axis=0))      # components are defined up to sign
np.testing.assert_allclose(got * sign, want, rtol=1e-4, atol=1e-4)
print("OK")
"""


def test_a_fitted_pca_pickles_and_loads(device):
    """A fitted scikit-learn model holding ruda arrays pickles and loads (SciPy's array API switch
    must be set before SciPy is imported: a child process)."""
    pytest.importorskip("sklearn")
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    proc = subprocess.run([sys.executable, "-c", PCA_SCRIPT, str(device)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK", proc.stderr[-3000:]


def test_format_of_0d_arrays(device):
    loss = xp.mean(xp.asarray([0.25, 0.5], device=device))
    assert f"{loss:.4f}" == "0.3750" and f"{loss:>8.2e}" == "3.75e-01" and f"{loss}" == str(loss)
    assert f"{xp.asarray(7, device=device):03d}" == "007"
    x = xp.ones(2, device=device)
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match=r"format spec '.2f' needs a 0-d array; got shape \(2,\)"):
        f"{x:.2f}"


def test_round_of_0d_arrays(device, rng):
    a = (rng.standard_normal(5) * 10).astype(supported(device, "real floating")[0])
    loss = xp.mean(xp.asarray(a, device=device))
    np.testing.assert_allclose(loss.item(), np.mean(a.astype(np.float64)), rtol=1e-6)
    assert round(loss, 4) == round(loss.item(), 4) and type(round(loss, 4)) is float
    assert round(loss) == round(loss.item()) and type(round(loss)) is int
    assert round(xp.asarray(1234, device=device), -2) == 1200
    with pytest.raises(TypeError, match=r"round\(\) needs a 0-d array; got shape \(5,\) "
                                        r"\(ruda\.round\(x\) rounds elementwise\)"):
        round(xp.asarray(a, device=device))


def test_python_types_as_dtypes_are_the_device_defaults(device):
    """dtype=float, int, complex, bool as NumPy users write them: the device's default dtype of
    that kind (NumPy's float64 and int64 where the device has them), bool for bool."""
    defaults = xp.__array_namespace_info__().default_dtypes(device=device)
    for py, want in ((float, defaults["real floating"]), (int, defaults["integral"]),
                     (complex, defaults["complex floating"]), (bool, xp.bool)):
        z = xp.zeros(3, dtype=py, device=device)
        assert z.dtype == want and z.device == device
        x = xp.asarray([1.75, -2.0, 0.0], device=device)
        y = xp.astype(x, py)
        assert y.dtype == want
        np.testing.assert_array_equal(to_numpy(y), np.asarray([1.75, -2.0, 0.0]).astype(want))
    assert xp.arange(3, dtype=float, device=device).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(TypeError, match=r"ruda\.ones: dtype must be a ruda dtype"):
        xp.ones(3, dtype=list, device=device)


def test_where_takes_two_scalars(device, rng):
    """np.where(mask, 1.0, 0.0): the result is on the condition's device, with the dtype of a
    NumPy scalar among them, else the device's default for the wider Python scalar's kind."""
    m = rng.standard_normal(6) > 0
    c = xp.asarray(m, device=device)
    defaults = xp.__array_namespace_info__().default_dtypes(device=device)
    f32 = supported(device, "real floating")[0]
    for x1, x2, want in ((1.0, 0.0, defaults["real floating"]), (1, 0, defaults["integral"]),
                         (True, False, xp.bool), (2, 0.5, defaults["real floating"]),
                         (np.dtype(f32).type(1.5), 0, f32)):
        r = xp.where(c, x1, x2)
        assert r.dtype == want and r.device == c.device
        np.testing.assert_array_equal(to_numpy(r), np.where(m, x1, x2).astype(want))
    with pytest.raises(TypeError, match=r"ruda\.where: x1 and x2 must be ruda arrays or scalars; "
                                        r"got str and list"):
        xp.where(c, "a", [1])


def test_numpy_and_torch_attribute_names_get_hints(device):
    """x.numpy(), x.cpu(), x.copy(), g.choice(...): an AttributeError that says what to write,
    as Python's own (hasattr is False, dir() does not list them); real attributes unchanged."""
    x = xp.ones((2, 3), device=device)
    for name, pattern in (("numpy", r"np\.asarray\(x\) for a host array"), ("cpu", r"x\.to_device\('cpu'\)"),
                          ("copy", r"ruda\.asarray\(x, copy=True\)"), ("flatten", r"x\.reshape\(-1\)"),
                          ("transpose", r"ruda\.permute_dims\(x, axes\)"), ("nbytes", r"x\.size \* x\.dtype\.itemsize")):
        with pytest.raises(AttributeError, match=rf"^'Array' object has no attribute '{name}'; {pattern}") as e:
            getattr(x, name)
        assert e.value.name == name and not hasattr(x, name) and name not in dir(x)
    assert x.size * x.dtype.itemsize == np.ones((2, 3), np.dtype(x.dtype)).nbytes
    assert x.reshape(-1).shape == (6,) and "reshape" in dir(x)
    g = xp.random.default_rng(0)
    with pytest.raises(AttributeError, match=r"^'Generator' object has no attribute 'choice'; g\.integers"):
        g.choice(5, 2)
    with pytest.raises(AttributeError, match=r"no attribute 'shuffle'; g\.permutation\(x\) returns a shuffled copy"):
        g.shuffle(x)
    with pytest.raises(AttributeError, match=r"^'Array' object has no attribute 'not_a_name'$"):
        x.not_a_name


def test_buffer_protocol_on_host_arrays_only(device):
    x = xp.asarray([1.5, 2.5, 4.0], device=device)
    if sys.version_info < (3, 12) and xp.Array.__mro__[1].__module__ != "ruda._speedups":
        pytest.skip("Python 3.11 without the C accelerator has no buffer protocol for Python types")
    if device != "cpu":
        with pytest.raises(TypeError, match="needs a host array"):
            memoryview(x)
        return
    m = memoryview(x)
    assert m.tolist() == [1.5, 2.5, 4.0] and m.format == "d" and m.shape == (3,)
    np.testing.assert_array_equal(np.frombuffer(m, dtype=np.float64), [1.5, 2.5, 4.0])


def test_device_is_a_dict_key_under_its_spelling(device):
    x = xp.ones(1, device=device)
    table = {str(device): "found"}
    assert table[x.device] == "found" and hash(x.device) == hash(str(device))
    if device.index == 0:
        assert {device.kind: 1}[x.device] == 1           # {"wgpu": 1}[x.device]
    assert {x.device: 2}[str(device)] == 2


def test_item_and_tolist(device, rng):
    for dt in supported(device):
        a = _random(device, rng, dt, (2, 3)) if np.dtype(dt).kind != "b" else \
            rng.integers(0, 2, (2, 3)) > 0
        x = xp.asarray(a, device=device)
        assert x.tolist() == a.tolist()
        assert type(x.tolist()[0][0]) is type(a.tolist()[0][0])
        assert x[1, 2].item() == a[1, 2].item() and type(x[1, 2].item()) is type(a[1, 2].item())
        assert xp.reshape(x[0, :1], (1, 1)).item() == a[0, 0].item()      # any shape of size 1
    assert xp.asarray(3, device=device).tolist() == 3
    with pytest.raises(ValueError, match=r"item\(\) needs an array of one element; got shape \(2, 3\)"):
        x.item()


def test_familiar_methods_delegate_to_the_namespace(device, rng):
    fdt = supported(device, "real floating")[0]
    a = _random(device, rng, fdt, (3, 4))
    x = xp.asarray(a, device=device)
    tol = dict(rtol=1e-5, atol=1e-5)
    for name, want in [("sum", a.sum()), ("prod", a.prod()), ("mean", a.mean()),
                       ("std", a.std()), ("var", a.var()), ("min", a.min()), ("max", a.max()),
                       ("argmax", a.argmax()), ("argmin", a.argmin())]:
        got = getattr(x, name)()
        assert got.device == device and got.shape == ()
        np.testing.assert_allclose(to_numpy(got), want, **tol, err_msg=name)
    np.testing.assert_allclose(to_numpy(x.sum(0)), a.sum(0), **tol)
    np.testing.assert_allclose(to_numpy(x.mean(axis=1, keepdims=True)), a.mean(1, keepdims=True), **tol)
    np.testing.assert_allclose(to_numpy(x.std(axis=0, correction=1)), a.std(0, ddof=1), **tol)
    np.testing.assert_allclose(to_numpy(x.max(axis=(0, 1))), a.max(), **tol)
    np.testing.assert_array_equal(to_numpy(x.argmin(1)), a.argmin(1))
    assert x.all().item() == bool(a.all()) and x.any(axis=0).tolist() == a.any(0).tolist()
    assert x.reshape(4, 3).shape == (4, 3) and x.reshape((2, 6)).shape == (2, 6)
    np.testing.assert_array_equal(to_numpy(x.reshape(-1)), a.reshape(-1))
    y = x.astype(xp.int32)
    assert y.dtype == xp.int32 and y.device == device
    np.testing.assert_array_equal(to_numpy(y), a.astype(np.int32))
    with pytest.raises(TypeError, match="ruda.sum"):
        x.sum(axis=0, dtype="float32x")
    # NumPy's keyword spellings of the methods (array_api_compat calls x.astype(dtype=, copy=))
    assert x.astype(dtype=xp.int32, copy=False).dtype == xp.int32
    assert x.reshape(shape=(4, 3)).shape == (4, 3)
    with pytest.raises(TypeError, match="ruda.astype: missing dtype"):
        x.astype()


def test_numpy_reductions_call_the_methods(device, rng):
    """np.mean(x), np.var(x, axis=0) ... on a ruda array call its method with NumPy's own
    defaults (out=None, dtype=None, ddof=0), which work; other NumPy values get the hint."""
    a = rng.standard_normal((4, 3))
    x = xp.asarray(a, device=device)
    tol = dict(rtol=1e-5, atol=1e-6)
    for name in ("sum", "prod", "mean", "std", "var", "min", "max", "all", "any", "argmax",
                 "argmin"):
        got = getattr(np, name)(x, axis=0)
        assert isinstance(got, xp.Array) and got.device == device, name
        np.testing.assert_allclose(to_numpy(got), getattr(np, name)(a, axis=0), **tol,
                                   err_msg=name)
    with pytest.raises(TypeError, match=r"ruda\.var: unexpected keyword argument 'ddof'; the "
                                        r"array API spells it correction="):
        np.var(x, ddof=1)
    with pytest.raises(TypeError, match=r"ruda\.mean: unexpected keyword argument 'out'"):
        np.mean(x, out=np.zeros(3))
    got = np.reshape(x, (3, 4))           # NumPy passes order="C": ruda's reshape, on the device
    assert isinstance(got, xp.Array) and got.device == device
    np.testing.assert_array_equal(to_numpy(got), np.reshape(a, (3, 4)))
    with pytest.raises(ValueError, match=r"ruda\.reshape: only order='C' .*; got order='F'"):
        x.reshape((3, 4), order="F")


def test_numpy_ufuncs_run_as_ruda_functions(device, rng):
    """np.exp(x) is ruda.exp(x), on x's device (np.absolute is ruda.abs, np.power ruda.pow):
    the result is a ruda array of x's dtype, nothing goes through the host."""
    fdt = supported(device, "real floating")[0]
    a, b = rng.standard_normal((3, 4)).astype(fdt), rng.standard_normal((3, 4)).astype(fdt)
    x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
    with xp.allow_host_conversion(False):
        cases = [(np.exp(x), np.exp(a)), (np.absolute(x), np.abs(a)), (np.power(x, 2), a ** 2),
                 (np.arctan2(x, y), np.arctan2(a, b)), (np.maximum(x, y), np.maximum(a, b)),
                 (np.float32(2) * x, 2 * a), (np.less(x, 0.5), a < 0.5),
                 (np.rint(x * 3), np.rint(a * 3))]
    for got, want in cases:
        assert isinstance(got, xp.Array) and got.device == device
        assert got.dtype == (xp.bool if want.dtype == bool else x.dtype)
        np.testing.assert_allclose(to_numpy(got), want, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match=r"ruda\.add: x1 .* got ndarray \(convert it with ruda\.asarray\)"):
        np.ones(4) + x
    with pytest.raises(TypeError, match=r"ruda\.matmul: x1 must be a ruda array; got ndarray"):
        np.ones((2, 3)) @ x
    np.testing.assert_allclose(to_numpy(np.matmul(x, y.mT)), a @ b.T, rtol=1e-5, atol=1e-5)
    h = np.ones((3, 4))
    with pytest.raises(TypeError, match=r"ruda\.add: x1 .* got ndarray"):
        h += x
    with pytest.raises(TypeError, match=r"ruda: numpy\.exp with out= on a ruda array"):
        np.exp(x, out=np.empty((3, 4)))
    with pytest.raises(TypeError, match=r"ruda: numpy\.add\.at on a ruda array"):
        np.add.at(x, [0], 1.0)


def test_numpy_functions_that_would_answer_false_see_the_refusal(device, rng):
    """np.array_equal / np.array_equiv turn a conversion error into False: a device array's
    refusal surfaces instead; a host array (or host copies when allowed) compares its values."""
    a = rng.standard_normal(4)
    x, y = xp.asarray(a, device=device), xp.asarray(a + 1, device=device)
    for fn in (np.array_equal, np.array_equiv):
        if device.kind != "cpu":
            with pytest.raises(TypeError, match="needs a host array"):
                fn(x, x)
        with xp.allow_host_conversion(), warnings.catch_warnings():
            warnings.simplefilter("ignore", xp.HostConversionWarning)
            assert fn(x, x) is True or fn(x, x) == np.True_
            assert not fn(x, y)
            assert fn(x, to_numpy(x))


def test_other_numpy_ufuncs_run_on_host_copies(device, rng):
    """A ufunc ruda lacks (np.deg2rad, np.modf) runs in NumPy on a host copy: for a host array
    at once, for a device array only under allow_host_conversion (with its warning); the result
    comes back on x's device."""
    fdt = supported(device, "real floating")[0]
    a = rng.standard_normal(5).astype(fdt)
    x = xp.asarray(a, device=device)
    if device.kind != "cpu":
        with pytest.raises(TypeError, match="needs a host array"):
            np.deg2rad(x)
    with xp.allow_host_conversion(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got, (frac, whole) = np.deg2rad(x), np.modf(x)
    host_copies = [w for w in seen if issubclass(w.category, xp.HostConversionWarning)]
    assert bool(host_copies) == (device.kind != "cpu")
    for g, want in [(got, np.deg2rad(a)), (frac, np.modf(a)[0]), (whole, np.modf(a)[1])]:
        assert isinstance(g, xp.Array) and g.device == device and g.dtype == x.dtype
        np.testing.assert_allclose(to_numpy(g), want, rtol=1e-6)
