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


HALF = {"bfloat16": BF16, "float16": np.dtype(np.float16)}


def half_bits(a, dtype):
    """The uint16 bits of a rounded to bfloat16 or float16."""
    return np.ascontiguousarray(np.asarray(a, np.float32).astype(HALF[dtype])).view(np.uint16)


def half_values(u, dtype):
    return u.view(HALF[dtype]).astype(np.float64)


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


GEMV_PARAMS = ("const T* x, long long ldx, const T* w, long long ldw, T* y, long long ldy, int N, "
               "int K, const T* g, float eps, const T* res, long long ldr")
NO_EXTRAS = (None, f32(0.0), None, i64(0))      # g, eps, res, ldr of the plain variants


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_split_and_merge(name):
    """Few long rows: chunks folded by blocks into (value, index) partials, merged by a warp a
    row; the first NaN and the first of tied extremes across chunk borders, a short last chunk."""
    src = fast_cuda.source("arg", name, np.dtype("float32"))
    split = emu.build(src, f"ruda_{name}_split", "const T* x, long long n, long long chunk, T* pv, "
                      "long long* pi")
    merge = emu.build(src, f"ruda_{name}_merge", "const T* pv, const long long* pi, int nsplit, "
                      "long long* out")
    rng = np.random.default_rng(2)
    n, chunk = 3000, 700
    nsplit = -(-n // chunk)
    x = rng.standard_normal((3, n)).astype(np.float32)
    x[0, [2100, 2900]] = np.nan
    x[1] = np.round(x[1] / 4)                    # ties in every chunk
    x[2, [699, 700, 2999]] = 50.0 if name == "argmax" else -50.0
    pv, pi = np.zeros((3, nsplit), np.float32), np.zeros((3, nsplit), np.int64)
    block = fast_cuda.CONFIG["arg"]["block"]
    emu.launch(split, (nsplit, 3), block, x, i64(n), i64(chunk), pv, pi)
    out = np.full(3, -1, np.int64)
    emu.launch(merge, (3,), 32, pv, pi, i32(nsplit), out)
    np.testing.assert_array_equal(out, getattr(np, name)(x, axis=1))


@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("n,k", [(1, 8), (13, 40), (9, 1032), (5, 1800)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gemv(m, n, k, dtype):
    """y = x @ W.T: tails of rows (n odd) and of the unrolled k loop, strided x."""
    fn = emu.build(gemv_cuda.gemv(m, dtype=dtype), "ruda_gemv", GEMV_PARAMS)
    rng = np.random.default_rng(n + k + m)
    xb = half_bits(rng.standard_normal((m, k + 8)), dtype)
    wb = half_bits(rng.standard_normal((n, k)), dtype)
    y = np.zeros((m, n + 5), np.uint16)
    per = gemv_cuda.ROWS * gemv_cuda.WARPS
    emu.launch(fn, (-(-n // per),), 32 * gemv_cuda.WARPS, xb, i64(k + 8), wb, i64(k), y, i64(n + 5),
               i32(n), i32(k), *NO_EXTRAS)
    want = half_values(xb, dtype)[:, :k] @ half_values(wb, dtype).T
    got = half_values(y, dtype)
    assert (got[:, n:] == 0).all()
    np.testing.assert_allclose(got[:, :n], want, rtol=2 ** -7, atol=2 ** -7 * np.abs(want).max())
    if dtype == "float16":          # float16 keeps 11 bits
        np.testing.assert_allclose(got[:, :n], want, rtol=2 ** -10, atol=2 ** -10 * np.abs(want).max())


@pytest.mark.parametrize("m", [1, 5])
def test_gemv_swiglu(m):
    """W = [gate; up]: silu(g) * u with g and u rounded to bfloat16 first, exactly as the plain
    GEMV followed by the swiglu kernel rounds them."""
    fused = emu.build(gemv_cuda.gemv(m, swiglu=True), "ruda_gemv", GEMV_PARAMS)
    plain = emu.build(gemv_cuda.gemv(m), "ruda_gemv", GEMV_PARAMS)
    swiglu = emu.build(nn_cuda.swiglu("bfloat16", False), "ruda_swiglu",
                       "const T* g, const T* u, T* y, long long n")
    rng = np.random.default_rng(m)
    inter, k = 37, 264
    xb, wb = bf16_bits(rng.standard_normal((m, k))), bf16_bits(rng.standard_normal((2 * inter, k)) / 8)
    y = np.zeros((m, inter), np.uint16)
    emu.launch(fused, (-(-inter // gemv_cuda.WARPS),), 32 * gemv_cuda.WARPS, xb, i64(k), wb, i64(k), y,
               i64(inter), i32(2 * inter), i32(k), *NO_EXTRAS)
    gu = np.zeros((m, 2 * inter), np.uint16)
    emu.launch(plain, (-(-2 * inter // (gemv_cuda.ROWS * gemv_cuda.WARPS)),), 32 * gemv_cuda.WARPS, xb,
               i64(k), wb, i64(k), gu, i64(2 * inter), i32(2 * inter), i32(k), *NO_EXTRAS)
    g, u = np.ascontiguousarray(gu[:, :inter]), np.ascontiguousarray(gu[:, inter:])
    want = np.zeros((m, inter), np.uint16)
    emu.launch(swiglu, (1,), 256, g, u, want, i64(g.size))
    np.testing.assert_array_equal(y, want)
    gd, ud = from_bits(g), from_bits(u)
    np.testing.assert_allclose(from_bits(y), gd / (1 + np.exp(-gd)) * ud, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("m,k,swiglu", [(1, 576, False), (3, 1024, True), (8, 40, False),
                                         (2, 264, True)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gemv_norm_gives_the_bits_of_the_norm_kernel_then_the_gemv(m, k, swiglu, dtype):
    """The GEMV that rms-normalizes x's rows itself: the same bits as the rows kernel (one warp
    a row) followed by the plain (or swiglu) GEMV, for every row length it takes (K <= 1024)."""
    n = 2 * 19 if swiglu else 21
    rng = np.random.default_rng(k + m)
    xb = half_bits(rng.standard_normal((m, k)) * 3, dtype)
    gb = half_bits(rng.standard_normal(k), dtype)
    wb = half_bits(rng.standard_normal((n, k)) / 8, dtype)
    fused = emu.build(gemv_cuda.gemv(m, swiglu=swiglu, dtype=dtype, norm=True), "ruda_gemv",
                      GEMV_PARAMS)
    y = np.zeros((m, n // 2 if swiglu else n), np.uint16)
    warps = n // 2 if swiglu else -(-n // gemv_cuda.ROWS)
    launch = (-(-warps // gemv_cuda.WARPS),), 32 * gemv_cuda.WARPS
    emu.launch(fused, *launch, xb, i64(k), wb, i64(k), y, i64(y.shape[1]), i32(n), i32(k),
               gb, f32(1e-5), None, i64(0))
    vpt = -(-(k // 8) // 32)
    rows = emu.build(nn_cuda.rows("rms_norm", dtype, 32, 4, vpt, True, True, False, False),
                     "ruda_rows", "const T* x, const T* w, const T* b, T* y, long long rows, int n, "
                     "double eps")
    h = np.zeros_like(xb)
    emu.launch(rows, (-(-m // 4),), 128, xb, gb, None, h, i64(m), i32(k), f64(1e-5))
    plain = emu.build(gemv_cuda.gemv(m, swiglu=swiglu, dtype=dtype), "ruda_gemv", GEMV_PARAMS)
    want = np.zeros_like(y)
    emu.launch(plain, *launch, h, i64(k), wb, i64(k), want, i64(y.shape[1]), i32(n), i32(k),
               *NO_EXTRAS)
    np.testing.assert_array_equal(y, want)
    xd = half_values(xb, dtype).astype(np.float64)
    hd = xd / np.sqrt((xd ** 2).mean(1, keepdims=True) + 1e-5) * half_values(gb, dtype)
    prod = hd @ half_values(wb, dtype).astype(np.float64).T
    if swiglu:
        g, u = prod[:, :n // 2], prod[:, n // 2:]
        prod = g / (1 + np.exp(-g)) * u
    np.testing.assert_allclose(half_values(y, dtype), prod, rtol=3e-2, atol=3e-2 * np.abs(prod).max())


@pytest.mark.parametrize("m", [1, 4])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gemv_residual_rounds_as_the_two_calls(m, dtype):
    """y = res + x @ W.T: the product rounded to the dtype, then the sum rounded, as the plain
    GEMV followed by an add; res read through its row stride."""
    n, k = 23, 72
    rng = np.random.default_rng(m)
    xb = half_bits(rng.standard_normal((m, k)), dtype)
    wb = half_bits(rng.standard_normal((n, k)), dtype)
    rb = half_bits(rng.standard_normal((m, n + 3)) * 4, dtype)
    fused = emu.build(gemv_cuda.gemv(m, dtype=dtype, residual=True), "ruda_gemv", GEMV_PARAMS)
    plain = emu.build(gemv_cuda.gemv(m, dtype=dtype), "ruda_gemv", GEMV_PARAMS)
    launch = (-(-n // (gemv_cuda.ROWS * gemv_cuda.WARPS)),), 32 * gemv_cuda.WARPS
    y, p = np.zeros((m, n), np.uint16), np.zeros((m, n), np.uint16)
    emu.launch(fused, *launch, xb, i64(k), wb, i64(k), y, i64(n), i32(n), i32(k), None, f32(0.0),
               rb, i64(n + 3))
    emu.launch(plain, *launch, xb, i64(k), wb, i64(k), p, i64(n), i32(n), i32(k), *NO_EXTRAS)
    store = HALF[dtype]
    want = (half_values(rb, dtype)[:, :n].astype(np.float32) +
            half_values(p, dtype).astype(np.float32)).astype(store)
    np.testing.assert_array_equal(half_values(y, dtype), want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("n,vec", [(64, True), (576, True), (37, False)])
def test_rows_with_residual(dtype, n, vec):
    """rms_norm of x + res, the sum rounded to the dtype and written out as a separate add
    would write it (short rows: two row groups a warp, the dead ones writing nothing)."""
    size = 2 if dtype in HALF else 4
    vec = vec and n % (16 // size) == 0
    unit = 16 // size if vec else 1
    tpr, rpb = (16, 8) if -(-n // unit) <= 16 else (32, 4)
    vpt = -(-(-(-n // unit)) // tpr)
    src = nn_cuda.rows("rms_norm", dtype, tpr, rpb, vpt, vec, True, False, True)
    fn = emu.build(src, "ruda_rows", "const T* x, const T* w, const T* b, T* y, long long rows, "
                   "int n, double eps, const T* res, T* sum")
    rng = np.random.default_rng(n)
    rows = 6
    a, r, w = rng.standard_normal((rows, n)) * 2, rng.standard_normal((rows, n)), rng.standard_normal(n)
    if dtype in HALF:
        xa, ra, wa = (half_bits(t, dtype) for t in (a, r, w))
        def back(u):
            return half_values(u, dtype)
        want_sum = (back(xa).astype(np.float32) + back(ra).astype(np.float32)).astype(HALF[dtype])
        want_sum = want_sum.astype(np.float64)
    else:
        xa, ra, wa = a.astype(np.float32), r.astype(np.float32), w.astype(np.float32)
        back = np.asarray
        want_sum = (xa + ra).astype(np.float64)
    y, s = np.zeros_like(xa), np.zeros_like(xa)
    emu.launch(fn, (-(-rows // rpb),), tpr * rpb, xa, wa, None, y, i64(rows), i32(n), f64(1e-6), ra, s)
    np.testing.assert_array_equal(back(s).astype(np.float64), want_sum)
    want = want_sum / np.sqrt((want_sum ** 2).mean(1, keepdims=True) + 1e-6) * back(wa).astype(np.float64)
    tol = {"bfloat16": 2e-2, "float16": 3e-3}.get(dtype, 1e-5)
    np.testing.assert_allclose(back(y).astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype,Hq", [("bfloat16", 6), ("float16", 6), ("bfloat16", 2)])
def test_decode_vec_one_block_writes_the_output(dtype, Hq):
    """One query per head against few keys: grid (1, Hkv, B), the block folds the group's
    heads and writes o itself (no partials); bool mask with a fully masked row (zeros), read
    with each step's keys (a group of 3 prefetching the next step's, and one head)."""
    B, Hkv, S, D = 2, 2, 70, 64
    G = Hq // Hkv
    src = att.decode_vec(dtype, D, G, "bool", None)
    fn = emu.build(src, "ruda_decode_vec", ATT_PARAMS + ", float* part, int chunk")
    rng = np.random.default_rng(3)
    q, k, v = (half_bits(rng.standard_normal(s), dtype) for s in ((B, Hq, 1, D), (B, Hkv, S, D), (B, Hkv, S, D)))
    mask = rng.random((B, 1, 1, S)) < 0.6
    mask[1] = False
    o = np.zeros((B, Hq, 1, D), np.uint16)
    scale = 1 / math.sqrt(D)
    st = lambda a: [i64(s // a.itemsize) for s in a.strides[:3]]   # noqa: E731
    ms = [i64(s) for s in (mask.strides[0], 0, 0, mask.strides[3])]
    emu.launch(fn, (1, Hkv, B), 256, q, k, v, mask, o, i32(Hq), i32(Hkv), i32(1), i32(S),
               *st(q), *st(k), *st(v), *ms, *st(o), f32(scale * math.log2(math.e)), i32(0), i32(0),
               o, i32(S))
    qf, kf, vf = (half_values(a, dtype) for a in (q, k, v))
    kf, vf = np.repeat(kf, G, axis=1), np.repeat(vf, G, axis=1)
    s = qf @ np.swapaxes(kf, -1, -2) * scale
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - np.where(np.isfinite(s.max(-1, keepdims=True)), s.max(-1, keepdims=True), 0))
    den = p.sum(-1, keepdims=True)
    want = (p @ vf) / np.where(den > 0, den, 1)
    tol = 2e-2 if dtype == "bfloat16" else 3e-3
    np.testing.assert_allclose(half_values(o, dtype), want, rtol=tol, atol=tol)
    assert (half_values(o, dtype)[1] == 0).all()


ATT_PARAMS = ("const T* q_, const T* k_, const T* v_, const MT* m_, T* o_, int Hq_, int Hkv_, int L_, "
              "int S_, long long q0_, long long q1_, long long q2_, long long k0_, long long k1_, "
              "long long k2_, long long v0_, long long v1_, long long v2_, long long m0_, long long m1_, "
              "long long m2_, long long m3_, long long o0_, long long o1_, long long o2_, float scale2_, "
              "int causal_, int window_")
ROWS_PARAMS = "const T* x, const T* w, const T* b, T* y, long long rows, int n, double eps"


def _attention_ref(q, k, v, causal, window):
    G = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, G, axis=1), np.repeat(v, G, axis=1)
    L, S = q.shape[2], k.shape[2]
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    i, j = np.arange(L)[:, None], np.arange(S)[None, :]
    keep = np.ones((L, S), bool)
    if causal:
        keep &= j <= i + S - L
    if window:
        keep &= j > i + S - L - window
    s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(m), m, 0))
    den = p.sum(-1, keepdims=True)
    return (p @ v) / np.where(den == 0, 1, den)         # a row with no key: zeros


def _att_args(q, k, v, o, causal, window):
    st = lambda a: [i64(x // a.itemsize) for x in a.strides[:3]]   # noqa: E731
    return (q, k, v, None, o, i32(q.shape[1]), i32(k.shape[1]), i32(q.shape[2]), i32(k.shape[2]),
            *st(q), *st(k), *st(v), i64(0), i64(0), i64(0), i64(0), *st(o),
            f32(math.log2(math.e) / math.sqrt(q.shape[-1])), i32(causal), i32(window))


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "rms_norm"])
@pytest.mark.parametrize("n,tpr,rpb", [(100, 32, 4), (4096, 256, 1), (4096, 512, 1), (56, 16, 8), (28, 8, 16)])
def test_rows(op, n, tpr, rpb):
    """The register row kernel, warp per row (scalar, a ragged last unit), block per row
    (16-byte vectors) and rows sharing a warp (5 rows: the last warp's other row groups redo
    the last row and store nothing), float32, weight and bias where the op takes them."""
    vec = n % 4 == 0
    unit = 4 if vec else 1
    vpt = -(-(-(-n // unit)) // tpr)
    affine = op in ("layer_norm", "rms_norm")
    fn = emu.build(nn_cuda.rows(op, "float32", tpr, rpb, vpt, vec, affine, op == "layer_norm"),
                   "ruda_rows", ROWS_PARAMS)
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((5, n)) * 3).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    emu.launch(fn, (-(-5 // rpb),), tpr * rpb, x, w if affine else None,
               b if op == "layer_norm" else None, y, i64(5), i32(n), f64(1e-5))
    xd = x.astype(np.float64)
    if op in ("softmax", "log_softmax"):
        e = np.exp(xd - xd.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
        want = np.log(want) if op == "log_softmax" else want
    elif op == "layer_norm":
        c = xd - xd.mean(1, keepdims=True)
        want = c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5) * w + b
    else:
        want = xd / np.sqrt((xd * xd).mean(1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("long", [False, True])
def test_log_softmax_of_large_logits(long):
    """(x - max) - log(sum), as torch: x - (max + log(sum)) rounded at the max's magnitude (-0.40723
    for -0.40761 in a row of 1e4, 0 for -log 2 in a row of two 1e30), register and long rows."""
    a = np.array([[1000, 999, 998, 500, 0], [1e4, 9999, 9998, 0, -1e4],
                  [1e30, -1e30, 1e30, 0, 0], [-1e4, -1e4 - 1, -1e4 - 2, -2e4, -3e4]], np.float32)
    src = nn_cuda.rows_long("log_softmax", "float32", False, False) if long else \
        nn_cuda.rows("log_softmax", "float32", 8, 4, 1, False, False, False, False)
    fn = emu.build(src, "ruda_rows", ROWS_PARAMS)
    y = np.zeros_like(a)
    emu.launch(fn, (4,) if long else (1,), 1024 if long else 32, a, None, None, y, i64(4), i32(5), f64(0.0))
    xd = a.astype(np.float64)
    m = xd.max(1, keepdims=True)
    want = (xd - m) - np.log(np.exp(xd - m).sum(1, keepdims=True))
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("long", [False, True])
def test_layer_norm_of_constant_and_offset_rows(long):
    """Sums of x - x[0]: a constant row gives exactly the bias (its float32 mean was an ulp off and
    eps 1e-12 blew that up to +-0.99 for a row of 100.3), a row of 1e4 + noise keeps its digits."""
    n = 20000 if long else 768                      # 64 threads of 3 units (3 * 4 * 64 = 768)
    src = nn_cuda.rows_long("layer_norm", "float32", False, True) if long else \
        nn_cuda.rows("layer_norm", "float32", 64, 1, 3, True, False, True)
    fn = emu.build(src, "ruda_rows", ROWS_PARAMS)
    rng = np.random.default_rng(n)
    x = np.stack([np.full(n, 100.3), np.full(n, -3.7), 1e4 + rng.standard_normal(n) * 0.05]).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    emu.launch(fn, (3,), 1024 if long else 64, x, None, b, y, i64(3), i32(n), f64(1e-12))
    xd = x.astype(np.float64)
    c = xd - xd.mean(1, keepdims=True)
    want = c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-12) + b
    np.testing.assert_array_equal(y[:2], np.broadcast_to(b, (2, n)))
    np.testing.assert_allclose(y[2], want[2], rtol=1e-4, atol=2e-5)


def test_long_softmax_keeps_a_nan():
    """A NaN met by a thread before any finite value makes the whole row NaN (as torch), in the long
    rows' online sum (it was reset by the next finite value); rows of -inf, +inf and mostly -inf."""
    torch = pytest.importorskip("torch")
    n = 20000
    x = np.random.default_rng(5).standard_normal((4, n)).astype(np.float32)
    x[0, 5] = np.nan
    x[1] = -np.inf
    x[2, 7] = np.inf
    x[3, 3:] = -np.inf
    for op in ("softmax", "log_softmax"):
        fn = emu.build(nn_cuda.rows_long(op, "float32", False, False), "ruda_rows", ROWS_PARAMS)
        y = np.zeros_like(x)
        emu.launch(fn, (4,), 1024, x, None, None, y, i64(4), i32(n), f64(0.0))
        t = torch.from_numpy(x.astype(np.float64))
        want = (torch.softmax if op == "softmax" else torch.log_softmax)(t, -1).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["softmax", "layer_norm"])
def test_rows_long(op):
    """Rows past the register budget: 1024 threads per row, passes over global memory."""
    fn = emu.build(nn_cuda.rows_long(op, "float32", op == "layer_norm", op == "layer_norm"),
                   "ruda_rows", ROWS_PARAMS)
    rng = np.random.default_rng(2)
    n = 20011
    x = (rng.standard_normal((2, n)) + 5).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    ln = op == "layer_norm"
    emu.launch(fn, (2,), 1024, x, w if ln else None, b if ln else None, y, i64(2), i32(n), f64(1e-5))
    xd = x.astype(np.float64)
    if ln:
        c = xd - xd.mean(1, keepdims=True)
        want = c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5) * w + b
    else:
        e = np.exp(xd - xd.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-7 if not ln else 1e-4)


@pytest.mark.parametrize("dtype,vec", [("bfloat16", True), ("float16", True), ("float32", False)])
def test_swiglu(dtype, vec):
    fn = emu.build(nn_cuda.swiglu(dtype, vec), "ruda_swiglu", "const T* g, const T* u, T* y, long long n")
    rng = np.random.default_rng(4)
    n = 1000 + 3
    g, u = rng.standard_normal(n) * 3, rng.standard_normal(n)
    if dtype in HALF:
        gb, ub = half_bits(g, dtype), half_bits(u, dtype)
        y = np.zeros(n, np.uint16)
        emu.launch(fn, (2,), 256, gb, ub, y, i64(n))
        gd, ud, got = half_values(gb, dtype), half_values(ub, dtype), half_values(y, dtype)
        tol = 1e-2 if dtype == "bfloat16" else 2e-3
    else:
        gb, ub = g.astype(np.float32), u.astype(np.float32)
        y = np.zeros(n, np.float32)
        emu.launch(fn, (2,), 256, gb, ub, y, i64(n))
        gd, ud, got, tol = gb.astype(np.float64), ub.astype(np.float64), y, 1e-6
    np.testing.assert_allclose(got, gd / (1 + np.exp(-gd)) * ud, rtol=tol, atol=tol)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rope(interleaved):
    """Rotary embedding of (rows, T, D) with the first r of D features rotated."""
    fn = emu.build(nn_cuda.rope("float32", "float32", interleaved), "ruda_rope",
                   "const T* x, const CT* cs, const CT* sn, T* y, long long total, int tlen, int d, "
                   "int r, int heads, long long sb, long long sh, long long ts")
    rng = np.random.default_rng(5)
    R, T, D, r = 3, 5, 16, 12
    x = rng.standard_normal((R, T, D)).astype(np.float32)
    ang = rng.standard_normal((T, r // 2))
    cs, sn = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    y = np.zeros_like(x)
    emu.launch(fn, (1,), 256, x, cs, sn, y, i64(x.size), i32(T), i32(D), i32(r), i32(1),
               i64(T * D), i64(0), i64(D))
    want = x.astype(np.float64).copy()
    if interleaved:
        a, b = x[..., 0:r:2], x[..., 1:r:2]
        want[..., 0:r:2], want[..., 1:r:2] = a * cs - b * sn, b * cs + a * sn
    else:
        a, b = x[..., :r // 2], x[..., r // 2:r]
        want[..., :r // 2], want[..., r // 2:r] = a * cs - b * sn, b * cs + a * sn
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rope_kv(dtype):
    """A decode step from a fused projection: q and k heads rotated, q out, k and v into the
    caches at pos (rows of qkv at a stride), nothing else written."""
    fn = emu.build(nn_cuda.rope_kv(dtype, dtype), "ruda_rope_kv",
                   "const T* qkv, long long ldq, const CT* cs, const CT* sn, const int* pos, T* q, "
                   "T* kc, T* vc, int nb, int hq, int hk, int d, int tlen")
    rng = np.random.default_rng(10)
    B, Hq, H, D, T, p = 2, 6, 2, 8, 5, 3
    width = (Hq + 2 * H) * D
    raw = rng.standard_normal((B, width + 8))
    ang = rng.standard_normal(D // 2)
    if dtype == "bfloat16":
        qkv, cs, sn = bf16_bits(raw), bf16_bits(np.cos(ang)), bf16_bits(np.sin(ang))
        back, zeros, tol = from_bits, (lambda s: np.zeros(s, np.uint16)), 1e-2
    else:
        qkv, cs, sn = raw.astype(np.float32), np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        back, zeros, tol = (lambda a: a.astype(np.float64)), (lambda s: np.zeros(s, np.float32)), 1e-6
    q, kc, vc = zeros((B, Hq, D)), zeros((B, H, T, D)), zeros((B, H, T, D))
    emu.launch(fn, (3,), 256, qkv, i64(width + 8), cs, sn, np.array([p], np.int32), q, kc, vc,
               i32(B), i32(Hq), i32(H), i32(D), i32(T))
    heads = back(qkv)[:, :width].reshape(B, Hq + 2 * H, D)
    c, s_ = np.tile(back(cs), 2), np.tile(back(sn), 2)
    rot = heads * c + np.concatenate([-heads[..., D // 2:], heads[..., :D // 2]], -1) * s_
    np.testing.assert_allclose(back(q), rot[:, :Hq], rtol=tol, atol=tol)
    np.testing.assert_allclose(back(kc)[:, :, p], rot[:, Hq:Hq + H], rtol=tol, atol=tol)
    np.testing.assert_array_equal(back(vc)[:, :, p], heads[:, Hq + H:])
    others = [t for t in range(T) if t != p]
    assert not back(kc)[:, :, others].any() and not back(vc)[:, :, others].any()


_ACT_REF = {
    "leaky_relu": lambda x, a, t: np.where(x > 0, x, a * x),
    "elu": lambda x, a, t: np.where(x > 0, x, a * np.expm1(x)),
    "gelu": lambda x, a, t: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": lambda x, a, t: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    "silu": lambda x, a, t: x / (1 + np.exp(-x)),
    "sigmoid": lambda x, a, t: 1 / (1 + np.exp(-x)),
    "softplus": lambda x, a, t: np.where(a * x > t, x, np.log1p(np.exp(a * x)) / a),
    "hardsigmoid": lambda x, a, t: np.clip(x / 6 + 0.5, 0, 1),
    "hardswish": lambda x, a, t: x * np.clip(x / 6 + 0.5, 0, 1),
    "erf": lambda x, a, t: np.vectorize(math.erf)(x),
    "relu6": lambda x, a, t: np.clip(x, 0, 6),
}


@pytest.mark.parametrize("name", sorted(nn_cuda.ACTIVATIONS))
def test_activation(name):
    """Every activation body, float32 with 16-byte vectors and a scalar tail, NaN kept."""
    fn = emu.build(nn_cuda.activation("float32", name, True), "ruda_activation",
                   "const T* x, T* y, long long n, double p1, double p2")
    rng = np.random.default_rng(len(name))
    x = (rng.standard_normal(1003) * 4).astype(np.float32)
    x[5] = np.nan
    y = np.zeros_like(x)
    p1, p2 = (2.0, 5.0) if name == "softplus" else (0.2, 0.0)
    emu.launch(fn, (2,), 256, x, y, i64(x.size), f64(p1), f64(p2))
    want = _ACT_REF[name](x.astype(np.float64), p1, p2)
    np.testing.assert_allclose(y, want, rtol=2e-6, atol=2e-6)
    assert np.isnan(y[5])


def test_gelu_tanh_keeps_its_left_tail():
    """x sigmoid(2u), not x (1 + tanh(u)) / 2, which cancels for x < 0 (gelu(-10) was -0, not
    -1.2e-37): within float32's relative precision of the float64 sigmoid form."""
    fn = emu.build(nn_cuda.activation("float32", "gelu_tanh", False), "ruda_activation",
                   "const T* x, T* y, long long n, double p1, double p2")
    x = np.array([-12.0, -10.0, -6.0, -5.0, -4.0, -3.0, -1.0, 0.5, 4.0, np.inf, -np.inf], np.float32)
    y = np.zeros_like(x)
    emu.launch(fn, (1,), 32, x, y, i64(x.size), f64(0.0), f64(0.0))
    xd = x[:-2].astype(np.float64)
    want = xd / (1 + np.exp(-2 * math.sqrt(2 / math.pi) * (xd + 0.044715 * xd ** 3)))
    np.testing.assert_allclose(y[:-2], want.astype(np.float32), rtol=2e-6, atol=0)
    assert y[-2] == np.inf and np.isnan(y[-1])      # torch's: the limit, and -inf * 0


def test_activation_special_values():
    """torch's values at the edges: hardswish(-inf) NaN and hardswish(-4), relu6(-0) -0 (were 0 and
    +0), softplus past exp's range below the threshold x (log1p(exp(bx)) was inf), NaN kept."""
    torch = pytest.importorskip("torch")
    x = np.array([-np.inf, -100.0, -4.0, -3.0, -0.0, 0.0, 2.5, 3.0, 6.0, 7.0, 90.0, 150.0, np.inf, np.nan],
                 np.float32)
    t = torch.from_numpy(x.astype(np.float64))
    F = torch.nn.functional
    for name, p1, p2, ref in (("hardswish", 0.0, 0.0, F.hardswish(t)), ("relu6", 0.0, 0.0, F.relu6(t)),
                              ("softplus", 1.0, 200.0, F.softplus(t, 1.0, 200.0)),
                              ("softplus", -1.0, 20.0, F.softplus(t, -1.0, 20.0))):
        fn = emu.build(nn_cuda.activation("float32", name, False), "ruda_activation",
                       "const T* x, T* y, long long n, double p1, double p2")
        y = np.zeros_like(x)
        emu.launch(fn, (1,), 32, x, y, i64(x.size), f64(p1), f64(p2))
        want = ref.numpy().astype(np.float32)
        np.testing.assert_allclose(y, want, rtol=2e-6, atol=0, err_msg=name)
        np.testing.assert_array_equal(np.signbit(y[:-1]), np.signbit(want[:-1]), err_msg=name)   # zeros


def test_activation_bfloat16():
    """bfloat16 computes in float32 and rounds once."""
    fn = emu.build(nn_cuda.activation("bfloat16", "silu", True), "ruda_activation",
                   "const T* x, T* y, long long n, double p1, double p2")
    xb = bf16_bits(np.random.default_rng(3).standard_normal(77) * 3)
    y = np.zeros_like(xb)
    emu.launch(fn, (1,), 256, xb, y, i64(xb.size), f64(0.0), f64(0.0))
    xf = xb.view(BF16).astype(np.float32)
    np.testing.assert_array_equal(y.view(BF16), (xf / (1 + np.exp(-xf))).astype(BF16))


def test_float16_conversions():
    """The integer float16 conversions (host side of ``h2f``/``f2h``) against NumPy: every
    float16 widened exactly; float32 values of every range (subnormal, ties, overflow, NaN)
    rounded to nearest even."""
    src = nn_cuda.head("float16") + r"""
extern "C" __global__ void ruda_cvt(const float* x, T* h, const T* hs, float* w, long long n) {
    for (long long i = threadIdx.x; i < n; i += blockDim.x) { h[i] = f2h(x[i]); w[i] = h2f(hs[i]); }
}"""
    fn = emu.build(src, "ruda_cvt", "const float* x, T* h, const T* hs, float* w, long long n")
    every = np.arange(65536, dtype=np.uint16)
    rng = np.random.default_rng(5)
    x = np.concatenate([every.view(np.float16).astype(np.float32),
                        (rng.standard_normal(30000) * 2.0 ** rng.integers(-30, 18, 30000)).astype(np.float32),
                        np.float32([65504, 65519.99, 65520, 65536, 1e30, 2.0**-25, 2.0**-24 * 1.5,
                                    2.0**-24 * 2.5, 2.0**-25 * 1.0001, 2.0**-26, 2.0**-14 * 0.99999,
                                    1 + 2.0**-11, 1 + 3 * 2.0**-11, -0.0, np.inf, -np.inf])])
    x = np.concatenate([x, -x[65536:]]).astype(np.float32)
    hs = np.resize(every, x.size)
    h, w = np.zeros(x.size, np.uint16), np.zeros(x.size, np.float32)
    emu.launch(fn, (1,), 256, x, h, hs, w, i64(x.size))
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    np.testing.assert_array_equal(np.isnan(h.view(np.float16)), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(h[ok], want.view(np.uint16)[ok])
    np.testing.assert_array_equal(w, hs.view(np.float16).astype(np.float32))


def test_top_k():
    """A warp per row: the k largest, NaN first, ties by the lower index."""
    k, kb = 5, nn_cuda.kbucket(5)
    fn = emu.build(nn_cuda.top_k("float32", kb), "ruda_top_k",
                   "const T* x, T* vals, long long* idx, long long rows, int n, int k")
    rng = np.random.default_rng(6)
    x = np.round(rng.standard_normal((6, 300)) * 4).astype(np.float32)      # many ties
    x[2, 17] = np.nan
    vals, idx = np.zeros((6, k), np.float32), np.zeros((6, k), np.int64)
    emu.launch(fn, (2,), 128, x, vals, idx, i64(6), i32(300), i32(k))
    key = np.where(np.isnan(x), np.inf, x)
    want = np.stack([np.lexsort((np.arange(300), -row))[:k] for row in key])
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(vals, np.take_along_axis(x, want, 1))


@pytest.mark.parametrize("causal,window", [(False, 0), (True, 40)])
def test_decode_split_and_merge(causal, window):
    """Split-key decode (the scalar kernel, GQA) and the merge of the partial softmaxes."""
    B, Hq, Hkv, L, S, D = 1, 4, 2, 2, 300, 16
    src = att.decode("float32", D, D)
    fn = emu.build(src, "ruda_decode", ATT_PARAMS + ", float* part, int chunk")
    merge = emu.build(src, "ruda_decode_merge", "const float* part, T* o, int nsplit, int L, int Hq, "
                      "long long os0, long long os1, long long os2")
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((B, Hq, L, D), (B, Hkv, S, D), (B, Hkv, S, D)))
    o = np.zeros((B, Hq, L, D), np.float32)
    nsplit, chunk = 4, 75
    part = np.zeros((B * Hq * L, nsplit, D + 2), np.float32)
    emu.launch(fn, (nsplit, Hq * L, B), 128, *_att_args(q, k, v, o, causal, window), part, i32(chunk))
    emu.launch(merge, (B * Hq * L,), 128, part, o, i32(nsplit), i32(L), i32(Hq),
               *[i64(x // 4) for x in o.strides[:3]])
    np.testing.assert_allclose(o, _attention_ref(*(a.astype(np.float64) for a in (q, k, v)), causal, window),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("L,S", [(37, 45), (37, 9)])
def test_attention_tile(L, S):
    """The CUDA-core tiled kernel: causal (lower right), GQA, a ragged last tile; more than
    twice as many queries as keys (the first rows see no key)."""
    B, Hq, Hkv, D = 1, 2, 1, 16
    fn = emu.build(att.attention("float32", D, D, None, None, 32, 16), "ruda_attention", ATT_PARAMS)
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((B, Hq, L, D), (B, Hkv, S, D), (B, Hkv, S, D)))
    o = np.zeros((B, Hq, L, D), np.float32)
    emu.launch(fn, (-(-L // 32), Hq, B), 32, *_att_args(q, k, v, o, True, 0))
    np.testing.assert_allclose(o, _attention_ref(*(a.astype(np.float64) for a in (q, k, v)), True, 0),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(dtype, affine):
    """Inference batch_norm over (N, C, L) rows of a 2-d grid smaller than the work (the
    kernel loops over rows and positions), with and without weight and bias."""
    fn = emu.build(nn_cuda.batch_norm(dtype), "ruda_batch_norm",
                   "const T* x, const A* mean, const A* var, const A* w, const A* b, T* y, "
                   "int rows, int C, int L, A eps")
    rng = np.random.default_rng(8)
    N, C, L = 3, 5, 300
    x = rng.standard_normal((N, C, L)) * 3
    acc = np.float64 if dtype == "float64" else np.float32
    mean, w, b = (rng.standard_normal(C).astype(acc) for _ in range(3))
    var = rng.random(C).astype(acc) + 0.1
    if dtype == "bfloat16":
        xd, back, y, tol = bf16_bits(x), from_bits, np.zeros(x.shape, np.uint16), 1e-2
    else:
        xd, back, tol = x.astype(dtype), (lambda a: a), 1e-12 if dtype == "float64" else 1e-6
        y = np.zeros_like(xd)
    wb = (w, b) if affine else (None, None)
    eps = acc(1e-3)
    emu.launch(fn, (1, 4), 64, xd, mean, var, *wb, y, i32(N * C), i32(C), i32(L),
               ctypes.c_double(eps) if dtype == "float64" else ctypes.c_float(eps))
    scale = (w if affine else 1.0) / np.sqrt(var.astype(np.float64) + float(eps))
    shift = (b if affine else 0.0) - mean * scale
    want = back(xd).astype(np.float64) * scale[:, None] + shift[:, None]
    np.testing.assert_allclose(back(y), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("wide", [False, True])
def test_channel_affine(dtype, wide):
    """x * scale[c] + shift[c] over (N, C, L), scale and shift in the accumulation type."""
    fn = emu.build(nn_cuda.channel_affine(dtype, wide), "ruda_channel_affine",
                   "const T* x, const A* scale, const A* shift, T* y, long long total, int C, int L")
    rng = np.random.default_rng(7)
    N, C, L = 3, 5, 37
    x = rng.standard_normal((N, C, L)) * 3
    acc = np.float64 if dtype == "float64" else np.float32
    sc, sh = rng.standard_normal(C).astype(acc), rng.standard_normal(C).astype(acc)
    if dtype == "bfloat16":
        xd, back, y, tol = bf16_bits(x), from_bits, np.zeros(x.shape, np.uint16), 1e-2
    else:
        xd, back, tol = x.astype(dtype), (lambda a: a), 1e-12 if dtype == "float64" else 1e-6
        y = np.zeros_like(xd)
    emu.launch(fn, (2,), 64, xd, sc, sh, y, i64(x.size), i32(C), i32(L))
    want = back(xd).astype(np.float64) * sc[:, None] + sh[:, None]
    np.testing.assert_allclose(back(y), want, rtol=tol, atol=tol * np.abs(want).max())
