"""Signed zeros and IEEE/C99 special values, on every device, against NumPy.

Every path that turns a Python scalar into device data must keep -0.0 (CuPy writes a zero with a
memset in ``fill``, ``full``, ``asarray`` of 0-d arrays and ``x[key] = scalar``), and the results of
the standard's special cases must match NumPy's (which follows C99): the sign of zero results,
and the complex log, log1p, tanh and acosh at infinities and NaNs (CuPy's thrust kernels return
NaN + NaN j for some of them; ``ruda.backends._numpylike.c99_complex`` patches them).
"""
import math
import types
import warnings

import numpy as np
import pytest

import ruda as xp
from conftest import to_numpy
from ruda.backends._numpylike import c99_complex
from strategies import supported

INF, NAN = math.inf, math.nan


def _floating(device):
    return supported(device, "real floating") + supported(device, "complex floating")


def _same(got, want, what, loose_imag_sign=False):
    """Equal as values, NaN where NaN, and zeros of the same sign (imaginary zeros and pi/2
    of either sign where the standard says '+-')."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    parts = [(got.real, want.real, "real")]
    if want.dtype.kind == "c":
        gi, wi = (np.abs(got.imag), np.abs(want.imag)) if loose_imag_sign else (got.imag, want.imag)
        parts.append((gi, wi, "imag"))
    rtol = 1e-5 if want.dtype in (np.float32, np.complex64) else 1e-12   # pi/2 &c.: a few ulp
    for g, w, part in parts:
        np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True, err_msg=f"{what} ({part})")
        zero = w == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]),
                                      err_msg=f"{what} ({part}): sign of zero")


# --- -0.0 through every way a scalar becomes device data ----------------------------------------

def test_negative_zero_survives_creation(device):
    for dt in _floating(device):
        z = complex(-0.0, -0.0) if np.dtype(dt).kind == "c" else -0.0
        want0, want3 = np.asarray(z, dtype=dt), np.full((3,), z, dtype=dt)
        _same(to_numpy(xp.asarray(z, dtype=dt, device=device)), want0, f"asarray({z}) {dt}")
        _same(to_numpy(xp.asarray(np.asarray(z, dtype=dt), device=device)), want0, f"asarray(0-d) {dt}")
        _same(to_numpy(xp.asarray(np.asarray(z, dtype=dt)).to_device(device)), want0, f"to_device {dt}")
        _same(to_numpy(xp.full((3,), z, dtype=dt, device=device)), want3, f"full {dt}")
        _same(to_numpy(xp.full((), z, dtype=dt, device=device)), want0, f"full 0-d {dt}")
        x = xp.ones((3,), dtype=dt, device=device)
        _same(to_numpy(xp.full_like(x, z)), want3, f"full_like {dt}")
        x[1] = z
        x[xp.asarray([True, False, True], device=device)] = z
        _same(to_numpy(x), want3, f"setitem {dt}")
        y = xp.ones((2, 3), dtype=dt, device=device)
        y[...] = z
        y[:, 1:] = z
        _same(to_numpy(y), np.full((2, 3), z, dtype=dt), f"setitem slices {dt}")
        end = complex(-1.0, -1.0) if np.dtype(dt).kind == "c" else -1.0
        got = to_numpy(xp.linspace(end, z, 3, dtype=dt, device=device))
        _same(got[-1], np.asarray(z, dtype=dt), f"linspace endpoint {dt}")


def test_negative_zero_scalar_operands(device):
    for dt in supported(device, "real floating"):
        x = xp.asarray(-0.0, dtype=dt, device=device)
        _same(to_numpy(x + -0.0), np.asarray(-0.0, dtype=dt), f"-0.0 + -0.0 {dt}")
        _same(to_numpy(-0.0 + x), np.asarray(-0.0, dtype=dt), f"-0.0 + -0.0 (reflected) {dt}")
        _same(to_numpy(xp.asarray(1.0, dtype=dt, device=device) / -0.0), np.asarray(-INF, dtype=dt),
              f"1 / -0.0 {dt}")
    for dt in supported(device, "complex floating"):
        # complex(3.5, -0.0) == complex(3.5, 0.0) with equal hashes: a scalar cache must not mix them
        x = xp.full((2,), complex(0.0, -0.0), dtype=dt, device=device)
        for s in (complex(3.5, -0.0), complex(3.5, 0.0), complex(-0.0, 3.5), complex(0.0, 3.5)):
            want = np.full((2,), complex(0.0, -0.0), dtype=dt) + np.asarray(s, dtype=dt)
            _same(to_numpy(x + s), want, f"{x} + {s} {dt}")


# --- zero results of the real special cases ------------------------------------------------------

UNARY_AT_ZERO = ("abs", "asin", "asinh", "atan", "atanh", "ceil", "expm1", "floor", "log1p", "negative",
                 "positive", "round", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
NP_NAME = {"asin": "arcsin", "asinh": "arcsinh", "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2",
           "pow": "power", "acosh": "arccosh"}


def _np(name):
    return getattr(np, NP_NAME.get(name, name))


def test_unary_signed_zero_results(device):
    for dt in supported(device, "real floating"):
        for shape in ((), (2,)):
            a = np.full(shape, -0.0, dtype=dt)
            x = xp.asarray(a, device=device)
            for name in UNARY_AT_ZERO:
                _same(to_numpy(getattr(xp, name)(x)), _np(name)(a), f"{name}(-0.0) {dt} {shape}")
            np.testing.assert_array_equal(to_numpy(xp.signbit(x)), np.ones(shape, bool),
                                          err_msg=f"signbit(-0.0) {dt}")


BINARY_CASES = [
    ("add", -0.0, -0.0), ("add", -0.0, 0.0), ("subtract", -0.0, 0.0), ("multiply", -0.0, 2.0),
    ("divide", -0.0, 2.0), ("divide", -0.0, -2.0), ("divide", 2.0, -0.0), ("divide", -2.0, -0.0),
    ("floor_divide", -0.0, 2.0), ("floor_divide", -0.0, -2.0), ("floor_divide", 2.0, -0.0),
    ("floor_divide", -2.0, -0.0), ("atan2", 0.0, -0.0), ("atan2", -0.0, 0.0), ("atan2", -0.0, -0.0),
    ("atan2", -0.0, 2.0), ("atan2", -0.0, -2.0), ("pow", -0.0, 3.0), ("pow", -0.0, -3.0),
    ("nextafter", 0.0, -0.0), ("copysign", 2.0, -0.0),
]


def test_binary_signed_zero_results(device):
    for dt in supported(device, "real floating"):
        for name, v1, v2 in BINARY_CASES:
            a1, a2 = np.asarray(v1, dtype=dt), np.asarray(v2, dtype=dt)
            with np.errstate(all="ignore"):
                want = _np(name)(a1, a2)
            x1, x2 = xp.asarray(a1, device=device), xp.asarray(a2, device=device)
            _same(to_numpy(getattr(xp, name)(x1, x2)), want, f"{name}({v1}, {v2}) {dt}")
            x1 = xp.asarray(np.full((3,), v1, dtype=dt), device=device)
            _same(to_numpy(getattr(xp, name)(x1, v2)), np.full((3,), want),
                  f"{name}(array {v1}, scalar {v2}) {dt}")


POW_GRID = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, -2.5, 5e-324, -5e-324,
            1e300, 1.7976931348623157e308, 1 + 2**-52, 1 - 2**-53, 2.0**53, -(2.0**53), 1024.0, -1075.0]


def test_pow_special_values(device):
    """pow over a grid of special values and edges, as NumPy's (C99's): 1 ** y and x ** 0 are 1
    (NaN included), zeros and infinities signed by y's parity, (-1) ** +-inf = 1, overflow to inf
    (2 ** 1024) and underflow to 0 of either sign; finite nonzero float64 results to 2 ulp."""
    for dt in supported(device, "real floating"):
        if np.dtype(dt).itemsize < 4:
            continue
        with np.errstate(all="ignore"):       # the grid's overflows, NaNs and infinite spacing
            a, b = (v.ravel() for v in np.meshgrid(np.asarray(POW_GRID, dt), np.asarray(POW_GRID, dt)))
            want = np.power(a, b)
            got = to_numpy(xp.pow(xp.asarray(a, device=device), xp.asarray(b, device=device)))
            fin = np.isfinite(want) & (want != 0)
            ulps = np.abs(got[fin] - want[fin]) / np.spacing(np.abs(want[fin]))
        assert got.dtype == want.dtype
        bound = 2 if want.dtype == np.float64 else 128     # float32 without shader-f64: exp(y log x)
        assert ulps.max() <= bound, (dt, a[fin][np.argmax(ulps)], b[fin][np.argmax(ulps)], ulps.max())
        same = (got == want) & (np.signbit(got) == np.signbit(want)) | np.isnan(got) & np.isnan(want)
        off = ~fin & ~same
        assert not off.any(), (dt, list(zip(a[off], b[off], got[off], want[off]))[:5])


def test_square_root_exponent_keeps_the_special_cases(device):
    """x ** 0.5 with a scalar exponent (NumPy computes it as sqrt on the host): (-0) ** 0.5 is
    +0 and (-inf) ** 0.5 is +inf, as with an array exponent, on every device."""
    for dt in supported(device, "real floating"):
        x = xp.asarray(np.asarray([-0.0, -np.inf, 4.0, 0.0], dt), device=device)
        for got in (x ** 0.5, xp.pow(x, 0.5), x ** xp.asarray(0.5, dtype=dt, device=device)):
            got = to_numpy(got)
            assert got.dtype == np.dtype(dt)
            np.testing.assert_array_equal(got, [0.0, np.inf, 2.0, 0.0])
            assert not np.signbit(got[0])


def test_complex_pow_integer_exponents(device):
    """complex ** integer as NumPy's npy_cpow: repeated multiplication below 100, so Gaussian
    integers give exact powers ((1 + 2j) ** 2 is -3 + 4j); random bases to 16 eps of |result|;
    0 ** b is 0 for Re b > 0, else NaN.  CuPy's complex power is exp(b log a): looser there."""
    rng = np.random.default_rng(43)
    ours = device != "cuda"
    for dt in supported(device, "complex floating"):
        g = (rng.integers(-4, 5, 300) + 1j * rng.integers(-4, 5, 300)).astype(dt)
        e = rng.integers(0, 7, 300).astype(dt)
        got = to_numpy(xp.asarray(g, device=device) ** xp.asarray(e, device=device))
        want = np.power(g.astype(np.complex128), e.astype(np.complex128)).astype(dt)
        assert np.array_equal(got, want) or not ours, (g[got != want][:3], e[got != want][:3])
        z = (rng.uniform(-3, 3, 2000) + 1j * rng.uniform(-3, 3, 2000)).astype(dt)
        p = rng.integers(-12, 13, 2000).astype(dt)
        got = to_numpy(xp.asarray(z, device=device) ** xp.asarray(p, device=device))
        want = np.power(z.astype(np.complex128), p.astype(np.complex128))
        err = np.abs(got - want) / np.abs(want)
        bound = 16 if ours else 64
        assert err.max() < bound * np.finfo(dt).eps, (np.dtype(dt).name, z[np.argmax(err)], p[np.argmax(err)])
        zero, b = np.zeros(4, dt), np.asarray([2, -2, 1j, 2 + 1j], dt)
        with np.errstate(invalid="ignore"):
            want = np.power(zero, b)
            got = to_numpy(xp.asarray(zero, device=device) ** xp.asarray(b, device=device))
        np.testing.assert_array_equal(got, want)


# --- complex special cases of log, log1p, tanh, acosh (the standard's lists), log2, log10, tan -----

F = 1.5   # a positive finite number
COMPLEX_CASES = {
    "log": [(-0.0, 0.0), (0.0, 0.0), (F, INF), (F, NAN), (-INF, F), (INF, F), (-INF, INF), (INF, INF),
            (INF, NAN), (-INF, NAN), (NAN, F), (NAN, INF), (NAN, -INF), (NAN, NAN)],
    "log1p": [(-1.0, 0.0), (F, INF), (F, NAN), (-INF, F), (INF, F), (-INF, INF), (INF, INF), (INF, NAN),
              (-INF, NAN), (NAN, F), (NAN, INF), (NAN, -INF), (NAN, NAN)],
    "tanh": [(0.0, 0.0), (F, INF), (0.0, INF), (-0.0, INF), (0.0, -INF), (F, NAN), (0.0, NAN),
             (-0.0, NAN), (INF, F), (INF, INF), (INF, NAN), (NAN, 0.0), (NAN, F), (NAN, NAN)],
    "acosh": [(0.0, 0.0), (-0.0, 0.0), (0.0, NAN), (-0.0, NAN), (F, INF), (F, NAN), (-INF, F), (INF, F),
              (-INF, INF), (INF, INF), (INF, NAN), (-INF, NAN), (NAN, F), (NAN, INF), (NAN, NAN)],
    "tan": [(INF, 0.0), (-INF, -0.0), (NAN, 0.0), (NAN, -0.0), (0.0, 0.0), (-0.0, INF), (F, NAN)],
    "sqrt": [(0.0, 0.0), (-0.0, 0.0), (F, INF), (NAN, INF), (F, NAN), (-INF, F), (INF, F), (-INF, NAN),
             (INF, NAN), (NAN, F), (NAN, NAN), (F, -INF), (-INF, -F), (INF, -F)],
}
COMPLEX_CASES["log2"] = COMPLEX_CASES["log10"] = COMPLEX_CASES["log"]     # log(x) / log(base)
# where the standard leaves the sign of the imaginary part open ('+-')
LOOSE_IMAG = {("tanh", INF, INF), ("tanh", INF, NAN), ("acosh", 0.0, NAN), ("acosh", -0.0, NAN),
              ("sqrt", -INF, NAN)}


def _complex_input(cases, dt):
    a = np.empty(len(cases), dtype=dt)
    a.real, a.imag = [c[0] for c in cases], [c[1] for c in cases]   # no arithmetic: NaN/-0 parts stay
    return a


@pytest.mark.parametrize("name, re, im", [(n, re, im) for n, cases in sorted(COMPLEX_CASES.items())
                                           for re, im in cases])
def test_complex_special_cases(device, name, re, im):
    dts = supported(device, "complex floating")
    if not dts:
        pytest.skip(f"no complex dtype on {device}")
    for dt in dts:
        a = _complex_input([(re, im), (F, F)], dt)
        with np.errstate(all="ignore"):
            want = _np(name)(a)
        got = to_numpy(getattr(xp, name)(xp.asarray(a, device=device)))
        _same(got, want, f"{name}({re}{im:+}j) {np.dtype(dt).name}", loose_imag_sign=(name, re, im) in LOOSE_IMAG)


def test_tanh_at_infinity_keeps_the_sign_of_y(device):
    """The standard: tanh(+-inf + yj) = +-1 + 0j with y's sign for finite y, where C99 (NumPy,
    CuPy) gives the zero the sign of sin 2y (tanh(inf + 2j) = 1 - 0j there)."""
    dts = supported(device, "complex floating")
    if not dts:
        pytest.skip(f"no complex dtype on {device}")
    ys = [2.0, 3.0, 1.0, -2.0, -1.0, 0.0, -0.0, 1.5567644732e38]
    cases = [(re, y) for re in (INF, -INF) for y in ys]
    for dt in dts:
        got = to_numpy(xp.tanh(xp.asarray(_complex_input(cases, dt), device=device)))
        for (re, y), g in zip(cases, got):
            assert g.real == np.copysign(1.0, re) and g.imag == 0, (dt, re, y, g)
            assert np.signbit(g.imag) == np.signbit(y), (dt, re, y, g)
        x0 = xp.asarray(_complex_input(cases[:1], dt), device=device)[0]       # 0-d
        g0 = complex(to_numpy(xp.tanh(x0)))
        assert g0 == 1 and not np.signbit(g0.imag), (dt, g0)


def test_c99_complex_patches_nan_results():
    """The patch itself, on a stand-in module whose kernels answer NaN + NaN j wherever the input
    has an infinite or NaN part (as CuPy's do for the cases patched), checked against NumPy."""
    def nan_at_specials(fn):
        def op(x):
            out = fn(x)
            if x.dtype.kind == "c":
                out[~np.isfinite(x)] = complex(NAN, NAN)
            return out
        return op

    own = ("isinf", "isnan", "isfinite", "copyto", "asarray")
    faulty = types.SimpleNamespace(**{n: getattr(np, n) for n in own},
                                   **{n: nan_at_specials(_np(n)) for n in ("log", "log1p", "log2", "log10", "tan", "tanh",
                                                                        "acosh")})
    fixed = c99_complex(faulty)
    patched = {"log": [(INF, NAN), (-INF, NAN), (NAN, INF), (NAN, -INF)],
               "log1p": [(INF, NAN), (-INF, NAN), (NAN, INF), (NAN, -INF)],
               "log2": [(INF, NAN), (-INF, NAN), (NAN, INF), (NAN, -INF)],
               "log10": [(INF, NAN), (-INF, NAN), (NAN, INF), (NAN, -INF)],
               "tan": [(INF, 0.0), (-INF, -0.0), (NAN, 0.0), (NAN, -0.0)],
               "tanh": [(0.0, INF), (-0.0, INF), (0.0, -INF), (0.0, NAN), (-0.0, NAN)],
               "acosh": [(0.0, NAN), (-0.0, NAN)]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, cases in patched.items():
            for dt in (np.complex64, np.complex128):
                a = _complex_input(cases + [(F, F), (NAN, NAN)], dt)
                _same(fixed[name](a), _np(name)(a), f"patched {name} {np.dtype(dt).name}",
                      loose_imag_sign=name == "acosh")
            r = np.array([0.5, -0.0], np.float64)         # real input: the module's own result
            _same(fixed[name](r), _np(name)(r), f"patched {name} real")
