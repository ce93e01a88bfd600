"""The cuda backend's kernel launchers (ruda/backends/cuda/_nn.py, _nn_attention.py, _nn_conv.py,
_gemv.py, _fast.py) end to end without a GPU: NumPy arrays posing as CuPy's (a pointer, a device context, CuPy's
allocation calls) and every compiled kernel run by tests/_cuda_emu.py.  Checks what the kernel
tests cannot: argument order, strides, grids, the choice of path, views and reshapes."""
import contextlib
import ctypes
import importlib
import math
import re
import subprocess
import sys
import types

import numpy as np
import pytest

import _cuda_emu as emu
import _fake_cupy
from ruda.backends.cuda import _gemv, _nn, _nn_attention, _nn_conv, _nn_launch
from ruda.runtime.kernels import conv_cuda

pytestmark = pytest.mark.skipif(not emu.available(), reason="no g++ to run CUDA C on the host")
ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)


class Dev(np.ndarray):
    """A NumPy array with the parts of a CuPy array that the launchers use."""
    device = property(lambda self: contextlib.nullcontext())
    data = property(lambda self: types.SimpleNamespace(ptr=self.ctypes.data))
    _c_contiguous = property(lambda self: self.flags.c_contiguous)


def dev(a):
    return np.ascontiguousarray(a).view(Dev)


_CP = types.SimpleNamespace(
    empty=lambda shape, dtype: np.zeros(shape, dtype).view(Dev),
    ascontiguousarray=lambda a: np.ascontiguousarray(a).view(Dev),
    broadcast_to=lambda a, shape: np.broadcast_to(a, shape).view(Dev),
    copyto=np.copyto,
    cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0)))


def _params(src, name):
    """The C parameter list of kernel ``name`` in ``src``, macros expanded."""
    head = "#define __global__\n#define __launch_bounds__(x)\n#define __restrict__\n"
    out = subprocess.run(["g++", "-E", "-P", "-x", "c++", "-"], input=head + src, capture_output=True,
                         text=True, check=True).stdout
    return re.search(r'extern "C"\s+void\s+' + name + r"\s*\(([^)]*)\)", out).group(1)


_CTYPES = {np.int64: ctypes.c_longlong, np.int32: ctypes.c_int, np.float64: ctypes.c_double,
           np.float32: ctypes.c_float}
launched = []


def _function(key, make_source, name):
    src = make_source()
    fn = emu.build(src, name, _params(src, name))

    def launch(grid, block, args):
        conv = [a if isinstance(a, np.ndarray) else None if a is None or isinstance(a, np.uint64)
                else _CTYPES[type(a)](a) for a in args]
        launched.append(name)
        emu.launch(fn, grid, block[0], *conv)
    return launch


@pytest.fixture(autouse=True)
def _emulated(monkeypatch):
    for mod in (_nn, _nn_attention, _gemv, _nn_conv):
        monkeypatch.setattr(mod, "function", _function)
        monkeypatch.setattr(mod, "_cp", lambda: _CP)
    monkeypatch.setattr(_nn_launch, "_cp", lambda: _CP)
    monkeypatch.setattr(_nn_attention, "sms", lambda: 2)
    monkeypatch.setattr(_nn_launch, "sms", lambda: 2)
    # cuBLAS's product: NumPy in float64, rounded to the operands' dtype
    monkeypatch.setattr(_nn_conv, "_matmul", _product)
    launched.clear()


def _product(a, b, out=None):
    r = dev((f64(a) @ f64(b)).astype(a.dtype))
    if out is None:
        return r
    out[...] = r
    return out


def bf16(a):
    return dev(np.asarray(a, np.float32).astype(BF16))


def f64(a):
    return np.asarray(a).astype(np.float64)


def test_add_rms_norm_bfloat16_and_float32():
    rng = np.random.default_rng(1)
    for make, tol in ((bf16, 2e-2), (lambda a: dev(a.astype(np.float32)), 1e-5)):
        x, r, w = make(rng.standard_normal((2, 1, 576))), make(rng.standard_normal((2, 1, 576))), \
            make(rng.standard_normal(576))
        s, y = _nn.add_rms_norm(x, r, w, 1e-6)
        assert s.shape == y.shape == (2, 1, 576) and s.dtype == y.dtype == x.dtype
        np.testing.assert_array_equal(f64(s), f64((f64(x) + f64(r)).astype(x.dtype)))
        want = f64(s) / np.sqrt((f64(s) ** 2).mean(-1, keepdims=True) + 1e-6) * f64(w)
        np.testing.assert_allclose(f64(y), want, rtol=tol, atol=tol)
    assert launched == ["ruda_rows", "ruda_rows"]


def test_linear_swiglu_and_gemv():
    rng = np.random.default_rng(2)
    x, w = bf16(rng.standard_normal((3, 264))), bf16(rng.standard_normal((74, 264)) / 8)
    y = _nn.linear_swiglu(x, w)
    gu = f64(x) @ f64(w).T
    g, u = f64(gu[:, :37].astype(BF16)), f64(gu[:, 37:].astype(BF16))
    np.testing.assert_allclose(f64(y), g / (1 + np.exp(-g)) * u, rtol=2e-2, atol=2e-2)
    plain = _gemv.gemv(x.view(np.uint16)[None], w.view(np.uint16).T[None], 3, 264, 74)
    np.testing.assert_allclose(f64(plain.view(BF16)), gu, rtol=2 ** -7, atol=2 ** -7 * np.abs(gu).max())
    assert _gemv.gemv(x.view(np.uint16)[None], w.view(np.uint16)[None], 3, 264, 74) is None  # not W.T
    assert launched == ["ruda_gemv", "ruda_gemv"]


def test_rms_norm_linear_and_add_linear():
    """The GEMV's norm and residual variants through their launchers: shapes, the kernel's
    extra arguments, and declining rows longer than NORM_MAX_K."""
    rng = np.random.default_rng(4)
    x, g, w = bf16(rng.standard_normal((2, 64)) * 3), bf16(rng.standard_normal(64)), \
        bf16(rng.standard_normal((40, 64)) / 8)
    y = _nn.rms_norm_linear(x, g, w, 1e-5, False)
    h = f64(x) / np.sqrt((f64(x) ** 2).mean(-1, keepdims=True) + 1e-5) * f64(g)
    assert y.shape == (2, 40) and y.dtype == x.dtype
    np.testing.assert_allclose(f64(y), h @ f64(w).T, rtol=3e-2, atol=3e-2)
    s = _nn.rms_norm_linear(x, g, w, 1e-5, True)
    gu = h @ f64(w).T
    assert s.shape == (2, 20)
    np.testing.assert_allclose(f64(s), gu[:, :20] / (1 + np.exp(-gu[:, :20])) * gu[:, 20:],
                               rtol=5e-2, atol=5e-2)
    r = bf16(rng.standard_normal((2, 40)))
    z = _nn.add_linear(r, x, w)
    np.testing.assert_allclose(f64(z), f64(r) + f64(x) @ f64(w).T, rtol=2e-2, atol=3e-2)
    long = bf16(rng.standard_normal((1, 1032)))
    assert _nn.rms_norm_linear(long, bf16(rng.standard_normal(1032)),
                               bf16(rng.standard_normal((8, 1032))), 1e-5, False) is NotImplemented
    assert launched == ["ruda_gemv"] * 3


def test_apply_rope_reads_a_permuted_view_in_place():
    """(B, T, H, D) projections seen as (B, H, T, D), as a decoder's prefill rotates q and k:
    the kernel reads the strided view itself; a 3-d contiguous input gives the same rotation."""
    rng = np.random.default_rng(4)
    B, T, H, D, r = 2, 5, 3, 16, 12
    proj = dev(rng.standard_normal((B, T, H, D)).astype(np.float32))
    ang = rng.standard_normal((T, r // 2))
    cos, sin = dev(np.cos(ang).astype(np.float32)), dev(np.sin(ang).astype(np.float32))
    x = np.transpose(proj, (0, 2, 1, 3))
    want = f64(x).copy()
    a, b = want[..., :r // 2].copy(), want[..., r // 2:r].copy()
    want[..., :r // 2], want[..., r // 2:r] = a * f64(cos) - b * f64(sin), b * f64(cos) + a * f64(sin)
    y = _nn.apply_rope(x, cos, sin, False, r)
    assert y.shape == (B, H, T, D) and y.flags.c_contiguous
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    flat = _nn.apply_rope(dev(np.ascontiguousarray(x).reshape(B * H, T, D)), cos, sin, False, r)
    np.testing.assert_allclose(flat.reshape(B, H, T, D), want, rtol=1e-6, atol=1e-6)
    assert launched == ["ruda_rope"] * 2


def test_rope_kv_put():
    rng = np.random.default_rng(3)
    B, Hq, H, T, D = 2, 6, 2, 5, 16
    qkv = bf16(rng.standard_normal((B, (Hq + 2 * H) * D)))
    ang = rng.standard_normal((1, D // 2))
    cos, sin = bf16(np.cos(ang)), bf16(np.sin(ang))
    kc, vc = bf16(np.zeros((B, H, T, D))), bf16(np.zeros((B, H, T, D)))
    q = _nn.rope_kv_put(qkv, cos, sin, dev(np.array([2], np.int32)), kc, vc, Hq)
    heads = f64(qkv).reshape(B, Hq + 2 * H, D)
    c, s = np.tile(f64(cos)[0], 2), np.tile(f64(sin)[0], 2)
    rot = heads * c + np.concatenate([-heads[..., D // 2:], heads[..., :D // 2]], -1) * s
    np.testing.assert_allclose(f64(q)[:, :, 0], rot[:, :Hq], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(f64(kc)[:, :, 2], rot[:, Hq:Hq + H], rtol=2e-2, atol=2e-2)
    np.testing.assert_array_equal(f64(vc)[:, :, 2], heads[:, Hq + H:])
    assert launched == ["ruda_rope_kv"]


def test_activation():
    x = dev(np.linspace(-6, 6, 1001).astype(np.float32))
    y = _nn.activation(x, "silu", 0.0, 0.0)
    np.testing.assert_allclose(y, f64(x) / (1 + np.exp(-f64(x))), rtol=1e-6, atol=1e-6)
    assert launched == ["ruda_activation"]


def test_channel_affine():
    """batch_norm's last step: bfloat16 x with float32 scale and shift, float32 x; a float64
    scale for float32 x declines."""
    rng = np.random.default_rng(5)
    sc, sh = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    for make, tol in ((bf16, 1e-2), (lambda a: dev(a.astype(np.float32)), 1e-6)):
        x = make(rng.standard_normal((2, 6, 45)))
        y = _nn.channel_affine(x, dev(sc), dev(sh))
        assert y.shape == x.shape and y.dtype == x.dtype
        want = f64(x) * sc[:, None] + sh[:, None]
        np.testing.assert_allclose(f64(y), want, rtol=tol, atol=tol * np.abs(want).max())
    assert _nn.channel_affine(x, dev(sc.astype(np.float64)), dev(sh)) is NotImplemented
    assert launched == ["ruda_channel_affine", "ruda_channel_affine"]


def test_batch_norm():
    """Inference batch_norm in one launch: bfloat16 x with float32 statistics, float32 x without
    weight and bias; float64 statistics for float32 x decline."""
    rng = np.random.default_rng(6)
    mean, w, b = (rng.standard_normal(7).astype(np.float32) for _ in range(3))
    var = (rng.random(7) + 0.2).astype(np.float32)
    for make, wb, tol in ((bf16, (w, b), 1e-2), (lambda a: dev(a.astype(np.float32)), None, 1e-6)):
        x = make(rng.standard_normal((3, 7, 70)))
        y = _nn.batch_norm(x, dev(mean), dev(var), *((None, None) if wb is None else map(dev, wb)),
                           1e-5)
        assert y.shape == x.shape and y.dtype == x.dtype
        scale = (1.0 if wb is None else f64(w)) / np.sqrt(f64(var) + 1e-5)
        shift = (0.0 if wb is None else f64(b)) - f64(mean) * scale
        want = f64(x) * scale[:, None] + shift[:, None]
        np.testing.assert_allclose(f64(y), want, rtol=tol, atol=tol * np.abs(want).max())
    assert _nn.batch_norm(x, dev(mean.astype(np.float64)), dev(var), None, None, 1e-5) \
        is NotImplemented
    assert launched == ["ruda_batch_norm", "ruda_batch_norm"]


def test_relu6_activation():
    y = _nn.activation(dev(np.array([-1.0, 0.0, 2.5, 6.0, 7.0, np.nan], np.float32)), "relu6",
                       0.0, 0.0)
    np.testing.assert_array_equal(y, [0, 0, 2.5, 6, 6, np.nan])
    assert launched == ["ruda_activation"]


@pytest.mark.parametrize("S,kernels", [(90, ["ruda_decode_vec"]), (700, ["ruda_decode_vec", "ruda_decode_merge"])])
def test_decode_attention(S, kernels):
    """One query per head: few keys in one launch, more split over blocks and merged."""
    rng = np.random.default_rng(S)
    B, Hq, H, D = 1, 6, 2, 64
    q, k, v = (bf16(rng.standard_normal(s)) for s in ((B, Hq, 1, D), (B, H, S, D), (B, H, S, D)))
    mask = dev(rng.random((B, 1, 1, S)) < 0.7)
    o = _nn_attention.sdpa(q, k, v, mask, False, None, None)
    G = Hq // H
    kk, vv = np.repeat(f64(k), G, 1), np.repeat(f64(v), G, 1)
    sc = np.where(np.asarray(mask), f64(q) @ np.swapaxes(kk, -1, -2) / math.sqrt(D), -np.inf)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    np.testing.assert_allclose(f64(o), (p @ vv) / p.sum(-1, keepdims=True), rtol=2e-2, atol=2e-2)
    assert launched == kernels


def _sdpa_ref(q, k, v, mask):
    """softmax(q k^T / sqrt(D) + mask) v in float64, as torch: a bool mask keeps where True, a float
    mask is added to the scores (only -inf removes a key); a NaN score makes its row NaN; a row with
    no key left gives 0 (ruda's rule, torch 2.5's)."""
    G = q.shape[1] // k.shape[1]
    kk, vv = np.repeat(f64(k), G, 1), np.repeat(f64(v), G, 1)
    s = f64(q) @ np.swapaxes(kk, -1, -2) / math.sqrt(q.shape[-1])
    s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + f64(mask)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(m == -np.inf, 0, m))
    den = p.sum(-1, keepdims=True)
    return (p @ vv) / np.where(den == 0, 1, den)


# (dtype, D, L, S, the kernels the launcher runs): the tiled kernel (more than 16 queries; D 20 keeps
# bfloat16 off the tensor cores), the scalar split decode (D 20: rows not in 16-byte vectors), the
# 16-byte decode split over blocks (S 320: 80 keys a block with the emulator's 2 multiprocessors)
# and in one block (S <= 128)
ATT_PATHS = [pytest.param("float32", 16, 40, 320, ["ruda_attention"], id="tile"),
             pytest.param("float32", 20, 1, 320, ["ruda_decode", "ruda_decode_merge"], id="decode-split"),
             pytest.param("float32", 16, 1, 320, ["ruda_decode_vec", "ruda_decode_merge"], id="decode-vec-split"),
             pytest.param("float32", 16, 1, 96, ["ruda_decode_vec"], id="decode-vec-one-block")]


def _att_inputs(dtype, D, L, S, seed):
    rng = np.random.default_rng(seed)
    B, Hq, Hkv = 2, 2, 1
    return [rng.standard_normal(s).astype(np.float32).astype(dtype)
            for s in ((B, Hq, L, D), (B, Hkv, S, D), (B, Hkv, S, D))]


@pytest.mark.parametrize("dtype,D,L,S,kernels", ATT_PATHS + [
    pytest.param("bfloat16", 20, 40, 320, ["ruda_attention"], id="tile-bfloat16"),
    pytest.param("bfloat16", 16, 1, 320, ["ruda_decode_vec", "ruda_decode_merge"], id="decode-vec-split-bfloat16")])
def test_attention_additive_mask_of_finfo_min(dtype, D, L, S, kernels):
    """A padding mask holding finfo.min (Hugging Face's) is added to the scores as torch adds it:
    the padded keys get weight 0, a query whose keys are all padded the mean of V (equal scores),
    not 0 (finfo.min times log2(e) must not become -inf); a row all -inf still gives 0."""
    dt = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    q, k, v = _att_inputs(dt, D, L, S, 11)
    mask = np.zeros((2, 2, L, S), dt)
    low = ml_dtypes.finfo(dt).min               # (NumPy's finfo knows bfloat16 only with some ml_dtypes)
    mask[0] = low                               # batch 0: every key padded
    mask[1, :, :, :5] = low                     # batch 1: left padding
    mask[1, 1, 0] = -np.inf                     # no key at all: 0
    o = _nn_attention.sdpa(dev(q), dev(k), dev(v), dev(mask), False, None, None)
    assert o.dtype == dt and launched == kernels
    want = _sdpa_ref(q, k, v, mask)
    np.testing.assert_allclose(want[0], np.broadcast_to(f64(v)[0].mean(1, keepdims=True), want[0].shape),
                               rtol=1e-12, atol=1e-12)
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(f64(o), want, rtol=tol, atol=tol)
    assert (f64(o)[1, 1, 0] == 0).all()


@pytest.mark.parametrize("dtype,D,L,S,kernels", ATT_PATHS)
def test_attention_nan_scores_give_nan_rows(dtype, D, L, S, kernels):
    """A NaN score makes its row NaN (torch), whatever the path: NaN in a query (every score of
    the row NaN) and NaN in the first half of the keys (whole key tiles and whole decode splits of
    NaN scores: none may be taken for empty).  NaN keys masked out (bool) are not seen; a row with
    no key left still gives 0."""
    q, k, v = _att_inputs(dtype, D, L, S, 12)
    q[0, 0, 0, 3] = np.nan
    k[1, 0, :S // 2, 1] = np.nan
    mask = np.ones((2, 2, L, S), bool)
    mask[0, 1, 0] = False                       # no key at all: 0
    mask[1, 1, 0, :S // 2] = False              # the NaN keys masked out: a finite row
    o = _nn_attention.sdpa(dev(q), dev(k), dev(v), dev(mask), False, None, None)
    assert o.dtype == q.dtype and launched == kernels
    want = _sdpa_ref(q, k, v, mask)
    assert np.isnan(want[0, 0, 0]).all() and np.isnan(want[1, 0]).all() and np.isfinite(want[1, 1, 0]).all()
    np.testing.assert_allclose(f64(o), want, rtol=1e-5, atol=1e-5)   # NaN where want is NaN
    assert (f64(o)[0, 1, 0] == 0).all()


@pytest.fixture
def fast(monkeypatch):
    """ruda.backends.cuda._fast imported over the fake CuPy, its modules compiled by the
    emulator; the modules it imports are forgotten afterwards."""
    _fake_cupy.install(monkeypatch)
    # imported already over the real CuPy (a GPU machine's earlier test): imported afresh here
    # over the fake one, and put back afterwards
    own = ("ruda.backends.cuda._fast", "ruda.backends.cuda._kernels")
    saved = {n: sys.modules.pop(n) for n in own if n in sys.modules}
    for name in saved:          # `from ruda.backends.cuda import _kernels` reads the package's attribute
        parent, _, child = name.rpartition(".")
        vars(sys.modules[parent]).pop(child, None)
    before = set(sys.modules)
    try:
        mod = importlib.import_module("ruda.backends.cuda._fast")
        kernels = importlib.import_module("ruda.backends.cuda._kernels")

        def module(kind, name, dtype, config=None):
            src = kernels.source(kind, name, dtype, config)
            return types.SimpleNamespace(get_function=lambda entry: _function(None, lambda: src, entry))
        monkeypatch.setattr(kernels, "module", module)
        yield mod
    finally:
        for name in set(sys.modules) - before:
            parent, _, child = name.rpartition(".")
            if parent in sys.modules and getattr(sys.modules[parent], child, None) is sys.modules[name]:
                delattr(sys.modules[parent], child)
            del sys.modules[name]
        for name, m in saved.items():
            sys.modules[name] = m
            parent, _, child = name.rpartition(".")
            setattr(sys.modules[parent], child, m)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduce(fast, name):
    """The argmax/argmin launcher: a block a row (12 rows of 1500), or chunks and a merge (the
    whole 18000 as one row); the axis and keepdims shapes."""
    impl = lambda *a, **k: pytest.fail("the fallback ran")       # noqa: E731
    op = fast.arg_reduce(name, impl)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 1500)).astype(np.float32)
    x[1, 2, 700] = np.nan
    for axis, keep in [(None, False), (None, True), (2, False), (2, True)]:
        got = op(dev(x), axis=axis, keepdims=keep)
        want = getattr(np, name)(x, axis=axis, keepdims=keep)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_array_equal(got, want)
    whole = [f"ruda_{name}_split", f"ruda_{name}_merge"]
    assert launched == whole * 2 + [f"ruda_{name}_rows"] * 2


@pytest.mark.parametrize("make,tol", [(bf16, 2e-2), (lambda a: dev(a.astype(np.float32)), 1e-5)])
@pytest.mark.parametrize("planes", [True, False])
def test_conv(monkeypatch, make, tol, planes):
    """Depthwise in one launch (bias fused); dense and grouped as im2col + product + bias, in
    blocks of images when the columns exceed COLS_BYTES; a pointwise conv without im2col (a
    strided one with it); 1-d through 3-d. im2col by planes in shared memory, or (planes over
    ``PLANE_BYTES``) by rows of columns."""
    if not planes:
        monkeypatch.setattr(conv_cuda, "PLANE_BYTES", 0)
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(7)
    cases = [((2, 4, 9, 7), (8, 1, 3, 3), (2, 1), ((1, 1), (1, 1)), (1, 2), 4, ["ruda_conv_dw"]),
             ((3, 4, 6, 5), (6, 2, 3, 2), (1, 1), ((1, 1), (0, 0)), (1, 1), 2,
              ["ruda_im2col_plane"] * 3 + ["ruda_bias"]),
             ((2, 3, 40), (5, 3, 3), (2,), ((2, 2),), (2,), 1, ["ruda_im2col_plane"] * 2 + ["ruda_bias"]),
             ((1, 2, 4, 3, 5), (3, 2, 2, 2, 3), (1, 1, 2), ((1, 1), (0, 0), (1, 1)), (1, 1, 1), 1,
              ["ruda_im2col_plane", "ruda_bias"]),
             ((3, 6, 5, 4), (4, 3, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 2, ["ruda_bias"]),  # pointwise
             ((2, 4, 5, 4), (6, 4, 1, 1), (2, 1), ((0, 0), (0, 0)), (1, 1), 1, ["ruda_im2col_plane"] + ["ruda_bias"])]
    for xs, ws, stride, pads, dil, groups, kernels in cases:
        launched.clear()
        x, w, b = make(rng.standard_normal(xs)), make(rng.standard_normal(ws)), make(rng.standard_normal(ws[0]))
        per = int(np.prod(ws[1:])) * groups * x.itemsize      # column bytes of one output position
        monkeypatch.setattr(_nn_conv, "COLS_BYTES", per * 30)    # blocks of images: see kernels
        y = _nn_conv.conv(x, w, b, stride, pads, dil, groups)
        want = getattr(F, f"conv{len(xs) - 2}d")(
            torch.from_numpy(f64(x)), torch.from_numpy(f64(w)), torch.from_numpy(f64(b)), stride=stride,
            padding=tuple(lo for lo, _ in pads), dilation=dil, groups=groups).numpy()
        assert y.shape == want.shape and y.dtype == x.dtype
        np.testing.assert_allclose(f64(y), want, rtol=tol, atol=tol * np.abs(want).max())
        assert launched == (kernels if planes else
                            [k.replace("_plane", "") for k in kernels])


@pytest.mark.parametrize("make,tol", [(bf16, 2e-2), (lambda a: dev(a.astype(np.float32)), 1e-5)])
def test_depthwise_by_planes(make, tol):
    """Depthwise at stride 1 on planes of at least ``DW_PLANE_MIN_L`` positions: one launch of
    the by-planes kernel (bias fused; without bias, multiplier 2 and dilation in 1-d); strided
    or smaller, the flat kernel."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(8)
    cases = [((2, 3, 40, 30), (6, 1, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), True, "ruda_conv_dw_plane"),
             ((3, 4, 600), (8, 1, 5), (1,), ((4, 4),), (2,), False, "ruda_conv_dw_plane"),
             ((2, 4, 25, 23), (4, 1, 3, 3), (2, 2), ((1, 1), (2, 2)), (1, 2), True, "ruda_conv_dw"),
             ((1, 2, 80, 70), (2, 1, 3, 3), (2, 1), ((1, 1), (1, 1)), (1, 1), True, "ruda_conv_dw")]
    for xs, ws, stride, pads, dil, with_bias, kernel in cases:
        launched.clear()
        x, w = make(rng.standard_normal(xs)), make(rng.standard_normal(ws))
        b = make(rng.standard_normal(ws[0])) if with_bias else None
        y = _nn_conv.conv(x, w, b, stride, pads, dil, xs[1])
        want = getattr(F, f"conv{len(xs) - 2}d")(
            torch.from_numpy(f64(x)), torch.from_numpy(f64(w)),
            None if b is None else torch.from_numpy(f64(b)), stride=stride,
            padding=tuple(lo for lo, _ in pads), dilation=dil, groups=xs[1]).numpy()
        assert y.shape == want.shape and y.dtype == x.dtype
        np.testing.assert_allclose(f64(y), want, rtol=tol, atol=tol * np.abs(want).max())
        assert launched == [kernel]
