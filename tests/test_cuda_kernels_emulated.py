"""ruda's named CUDA C generators run on the host (tests/_cuda_emu.py: a thread per CUDA
thread) against NumPy oracles: the logic of cuda kernels checked on any machine with g++.
The GPU runs of test_cuda.py, test_cuda_bf16.py and test_nn_cuda.py check them on the device."""
import ctypes
import math

import numpy as np
import pytest

import _cuda_emu as emu
from ruda.runtime.kernels import fast_cuda, gemv_cuda, nn_cuda
from ruda.runtime.kernels import nn_cuda_attention as att

pytestmark = pytest.mark.skipif(not emu.available(), reason="no g++ to run CUDA C on the host")
ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = np.dtype(ml_dtypes.bfloat16)
i64, i32, f64, f32 = ctypes.c_longlong, ctypes.c_int, ctypes.c_double, ctypes.c_float


def bf16_bits(a):
    return np.ascontiguousarray(np.asarray(a, np.float32).astype(BF16)).view(np.uint16)


def from_bits(u):
    return u.view(BF16).astype(np.float64)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arg_rows(name, dtype):
    """A block per row: NumPy's first-NaN rule, the first of tied extremes, rows shorter and
    longer than the block."""
    fn = emu.build(fast_cuda.source("arg", name, np.dtype(dtype)), f"ruda_{name}_rows",
                   "const T* x, long long n, long long* out")
    rng = np.random.default_rng(1)
    block = fast_cuda.CONFIG["arg"]["block"]
    for n in (1, 5, 1000, 2 * block + 3):
        x = rng.standard_normal((4, n)).astype(dtype)
        x[1, n // 2] = x[1, n - 1] = np.nan
        x[2] = np.round(x[2])                    # ties
        x[3, :] = -np.inf if name == "argmax" else np.inf
        out = np.full(4, -1, np.int64)
        emu.launch(fn, (4,), block, x, i64(n), out)
        np.testing.assert_array_equal(out, getattr(np, name)(x, axis=1))


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("n,k", [(1, 8), (13, 40), (9, 1032)])
def test_gemv(m, n, k):
    """bfloat16 y = x @ W.T: tails of rows (n odd) and of the unrolled k loop, strided x."""
    fn = emu.build(gemv_cuda.gemv(m), "ruda_gemv", "const bf16* x, long long ldx, const bf16* w, "
                   "long long ldw, bf16* y, long long ldy, int N, int K")
    rng = np.random.default_rng(n + k + m)
    xb = bf16_bits(rng.standard_normal((m, k + 8)))
    wb = bf16_bits(rng.standard_normal((n, k)))
    y = np.zeros((m, n + 5), np.uint16)
    per = gemv_cuda.ROWS * gemv_cuda.WARPS
    emu.launch(fn, (-(-n // per),), 32 * gemv_cuda.WARPS, xb, i64(k + 8), wb, i64(k), y, i64(n + 5),
               i32(n), i32(k))
    want = from_bits(xb)[:, :k] @ from_bits(wb).T
    got = from_bits(y)
    assert (got[:, n:] == 0).all()
    np.testing.assert_allclose(got[:, :n], want, rtol=2 ** -7, atol=2 ** -7 * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("n,vec", [(64, True), (576, True), (37, False)])
def test_rows_with_residual(dtype, n, vec):
    """rms_norm of x + res, the sum rounded to the dtype and written out as a separate add
    would write it."""
    size = 2 if dtype == "bfloat16" else 4
    vec = vec and n % (16 // size) == 0
    unit = 16 // size if vec else 1
    tpr, rpb = 32, 4
    vpt = -(-(-(-n // unit)) // tpr)
    src = nn_cuda.rows("rms_norm", dtype, tpr, rpb, vpt, vec, True, False, True)
    fn = emu.build(src, "ruda_rows", "const T* x, const T* w, const T* b, T* y, long long rows, "
                   "int n, double eps, const T* res, T* sum")
    rng = np.random.default_rng(n)
    rows = 6
    a, r, w = rng.standard_normal((rows, n)) * 2, rng.standard_normal((rows, n)), rng.standard_normal(n)
    if dtype == "bfloat16":
        xa, ra, wa = bf16_bits(a), bf16_bits(r), bf16_bits(w)
        back = from_bits
        want_sum = (xa.view(BF16).astype(np.float32) + ra.view(BF16).astype(np.float32)).astype(BF16)
        want_sum = want_sum.astype(np.float64)
    else:
        xa, ra, wa = a.astype(np.float32), r.astype(np.float32), w.astype(np.float32)
        back = np.asarray
        want_sum = (xa + ra).astype(np.float64)
    y, s = np.zeros_like(xa), np.zeros_like(xa)
    emu.launch(fn, (-(-rows // rpb),), tpr * rpb, xa, wa, None, y, i64(rows), i32(n), f64(1e-6), ra, s)
    np.testing.assert_array_equal(back(s).astype(np.float64), want_sum)
    want = want_sum / np.sqrt((want_sum ** 2).mean(1, keepdims=True) + 1e-6) * back(wa).astype(np.float64)
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(back(y).astype(np.float64), want, rtol=tol, atol=tol)


def test_decode_vec_one_block_writes_the_output():
    """One query per head against few keys: grid (1, Hkv, B), the block folds the group's
    heads and writes o itself (no partials); bool mask with a fully masked row (zeros)."""
    B, Hq, Hkv, S, D = 2, 6, 2, 70, 64
    G = Hq // Hkv
    src = att.decode_vec("bfloat16", D, G, "bool", None)
    params = ("const T* q_, const T* k_, const T* v_, const MT* m_, T* o_, int Hq_, int Hkv_, int L_, "
              "int S_, long long q0_, long long q1_, long long q2_, long long k0_, long long k1_, "
              "long long k2_, long long v0_, long long v1_, long long v2_, long long m0_, long long m1_, "
              "long long m2_, long long m3_, long long o0_, long long o1_, long long o2_, float scale2_, "
              "int causal_, int window_, float* part, int chunk")
    fn = emu.build(src, "ruda_decode_vec", params)
    rng = np.random.default_rng(3)
    q, k, v = (bf16_bits(rng.standard_normal(s)) for s in ((B, Hq, 1, D), (B, Hkv, S, D), (B, Hkv, S, D)))
    mask = rng.random((B, 1, 1, S)) < 0.6
    mask[1] = False
    o = np.zeros((B, Hq, 1, D), np.uint16)
    scale = 1 / math.sqrt(D)
    st = lambda a: [i64(s // a.itemsize) for s in a.strides[:3]]   # noqa: E731
    ms = [i64(s) for s in (mask.strides[0], 0, 0, mask.strides[3])]
    emu.launch(fn, (1, Hkv, B), 256, q, k, v, mask, o, i32(Hq), i32(Hkv), i32(1), i32(S),
               *st(q), *st(k), *st(v), *ms, *st(o), f32(scale * math.log2(math.e)), i32(0), i32(0),
               o, i32(S))
    qf, kf, vf = (from_bits(a) for a in (q, k, v))
    kf, vf = np.repeat(kf, G, axis=1), np.repeat(vf, G, axis=1)
    s = qf @ np.swapaxes(kf, -1, -2) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - np.where(np.isfinite(s.max(-1, keepdims=True)), s.max(-1, keepdims=True), 0))
    den = p.sum(-1, keepdims=True)
    want = (p @ vf) / np.where(den > 0, den, 1)
    np.testing.assert_allclose(from_bits(o), want, rtol=2e-2, atol=2e-2)
    assert (from_bits(o)[1] == 0).all()
