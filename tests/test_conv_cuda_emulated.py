"""The cuda convolution kernels (ruda/runtime/kernels/conv_cuda.py) run on the host by
tests/_cuda_emu.py against torch.nn.functional in float64: direct depthwise, im2col (checked
through the product with the weight that the launcher makes) and the bias kernel. The launcher
(ruda/backends/cuda/_nn_conv.py) runs end to end in test_cuda_launchers_emulated.py."""
import ctypes

import numpy as np
import pytest

import _cuda_emu as emu
from ruda.runtime.kernels import as_3d, conv_cuda
from test_cuda_kernels_emulated import HALF, half_bits, half_values

pytestmark = pytest.mark.skipif(not emu.available(), reason="no g++ to run CUDA C on the host")
torch = pytest.importorskip("torch")
pytest.importorskip("ml_dtypes")
F = torch.nn.functional
i64, i32 = ctypes.c_longlong, ctypes.c_int
GEO = ("int D, int H, int W, int OD, int OH, int OW, int sd, int sh, int sw, int dd, int dh, int dw, "
       "int pd, int ph, int pw")

# (x shape, weight shape, stride, padding (lo per axis; hi from the sizes), dilation, groups)
CASES = [
    ((2, 3, 11), (6, 1, 3), (2,), (1,), (1,), 3),                          # 1-d, multiplier 2
    ((2, 4, 7, 9), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),               # depthwise
    ((1, 5, 9, 8), (5, 1, 3, 2), (2, 1), (2, 0), (2, 3), 5),               # stride, dilation
    ((1, 2, 4, 5, 6), (4, 1, 2, 3, 3), (1, 2, 1), (1, 1, 0), (1, 1, 2), 2),  # 3-d
    ((2, 3, 7, 6), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),               # dense
    ((1, 4, 8, 7), (6, 2, 2, 3), (2, 1), (0, 2), (1, 2), 2),               # groups
    ((2, 2, 5, 4, 6), (3, 2, 3, 2, 2), (1, 1, 2), (1, 0, 1), (1, 1, 1), 1),  # 3-d dense
    ((2, 3, 8, 8), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1),               # L = 64: vectors
]


def _torch(x, w, b, stride, pad, dil, groups):
    """torch's convolution in float64 (padding ``pad`` on both sides) and its output sizes."""
    def T(a):
        return None if a is None else torch.from_numpy(np.asarray(a, np.float64))
    y = getattr(F, f"conv{x.ndim - 2}d")(T(x), T(w), T(b), stride=stride, padding=pad, dilation=dil,
                                         groups=groups).numpy()
    return y, y.shape[2:]


def _geo(x, out, stride, dil, pad):
    return [i32(v) for v in as_3d(x.shape[2:], 1) + as_3d(out, 1) + as_3d(stride, 1)
            + as_3d(dil, 1) + as_3d(pad, 0)]


def _data(case, dtype):
    xs, ws, stride, pad, dil, groups = CASES[case]
    rng = np.random.default_rng(case)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    if dtype in HALF:
        x, w, b = (a.astype(HALF[dtype]).astype(np.float64) for a in (x, w, b))
    return x, w, b, stride, pad, dil, groups


def _dev(a, dtype):
    """The array the kernel takes: 16-bit types as their bits."""
    return half_bits(a, dtype) if dtype in HALF else np.ascontiguousarray(a, dtype)


def _host(a, dtype):
    return half_values(a, dtype) if dtype in HALF else a.astype(np.float64)


TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2, "float16": 2e-3}


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("case", [0, 1, 2, 3])
@pytest.mark.parametrize("with_bias", [True, False])
def test_depthwise(case, dtype, with_bias):
    x, w, b, stride, pad, dil, groups = _data(case, dtype)
    if not with_bias:
        b = None
    want, out = _torch(x, w, b, stride, pad, dil, groups)
    k3 = as_3d(w.shape[2:], 1)
    fn = emu.build(conv_cuda.depthwise(dtype, k3, wide=case % 2 == 1), "ruda_conv_dw",
                   "const T* x, const T* w, const T* b, T* y, long long total, int C, int m, " + GEO)
    y = _dev(np.full(want.shape, np.nan), dtype)
    emu.launch(fn, (2,), 256, _dev(x, dtype), _dev(w, dtype), None if b is None else _dev(b, dtype), y,
               i64(y.size), i32(x.shape[1]), i32(w.shape[0] // x.shape[1]), *_geo(x, out, stride, dil, pad))
    tol = TOL[dtype]
    np.testing.assert_allclose(_host(y, dtype), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("case", [0, 1, 2, 3])
@pytest.mark.parametrize("vec", [1, 4])
def test_depthwise_by_planes(case, dtype, vec):
    """The by-planes kernel on a grid smaller than the planes and the positions (both loops
    wrap; a thread's vector crosses rows of the output), with and without bias."""
    x, w, b, stride, pad, dil, groups = _data(case, dtype)
    b = b if vec > 1 else None
    want, out = _torch(x, w, b, stride, pad, dil, groups)
    k3 = as_3d(w.shape[2:], 1)
    fn = emu.build(conv_cuda.depthwise_plane(dtype, k3, vec), "ruda_conv_dw_plane",
                   "const T* x, const T* w, const T* b, T* y, int planes, int C, int m, " + GEO)
    y = _dev(np.full(want.shape, np.nan), dtype)
    emu.launch(fn, (2, 3), 8, _dev(x, dtype), _dev(w, dtype), None if b is None else _dev(b, dtype), y,
               i32(want.shape[0] * want.shape[1]), i32(x.shape[1]), i32(w.shape[0] // x.shape[1]),
               *_geo(x, out, stride, dil, pad))
    tol = TOL[dtype]
    np.testing.assert_allclose(_host(y, dtype), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("case", [1, 3, 4, 5, 6, 7])
@pytest.mark.parametrize("vec", [False, True])
@pytest.mark.parametrize("plane", [False, True])
def test_im2col_then_product(case, dtype, vec, plane):
    """Columns (N, C*K, L) with zeros in the padding (one column a thread, or 16 bytes of them
    where L allows; by rows of columns, or by planes of x held in shared memory); the weight as
    (groups, Co/g, C/g*K) times them gives the convolution; then the bias kernel adds b in
    place (16 bytes a thread likewise)."""
    x, w, b, stride, pad, dil, groups = _data(case, dtype)
    want, out = _torch(x, w, b, stride, pad, dil, groups)
    N, C = x.shape[:2]
    Co, K, L = w.shape[0], int(np.prod(w.shape[2:])), int(np.prod(out))
    v = 16 // (2 if dtype in HALF else 4) if vec else 1
    if L % v:
        pytest.skip(f"L = {L} is not a multiple of {v}")
    k3 = as_3d(w.shape[2:], 1)
    cols = _dev(np.full((N, C * K, L), np.nan), dtype)
    geo = _geo(x, out, stride, dil, pad)
    if plane:
        cap = conv_cuda.plane_cap(out, w.shape[2:], stride, dil, _dev(x, dtype).itemsize)
        fn = emu.build(conv_cuda.im2col_plane(dtype, k3, v, cap), "ruda_im2col_plane",
                       "const T* x, T* cols, int planes, " + GEO)
        # fewer blocks than planes, fewer threads than a plane's (tap, vector) pairs
        emu.launch(fn, (3,), 8, _dev(x, dtype), cols, i32(N * C), *geo)
    else:
        fn = emu.build(conv_cuda.im2col(dtype, k3, v), "ruda_im2col",
                       "const T* x, T* cols, int rows, " + GEO)
        # a grid smaller than the rows and the positions: both loops wrap
        emu.launch(fn, (2, 3), 8, _dev(x, dtype), cols, i32(N * C * K), *geo)
    c = _host(cols, dtype).reshape(N, groups, C // groups * K, L)
    y = w.reshape(groups, Co // groups, -1) @ c
    yd = _dev(y.reshape(N, Co, L), dtype)
    fb = emu.build(conv_cuda.bias(dtype, v), "ruda_bias", "T* y, const T* b, int rows, int co, int L")
    emu.launch(fb, (2, 5), 8, yd, _dev(b, dtype), i32(N * Co), i32(Co), i32(L))
    tol = TOL[dtype]
    np.testing.assert_allclose(_host(yd, dtype).reshape(want.shape), want, rtol=tol,
                               atol=tol * np.abs(want).max())


def test_kernel_sizes_checked():
    with pytest.raises(ValueError, match="conv_cuda: ks"):
        conv_cuda.depthwise("float32", (1, 0, 3))
