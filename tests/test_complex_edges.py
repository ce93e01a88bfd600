"""Complex functions where |z|, e^Re z or a part leaves the normal float range, and the signed
zero of sums and cumulative sums, on every device.

The oracle is mpmath (exact values rounded to the dtype, each part within a few ulp) or NumPy
where its result is exact, and NumPy's complex128 for the inverse functions (mpmath's signs of
zero parts on the branch cuts are not C99's).  The cases are finite results that a textbook
formula loses: sqrt of the largest float (|z| + x overflows), of subnormal parts (|z| / 2
underflows), log of subnormal parts (|z| rounded on the subnormal grid), e^x cis y for x past
exp's overflow with a tiny y, tanh's e^-2|x| imaginary part, square as the product x * x, sign
of subnormal parts, asin/asinh/acos/acosh/atan/atanh of signed zero, tiny and huge parts.
"""
import math
import warnings

import numpy as np
import pytest

import ruda as xp
from conftest import flushes_subnormals, to_numpy
from strategies import need, supported

mpmath = pytest.importorskip("mpmath")
# the host's NumPy warns of the overflows and poles (atanh(1 + 0j)) these cases are about
pytestmark = [pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")]
mpmath.mp.prec = 160

F32_MAX, F32_SUB = 3.4028234663852886e38, 1.401298464324817e-45
F64_MAX, F64_SUB = 1.7976931348623157e308, 5e-324

_MP = {"sqrt": mpmath.sqrt, "log": mpmath.log, "log2": lambda z: mpmath.log(z) / mpmath.log(2),
       "log10": lambda z: mpmath.log(z) / mpmath.log(10), "exp": mpmath.exp, "expm1": mpmath.expm1,
       "sinh": mpmath.sinh, "cosh": mpmath.cosh, "tanh": mpmath.tanh, "sin": mpmath.sin,
       "cos": mpmath.cos, "tan": mpmath.tan, "sign": lambda z: z / abs(z)}


def _array(pairs, dtype):
    z = np.zeros(len(pairs), dtype)
    z.real, z.imag = [p[0] for p in pairs], [p[1] for p in pairs]
    return z


def _part(v, rdt):
    """mpmath real ``v`` rounded to ``rdt`` (inf past its range)."""
    if abs(v) > 2 * F64_MAX:
        return rdt(math.copysign(math.inf, v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return rdt(float(v))


def _check(name, device, dtype, pairs, ulps=4, oracle=None):
    """``name`` of each z on ``device``: the dtype kept, each part within ``ulps`` of the exact
    value (mpmath's, or ``oracle``'s of z in complex128) rounded to the dtype, zeros and
    infinities exactly (signs included)."""
    z = _array(pairs, dtype)
    got = getattr(xp, name)(xp.asarray(z, device=device))
    assert got.dtype == dtype
    rdt = np.float32 if dtype == xp.complex64 else np.float64
    want = oracle(z.astype(np.complex128)).tolist() if oracle else \
        [_MP[name](mpmath.mpc(c.real, c.imag)) for c in z.tolist()]
    for g, c, w in zip(to_numpy(got).tolist(), z.tolist(), want):
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            assert _part_ok(gp, wp, _part(wp, rdt), ulps), \
                f"{name}({c!r}) {np.dtype(dtype).name}: got {g!r}, want {complex(w)!r}"


def _part_ok(gp, wp, wr, ulps):
    """Part ``gp`` within ``ulps`` of the exact ``wp`` (``wr``: it rounded to the dtype); NaN,
    zeros and infinities exactly, signs included."""
    if math.isnan(wr):
        return math.isnan(gp)
    if wr == 0 or math.isinf(wr):
        return gp == wr and math.copysign(1, gp) == math.copysign(1, wr)
    return abs(gp - float(wp)) <= ulps * float(np.spacing(abs(wr)))


def _cases(device, f32, f64, subnormal=()):
    """(dtype, pairs) per complex dtype of ``device``; the ``subnormal`` entries only where the
    device keeps subnormals (NVIDIA's Vulkan driver flushes float32 ones)."""
    out = []
    for dt in supported(device, "complex floating"):
        pairs = list(f32 if dt == xp.complex64 else f64)
        if not flushes_subnormals(device):
            pairs += [p for d, p in subnormal if d == dt]
        out.append((dt, pairs))
    return out


def test_sqrt_of_extreme_parts(device):
    """C99 csqrt's scaling: sqrt(max) was inf (|z| + x overflowed), sqrt(0 - min j) -inf j
    (t = sqrt(|z| / 2) underflowed to 0 before y / 2t)."""
    for dt, pairs in _cases(
            device,
            [(F32_MAX, 0.0), (-F32_MAX, 0.0), (F32_MAX, F32_MAX), (-F32_MAX, -F32_MAX / 3), (3e38, -1.0),
             (1.5, 2.5), (-1e-30, 2e-38)],
            [(F64_MAX, 0.0), (-F64_MAX, 0.0), (F64_MAX, -F64_MAX), (-F64_MAX / 5, F64_MAX), (1e308, 1.0),
             (1.5, 2.5), (-1e-300, 1e-308)],
            [(xp.complex64, p) for p in ((0.0, -F32_SUB), (F32_SUB, F32_SUB), (-F32_SUB, 3 * F32_SUB),
                                         (1e-40, -3e-39), (-2e-38, 0.0))] +
            [(xp.complex128, p) for p in ((0.0, -F64_SUB), (F64_SUB, F64_SUB), (-F64_SUB, 3 * F64_SUB),
                                          (1e-310, -3e-309), (-2e-308, 0.0))]):
        _check("sqrt", device, dt, pairs, ulps=2)


@pytest.mark.parametrize("name", ["log", "log2", "log10"])
def test_log_of_extreme_moduli(device, name):
    """|z| scaled before hypot: with both parts subnormal it lost its sqrt(2) (log(-min + min j)
    was -103.28 for -102.93), with both near the largest float it overflowed to inf."""
    for dt, pairs in _cases(
            device,
            [(F32_MAX, F32_MAX), (-F32_MAX, F32_MAX / 2), (1e-30, -1e-31), (0.5, -3.0)],
            [(F64_MAX, F64_MAX), (-F64_MAX, F64_MAX / 2), (1e-300, -1e-301), (0.5, -3.0)],
            [(xp.complex64, p) for p in ((-F32_SUB, F32_SUB), (F32_SUB, 0.0), (3e-39, -4e-39),
                                         (1e-44, 2e-45))] +
            [(xp.complex128, p) for p in ((-F64_SUB, F64_SUB), (F64_SUB, 0.0), (3e-309, -4e-309),
                                          (1e-322, 2e-323))]):
        _check(name, device, dt, pairs)


_HUGE_X = {
    # e^x overflows, e^x cis y does not (x past 88.7 / 709.8 with a tiny y); x past 177 / 1420
    # also overflows e^(x/2)
    "exp": ([(100.0, 1.1754944e-38), (88.5, F32_SUB), (190.0, -F32_SUB), (150.0, 2.5), (95.0, -1e-30)],
            [(710.0, 1e-300), (709.5, -1e-308), (1450.0, F64_SUB), (1000.0, 2.5), (800.0, -1e-320)]),
    "expm1": ([(100.0, 1.1754944e-38), (120.0, -1e-40)], [(710.0, 1e-300), (1200.0, -1e-320)]),
    "sinh": ([(100.0, 1.1754944e-38), (-120.0, 1e-40), (95.0, 2.5)],
             [(710.0, 1e-300), (-1200.0, 1e-320), (800.0, -2.5)]),
    "cosh": ([(100.0, 1.1754944e-38), (-120.0, 1e-40), (95.0, 2.5)],
             [(710.0, 1e-300), (-1200.0, 1e-320), (800.0, -2.5)]),
    "sin": ([(-1.1754944e-38, 100.0), (1e-40, -120.0), (2.5, 95.0)],
            [(-1e-300, 710.0), (1e-320, -1200.0), (2.5, 800.0)]),
    "cos": ([(-1.1754944e-38, 100.0), (1e-40, -120.0), (2.5, 95.0)],
            [(-1e-300, 710.0), (1e-320, -1200.0), (2.5, 800.0)]),
    # Im tanh = 4 sin y cos y e^-2|x| for |x| > 20: 7.7e-18 at 20 + 1j, was 0
    "tanh": ([(20.5, 1.0), (-25.0, 0.5), (30.0, -2.0), (15.0, 1.0)],
             [(20.5, 1.0), (-25.0, 0.5), (300.0, -2.0), (15.0, 1.0)]),
    "tan": ([(1.0, 20.5), (0.5, -25.0), (-2.0, 30.0), (1.0, 15.0)],
            [(1.0, 20.5), (0.5, -25.0), (-2.0, 300.0), (1.0, 15.0)]),
}


@pytest.mark.parametrize("name", sorted(_HUGE_X))
def test_exp_family_where_exp_of_the_real_part_overflows(device, name):
    """e^x cos y and e^x sin y without forming e^x first (msun's __ldexp_cexp): exp(100 +
    1.2e-38j) in complex64 was inf + inf j for inf + 315986.66j; sinh, cosh, sin, cos, expm1 alike."""
    f32, f64 = _HUGE_X[name]
    for dt, pairs in _cases(device, [p for p in f32 if abs(p[0]) >= 1e-37 and abs(p[1]) >= 1e-37],
                            f64, [(xp.complex64, p) for p in f32 if min(abs(p[0]), abs(p[1])) < 1e-37]):
        _check(name, device, dt, pairs)


def test_square_is_the_product(device):
    """square(x) is x * x, bit for bit (the standard): the 2 x y form gave an imaginary part NaN
    for 1.8e308 + 0j and inf for 3.4e38 + 3.9e-39j (x * x: 0 and 2.6666667)."""
    cases = {xp.complex64: [(F32_MAX, 0.0), (F32_MAX, 3.918315e-39), (-0.5, F32_MAX), (1e-30, -F32_MAX),
                            (1.5, -2.5), (1e20, 1e20)],
             xp.complex128: [(F64_MAX, 0.0), (F64_MAX, 1e-300), (-0.5, F64_MAX), (1e-300, -F64_MAX),
                             (1.5, -2.5), (1e160, 1e160)]}
    for dt in supported(device, "complex floating"):
        z = xp.asarray(_array(cases[dt], dt), device=device)
        got, prod = to_numpy(xp.square(z)), to_numpy(xp.multiply(z, xp.asarray(_array(cases[dt], dt), device=device)))
        assert got.dtype == dt
        np.testing.assert_array_equal(got, prod)
        np.testing.assert_array_equal(np.signbit(got.imag), np.signbit(prod.imag))
    # the cases above, against their values
    if xp.complex128 in supported(device, "complex floating"):
        got = to_numpy(xp.square(xp.asarray(_array([(F64_MAX, 0.0), (-0.5, F64_MAX)], xp.complex128), device=device)))
        np.testing.assert_array_equal(got, np.array([complex(math.inf, 0.0), complex(-math.inf, -F64_MAX)]))
    if not flushes_subnormals(device):      # 3.9e-39 is subnormal
        got = to_numpy(xp.square(xp.asarray(_array([(F32_MAX, 3.918315e-39)], xp.complex64), device=device)))
        assert np.isinf(got.real[0]) and abs(got.imag[0] - np.float32(2.6666667)) <= np.spacing(np.float32(2.67))


def test_sign_of_subnormal_and_huge_parts(device):
    """x / |x| with |x| scaled: sign(-min + min j) was -1 + 1j on wgpu (|x| = min lost its
    sqrt(2)); unit length within 2 ulp of mpmath's."""
    for dt, pairs in _cases(
            device, [(F32_MAX, F32_MAX), (-F32_MAX, 1e4), (1.5, -2.0)], [(F64_MAX, -F64_MAX), (-F64_MAX, 1.0), (1.5, -2.0)],
            [(xp.complex64, p) for p in ((-F32_SUB, F32_SUB), (3 * F32_SUB, -4 * F32_SUB), (0.0, -F32_SUB),
                                         (-F32_MAX, 1.0))] +           # sign: -1 + 2.9e-39j
            [(xp.complex128, p) for p in ((-F64_SUB, F64_SUB), (3 * F64_SUB, -4 * F64_SUB), (0.0, -F64_SUB))]):
        _check("sign", device, dt, pairs, ulps=2)


_INVERSE = {"asin": np.arcsin, "asinh": np.arcsinh, "acos": np.arccos, "acosh": np.arccosh,
            "atan": np.arctan, "atanh": np.arctanh}


@pytest.mark.parametrize("name", sorted(_INVERSE))
def test_inverse_functions_of_signed_zeros_tiny_and_huge_parts(device, name):
    """Each part +-0 or +-1e-30 .. 1e30 (complex64), +-1e-300 .. 1e300 (complex128), against
    NumPy (catrig: a few ulp a part): asin(10 + 0j) was 1.5708 + 2.99321j on wgpu (asinh read the
    zero of iz = -0 + 10j as +0, and sqrt(z^2 + 1) took the other branch), asin(5000 + 0j) inf j,
    acos(1e10 - 0j) -23.7j, atanh(1e-30 + 0.5j) and asinh(0.5j) had their real parts 0 and -1.5e-8."""
    mags = {xp.complex64: [0.0, 1e-30, 1e-10, 1e-4, 0.5, 1.0, 2.0, 10.0, 5000.0, 1e10, 1e30],
            xp.complex128: [0.0, 1e-300, 1e-30, 1e-10, 1e-4, 0.5, 1.0, 2.0, 10.0, 5000.0, 1e10, 1e17,
                            1e30, 1e300]}
    for dt in supported(device, "complex floating"):
        parts = mags[dt] + [-m for m in mags[dt]]
        pairs = [(x, y) for x in parts for y in parts]
        if flushes_subnormals(device):      # results with a subnormal part are the adapter's
            tiny = np.finfo(np.float32 if dt == xp.complex64 else np.float64).tiny
            w = _INVERSE[name](_array(pairs, dt).astype(np.complex128)).astype(dt)
            pairs = [p for p, v in zip(pairs, w.tolist())
                     if not (0 < abs(v.real) < tiny or 0 < abs(v.imag) < tiny)]
        _check(name, device, dt, pairs, oracle=_INVERSE[name])


# --- signed zeros of sums --------------------------------------------------------------------

def _negzero(shape, dtype):
    return np.full(shape, complex(-0.0, -0.0) if np.dtype(dtype).kind == "c" else -0.0, dtype)


def _assert_negzero(got, what):
    got = to_numpy(got)
    parts = (got.real, got.imag) if got.dtype.kind == "c" else (got,)
    for p in parts:
        assert (p == 0).all() and np.signbit(p).all(), f"{what}: {got.ravel()[:4]} (want -0.0)"


@pytest.mark.parametrize("shape, axis", [((2,), 0), ((5, 3), 0), ((3, 5), 1), ((2, 3, 4), 1), ((2, 3, 4), 2),
                                         ((70000,), 0)])
def test_cumulative_sum_keeps_negative_zero(device, shape, axis):
    """A scan starts from -0.0, IEEE's identity of addition (NumPy's cumsum of [-0.0, -0.0] is
    [-0.0, -0.0]; wgpu's started from +0.0 and gave [0.0, 0.0]); include_initial's first element
    is +0.0, as NumPy's."""
    for dt in supported(device, ("real floating", "complex floating")):
        x = xp.asarray(_negzero(shape, dt), device=device)
        got = xp.cumulative_sum(x, axis=axis)
        assert got.dtype == dt
        _assert_negzero(got, f"cumulative_sum {np.dtype(dt).name} {shape} axis {axis}")
    for dt in supported(device, "real floating"):
        got = to_numpy(xp.cumulative_sum(xp.asarray(_negzero((2,), dt), device=device), include_initial=True))
        want = np.cumulative_sum(_negzero((2,), dt), include_initial=True)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_long_cumulative_sum_keeps_negative_zero(device):
    """Past wgpu's SCAN_ROW (2^18) a scan runs in blocks, each offset by the blocks before it."""
    need(device, xp.float32)
    _assert_negzero(xp.cumulative_sum(xp.asarray(_negzero((2**18 + 5,), np.float32), device=device)),
                    "blocked cumulative_sum")


@pytest.mark.parametrize("shape, axis", [((2,), None), ((3, 4), 1), ((4, 300), 0), ((20000,), None),
                                         ((3, 20000), 1), ((70000,), None)])
def test_sum_of_negative_zeros_is_numpys_positive_zero(device, shape, axis):
    """A sum of -0.0s is +0.0 on every device, as NumPy's (which starts from +0.0), in every
    kernel shape: per output, serial, split, vec4 with subgroups; only scans start from -0.0."""
    for dt in supported(device, ("real floating", "complex floating")):
        a = _negzero(shape, dt)
        got = to_numpy(xp.sum(xp.asarray(a, device=device), axis=axis))
        want = np.sum(a, axis=axis)
        assert got.dtype == dt
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got.real), np.signbit(want.real))


def test_sum_keeps_positive_zero_where_numpy_does(device):
    """The empty sum is +0.0, and so is -0.0 + 0.0 (IEEE, NumPy)."""
    for dt in supported(device, ("real floating", "complex floating")):
        for a in (np.zeros(0, dt), np.array([-0.0, 0.0], dt), np.array([0.0, -0.0, -0.0], dt)):
            got = to_numpy(xp.sum(xp.asarray(a, device=device)))
            assert got.dtype == dt and got == 0 and not np.signbit(got.real), (a, got)
            cs = to_numpy(xp.cumulative_sum(xp.asarray(a, device=device)))
            np.testing.assert_array_equal(np.signbit(cs.real), np.signbit(np.cumsum(a).real))


def test_renderers_start_scans_from_negative_zero():
    """The identity of a float scan is -0.0 in both renderers (WGSL, CUDA C: one
    ``ExprRender.identity``), of a sum +0.0 (NumPy's), of integer ones 0."""
    from ruda.runtime import cuda_c, ir, wgsl
    k = ir.Kernel("s", (ir.Arg("x", "f32", 1), ir.Arg("o", "f32", 0, True)), (), 1,
                  ir.Reduce("sum", ir.load(0, "f32"), 1, 0))
    for mod, r in ((wgsl, wgsl._Render(wgsl.WGSLRenderer(f64=True, int64=True), k)), (cuda_c, cuda_c._Render(k))):
        for dt in ("f32", "f64"):
            assert r.identity("add", dt) == mod.literal(-0.0, dt)
            assert r.identity("sum", dt) == mod.literal(0.0, dt) == mod.literal(0, dt)
        assert r.identity("add", "c64") == mod.literal(complex(-0.0, -0.0), "c64")
        assert r.identity("add", "i32") == r.identity("sum", "i32") == mod.literal(0, "i32")


# --- division --------------------------------------------------------------------------------

_DIVISIONS = {   # (numerator, divisor) parts: divisors whose |Re| + |Im| overflows, zero, infinite
    xp.complex64: [((1e30, 0.0), (3.3e38, 3e37)), ((-2.0, 5.0), (-3e38, 2e38)), ((1.0, 1.0), (math.inf, 0.0)),
                   ((1.0, 1.0), (0.0, 0.0)), ((1.0, 0.0), (0.0, -0.0)), ((2.0, 2.0), (0.0, 0.5)),
                   ((3.0, 5.0), (1.25, -1.25)), ((-1.5, 2.5), (-math.inf, 1.0)), ((math.nan, 1.0), (1.0, 1.0))],
    xp.complex128: [((1e300, 0.0), (1.7e308, 1e307)), ((-2.0, 5.0), (-1.6e308, 1e308)), ((1.0, 1.0), (math.inf, 0.0)),
                    ((1.0, 1.0), (0.0, 0.0)), ((1.0, 0.0), (0.0, -0.0)), ((2.0, 2.0), (0.0, 0.5)),
                    ((3.0, 5.0), (1.25, -1.25)), ((-1.5, 2.5), (-math.inf, 1.0)), ((math.nan, 1.0), (1.0, 1.0))],
}


def test_divide_by_huge_zero_and_infinite_divisors(device):
    """divide, / and reciprocal as NumPy's (Smith's division: by the larger part of the divisor; a
    zero divisor gives each part over +0): CuPy's scaled by |Re d| + |Im d| (NaN + NaN j where that sum overflowed, for 0j and
    infinite divisors, and (2 + 2j) / 0.5j an ulp off 4 - 4j); each part within 2 ulp, zeros,
    infinities and NaN exactly."""
    for dt in supported(device, "complex floating"):
        a = _array([p for p, _ in _DIVISIONS[dt]], dt)
        b = _array([q for _, q in _DIVISIONS[dt]], dt)
        with np.errstate(all="ignore"):
            wants = (a / b, a / b, np.reciprocal(b))
        tiny = np.finfo(a.real.dtype).tiny if flushes_subnormals(device) else 0.0
        x, y = xp.asarray(a, device=device), xp.asarray(b, device=device)
        for what, got, want in zip(("divide", "/", "reciprocal"), (xp.divide(x, y), x / y, xp.reciprocal(y)), wants):
            assert got.dtype == dt
            for g, w, d in zip(to_numpy(got).tolist(), want.tolist(), b.tolist()):
                if what == "reciprocal" and d == 0:     # NumPy's NaN + NaN j (wgpu: inf + 0j)
                    continue
                for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
                    if abs(wp) < tiny and gp == 0:      # a subnormal part, flushed
                        continue
                    assert _part_ok(gp, wp, want.real.dtype.type(wp), 2), \
                        f"{what} {np.dtype(dt).name}: got {g!r}, want {w!r}"


def test_signs_of_zero_parts(device):
    """Zero parts with the standard's signs on every device: cosh(x + 0j) has Im = sinh(x) sin(0)
    (-0 for x < 0 or x = -0; wgpu kept +0, so cosh(x) != cosh(-x)), cos likewise; log1p(x - 0j)
    keeps -0 j (the host's + 1j * v made it +0); sign(+-0 +- 0j) is 0 + 0j (the host kept the
    signs); tan(x +- inf j) is 0 with x's sign +- 1j, -i tanh(iz) (C99's zero takes sin 2x's)."""
    inf = math.inf
    cases = {"cosh": [(-1.0, 0.0), (-0.0, 0.0), (-inf, 0.0), (1.0, -0.0), (-2.0, -0.0), (3.0, 0.0), (0.0, -0.0)],
             "cos": [(0.0, 1.0), (-0.0, -1.0), (0.0, -2.0), (-0.0, 3.0)],
             "log1p": [(1e-5, -0.0), (0.0, -0.0), (-0.25, -0.0), (3.0, -0.0), (0.1, 0.0)],
             "sign": [(-0.0, -0.0), (0.0, -0.0), (-0.0, 0.0), (1.0, -0.0), (-3.0, 0.0)],
             "tan": [(-2.5, inf), (30.0, inf), (1.0, -inf), (-0.0, inf), (0.0, -inf)]}
    want_of = {"cosh": np.cosh, "cos": np.cos}
    for dt in supported(device, "complex floating"):
        for name, pairs in cases.items():
            z = _array(pairs, dt)
            got = to_numpy(getattr(xp, name)(xp.asarray(z, device=device)))
            if name == "sign":
                want = np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z))).astype(dt)
            elif name == "tan":
                want = _array([(math.copysign(0.0, x), math.copysign(1.0, y)) for x, y in pairs], dt)
            elif name == "log1p":       # Im z = +-0: log1p(x) +- 0j (NumPy's complex log1p loses digits)
                want = _array([(math.log1p(x), math.atan2(y, 1 + x)) for x, y in pairs], dt)
            else:
                want = want_of[name](z.astype(np.complex128)).astype(dt)
            np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dt).eps, err_msg=name)
            for part in ("real", "imag"):
                g, w = getattr(got, part), getattr(want, part)
                zeros = w == 0
                np.testing.assert_array_equal(np.signbit(g[zeros]), np.signbit(w[zeros]),
                                              err_msg=f"{name} {np.dtype(dt).name} {part} zero signs")
