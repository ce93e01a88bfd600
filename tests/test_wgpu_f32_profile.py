"""wgpu on a browser-class adapter: no shader-f64, no shader-int64 (browsers, Metal, OpenGL-only).

A capable adapter stands in with ``RUDA_WGPU_WITHOUT=shader-f64,shader-int64``.  Float32 math
then cannot go through the f64 library: ``ruda/runtime/wgsl_math32.py`` writes it from f32 and
integer arithmetic (Payne-Hanek trig, exp/expm1, logs).  The device work runs once per module,
in a fresh process with the features withheld (in this one when it already runs that profile,
as CI's second pass does); the oracle is NumPy float64 (complex128) of the same inputs.
"""
import math
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ruda as xp

pytest.importorskip("wgpu")

PROFILE = "shader-f64,shader-int64"

# function -> (sampler of float32 inputs, max ulp against the correctly rounded float32 result)
REAL = {
    "sin": (lambda r, n: _wide(r, n, 88), 2), "cos": (lambda r, n: _wide(r, n, 88), 2),
    "tan": (lambda r, n: _wide(r, n, 88), 3),
    "exp": (lambda r, n: r.uniform(-104, 89, n), 2), "expm1": (lambda r, n: _near0(r, n, -20, 89), 2),
    "log": (lambda r, n: np.exp(r.uniform(-103, 88.7, n)), 1.5),
    "log2": (lambda r, n: np.exp(r.uniform(-103, 88.7, n)), 2),
    "log10": (lambda r, n: np.exp(r.uniform(-103, 88.7, n)), 2),
    "log1p": (lambda r, n: np.exp(r.uniform(-30, 88, n)) - 0.999, 2.5),
    "sinh": (lambda r, n: _near0(r, n, -89, 89), 3), "cosh": (lambda r, n: r.uniform(-89, 89, n), 3),
    "tanh": (lambda r, n: _near0(r, n, -12, 12), 3),
}
COMPLEX = ("exp", "expm1", "sin", "cos", "tan", "sinh", "cosh", "tanh", "log", "log1p", "sqrt")
SPECIAL = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-38, 1.0, -1.0,
                    88.72283, 88.72284, -87.33655, -103.97, -104.0, 3.4028235e38, -3.4028235e38,
                    1.5707964, 3.1415927, 1.6263033e38, 8.7e-39], np.float32)


def _wide(rng, n, top):
    """Signed magnitudes spread over every binade up to e^top, and small ones."""
    mag = np.exp(rng.uniform(-5, top, n))
    return np.concatenate([mag * rng.choice([-1.0, 1.0], n), rng.uniform(-7, 7, n // 4)])


def _near0(rng, n, lo, hi):
    return np.concatenate([rng.uniform(lo, hi, n), rng.uniform(-1, 1, n // 4), rng.uniform(-1e-6, 1e-6, 50)])


def _inputs():
    rng = np.random.default_rng(20261205)
    data = {f"real:{k}": np.concatenate([s(rng, 6000), SPECIAL]).astype(np.float32) for k, (s, _) in REAL.items()}
    re = np.concatenate([rng.uniform(-10, 10, 3000), rng.normal(size=1000) * 1e-3])
    im = np.concatenate([rng.uniform(-10, 10, 1500),    # large imaginary parts: sin/cos of big arguments
                         np.exp(rng.uniform(0, 40, 1500)) * rng.choice([-1, 1], 1500), rng.normal(size=1000) * 1e-3])
    data["complex"] = np.concatenate([re + 1j * im, [1 + 146064688j]]).astype(np.complex64)
    return data


# Runs on the wgpu device of the process it is in; writes the results beside the inputs.
_WORKER = """
import sys, warnings, numpy as np, ruda as xp
warnings.filterwarnings("ignore")
d = dict(np.load(sys.argv[1]))
out = {}
for key, x in d.items():
    names = [key.split(":")[1]] if key.startswith("real:") else %r
    for n in names:
        out[f"{key}|{n}"] = np.asarray(getattr(xp, n)(xp.asarray(x, device="wgpu")).to_device("cpu"))
m = xp.asarray([[1.0, 2.0], [2.0, 4.0]], device="wgpu")
out["rank"] = np.asarray(xp.linalg.matrix_rank(m).to_device("cpu"))
v = xp.asarray(np.array([0.5, 0.25, 3.0], np.float32), device="wgpu")
out["norms"] = np.array([float(xp.linalg.vector_norm(v, ord=o)) for o in (3.04e-60, 1e-3, 2.5)])
out["notes"] = np.array(xp.device("wgpu").backend.notes())
out["ftz"] = np.array(xp.device("wgpu").backend.flushes_subnormals)
info = xp.__array_namespace_info__()
out["dtypes"] = np.array(sorted(info.dtypes(device="wgpu")))
out["defaults"] = np.array([str(v) for v in info.default_dtypes(device="wgpu").values()])
np.savez(sys.argv[2], **out)
""" % (COMPLEX,)


def _in_profile():
    b = xp.device("wgpu").backend
    return not b.has_f64 and not b.has_i64


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    try:
        xp.device("wgpu")
    except ValueError as e:
        pytest.skip(f"no wgpu device: {e}")
    d = tmp_path_factory.mktemp("f32profile")
    data = _inputs()
    np.savez(d / "in.npz", **data)
    env = dict(os.environ, RUDA_WGPU_WITHOUT=PROFILE, RUDA_DEVICE="cpu")
    if _in_profile():      # this process already runs the profile: no second process needed
        env = os.environ
    p = subprocess.run([sys.executable, "-c", _WORKER, str(d / "in.npz"), str(d / "out.npz")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return data, dict(np.load(d / "out.npz"))


def _ulps(got, x, name):
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    sp = np.spacing(np.abs(ref32)).astype(np.float64)
    sp[sp == 0] = 2.0 ** -149
    with np.errstate(invalid="ignore"):
        e = np.abs(got.astype(np.float64) - ref) / sp
    same = (got == ref32) & (np.signbit(got) == np.signbit(ref32)) | (np.isnan(got) & np.isnan(ref32))
    e[same] = 0
    e[np.isinf(ref32) & ~same] = np.inf       # overflow where NumPy has none, or the reverse
    e[np.isnan(e)] = np.inf
    return e


def _flushed(got, x, name):
    """Where an adapter that flushes subnormals (WGSL allows it) answers as it may: a subnormal
    input read as the zero of its sign, or a subnormal result written as zero."""
    tiny = 2.0 ** -126
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x.astype(np.float64))
        at0 = getattr(np, name)(np.copysign(0.0, x).astype(np.float64)).astype(np.float32)
    sub_in = (x != 0) & (np.abs(x) < tiny) & ((got == at0) | (np.isnan(got) & np.isnan(at0)))
    return sub_in | ((ref != 0) & (np.abs(ref) < tiny) & (got == 0))


@pytest.mark.parametrize("name", sorted(REAL))
def test_float32_functions_within_few_ulp(results, name):
    """Every binade (sin/cos/tan up to 3.4e38: the integer Payne-Hanek reduction), subnormal
    results and inputs, overflow edges and the special values, against the correctly rounded
    float32 of NumPy's float64 result."""
    data, out = results
    x = data[f"real:{name}"]
    got = out[f"real:{name}|{name}"]
    assert got.dtype == np.float32
    e = _ulps(got, x, name)
    if out["ftz"]:
        e[_flushed(got, x, name)] = 0
    worst = int(np.argmax(e))
    assert e.max() <= REAL[name][1], (name, float(x[worst]), float(got[worst]), e.max())


@pytest.mark.parametrize("name", COMPLEX)
def test_complex64_functions_track_numpy(results, name):
    """complex64 functions built on exp/sin/cos/expm1/log, large imaginary parts included (the
    suite's expm1(1 + 1.46e8j) was +-e garbage before the reduction): normwise within 8 eps of
    the complex128 result, where NumPy's own complex64 is within 6."""
    data, out = results
    z = data["complex"]
    got = out[f"complex|{name}"].astype(np.complex128)
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(z.astype(np.complex128))
    ok = np.isfinite(ref) & (np.abs(ref) < 1e37) & (np.abs(ref) > 1e-30)
    err = np.abs(got[ok] - ref[ok]) / np.abs(ref[ok])
    assert out[f"complex|{name}"].dtype == np.complex64
    assert ok.sum() > 2000 and err.max() <= 8 * 2.0 ** -24, (name, z[ok][np.argmax(err)], err.max())


def test_dtypes_defaults_rank_and_info_note(results):
    """float32/int32 defaults; matrix_rank in the default integer dtype (NumPy's int64 result no
    longer refused on upload); vector_norm of a tiny ord; ``python -m ruda info``'s note names
    what the profile costs."""
    _, out = results
    assert list(out["dtypes"]) == ["bool", "complex64", "float32", "int16", "int32", "int8",
                                   "uint16", "uint32", "uint8"]
    assert list(out["defaults"]) == ["float32", "complex64", "int32", "int32"]
    assert out["rank"].dtype == np.int32 and int(out["rank"]) == 1
    # vector_norm's p and 1/p held as float32 (1 / 3e-60 is past its range: inf, as NumPy's)
    a = np.array([0.5, 0.25, 3.0], np.float32)
    with np.errstate(all="ignore"):
        want = [float(np.linalg.vector_norm(a, ord=o)) for o in (3.04e-60, 1e-3, 2.5)]
    np.testing.assert_allclose(out["norms"], want, rtol=1e-5)
    # withheld here, or a real adapter's own lack (OpenGL...); beside it, a flushing adapter's note
    (note,) = [n for n in out["notes"] if "subnormals" not in n]
    assert "no float64, complex128, int64, uint64" in note
    assert "RUDA_WGPU_WITHOUT" in note or "lacks shader-f64, shader-int64" in note


def test_info_note_on_an_opengl_adapter(monkeypatch):
    """Where the only adapter is OpenGL (no Vulkan driver), the note says so and gives the fix."""
    from ruda.backends.wgpu import WgpuBackend, _device

    class _Adapter:
        info = {"backend_type": "OpenGL"}

    class _Ctx:
        adapter, features = _Adapter(), frozenset({"timestamp-query"})

    monkeypatch.delenv("RUDA_WGPU_WITHOUT", raising=False)
    b = object.__new__(WgpuBackend)
    b.index, b.ctx, b.has_f64, b.has_i64 = 0, _Ctx(), False, False
    b.lock = threading.RLock()      # the device's lock, which every entry point takes
    b._ftz = False          # flushes_subnormals, which would launch on this stub
    assert _device._is_gl(b.ctx.adapter)
    (note,) = b.notes()
    assert note.startswith("OpenGL adapter") and "no float64, complex128, int64, uint64" in note
    assert "apt-get install mesa-vulkan-drivers" in note and "float32" in note
    b.ctx.features, b.has_f64, b.has_i64 = frozenset({"shader-f64", "shader-int64"}), True, True
    assert b.notes() == []
    b._ftz = True           # an adapter that flushes subnormals (NVIDIA's Vulkan driver) says so
    (note,) = b.notes()
    assert "subnormals" in note and "flush to zero" in note
