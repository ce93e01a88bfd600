"""``conv`` on cuda (contract: ruda/nn/README.md): float32, float64 and bfloat16, 1 to 3 spatial
axes (sources from :mod:`ruda.runtime.kernels.conv_cuda`).

Depthwise convolutions (``groups == C_in``, one input channel per group, any multiplier) run
a direct kernel, bias included: by output planes at stride 1 where a plane has
``DW_PLANE_MIN_L`` positions or more (strided, a thread's four outputs read x too sparsely),
else a thread an output.  Everything else: an im2col kernel writes the columns of a
block of images (at most ``COLS_BYTES``; a pointwise conv reads x itself; a block a plane of x
held in shared memory where it fits ``conv_cuda.PLANE_BYTES``), one cuBLAS product per block
multiplies them by the weight straight into its slice of the NCHW output (groups as a batch
axis), then a bias kernel.  float32 products follow the process-wide TF32 setting
(``ruda.backends.cuda.allow_tf32``); bfloat16/float16 ones accumulate in float32.
"""
import functools
import math

import numpy as np

from ruda.backends.cuda import _bf16, _tf32
from ruda.backends.cuda._nn_launch import (
    _cp, aligned, arg, contiguous, dname, empty, function, grid, rows_grid, shaped,
)
from ruda.runtime.kernels import as_3d
from ruda.runtime.kernels import conv_cuda as gen
from ruda.runtime.kernels import nn_cuda

COLS_BYTES = 1 << 28             # columns of one block of images: 256 MiB
DW_PLANE_MIN_L = 512             # output positions a plane from which depthwise runs by planes
# cudaDataType, cublasComputeType strict and with TF32, and the scalars' type of the products
_GEMM_TYPES = {
    np.dtype(np.float32): (_bf16.CUDA_R_32F, _bf16.CUBLAS_COMPUTE_32F,
                           _bf16.CUBLAS_COMPUTE_32F_FAST_TF32, np.float32),
    np.dtype(np.float64): (_bf16.CUDA_R_64F, _bf16.CUBLAS_COMPUTE_64F, _bf16.CUBLAS_COMPUTE_64F,
                           np.float64),
    _bf16.F16: (_bf16.CUDA_R_16F, _bf16.CUBLAS_COMPUTE_32F, _bf16.CUBLAS_COMPUTE_32F, np.float32),
}
if _bf16.BF16 is not None:
    _GEMM_TYPES[_bf16.BF16] = (_bf16.CUDA_R_16BF, _bf16.CUBLAS_COMPUTE_32F,
                               _bf16.CUBLAS_COMPUTE_32F, np.float32)


def _matmul(a, b, out=None):
    """cuBLAS ``a (groups, co, K) @ b (n, groups, K, L)`` -> ``(n, groups, co, L)`` (into
    ``out``, C-contiguous, where given), as the cuda backend's matmul computes it (TF32 as it
    allows; 16-bit types accumulate in float32). One group or one image: one strided-batched
    GEMM with the weight's batch stride 0 (CuPy's broadcasting matmul builds pointer arrays on
    the device first, ~3x the host time a call)."""
    types = _GEMM_TYPES.get(a.dtype)
    G, co, K = a.shape
    n, L = b.shape[0], b.shape[3]
    if types is not None and (G == 1 or n == 1) and a.flags.c_contiguous and b.flags.c_contiguous:
        dtype, strict, tf32, scalar = types
        one, zero = np.ones((), scalar), np.zeros((), scalar)
        if out is None:
            out = empty((n, G, co, L), a.dtype)
        _bf16.gemm_ex(_bf16.OP_N, _bf16.OP_N, L, co, K, b.data.ptr, L, K * L, a.data.ptr, K,
                      0 if G == 1 else co * K, out.data.ptr, n * G, dtype,
                      tf32 if a.dtype in _tf32.TF32_DTYPES and _tf32.tf32_allowed() else strict,
                      one, zero)
        return out
    if _bf16.BF16 is not None and a.dtype == _bf16.BF16:
        r = _bf16.matmul(a, b)
    elif a.dtype in _tf32.TF32_DTYPES:
        r = _tf32.call(_tf32.tf32_allowed(), _cp().matmul, a, b)
    else:
        r = _cp().matmul(a, b)
    if out is not None:
        _cp().copyto(arg(out), arg(r))
    return r


def conv(x, w, bias, stride, padding, dilation, groups):
    dt = dname(x)
    nd = x.ndim - 2
    if dt is None or w.dtype != x.dtype or (bias is not None and bias.dtype != x.dtype) or not 1 <= nd <= 3:
        return NotImplemented
    N, C = x.shape[:2]
    Co = w.shape[0]
    out, K, L, geo, k3 = _geometry(x.shape[2:], w.shape[2:], tuple(stride), tuple(padding),
                                   tuple(dilation))
    with x.device:
        x, w, bias = contiguous(x), contiguous(w), contiguous(bias)
        y = empty((N, Co) + out, x.dtype)
        if y.size == 0:
            return y
        if groups == C and w.shape[1] == 1:
            if L >= DW_PLANE_MIN_L and all(s == 1 for s in stride):
                fn = function(("conv_dw_plane", dt, k3), lambda: gen.depthwise_plane(dt, k3, 4),
                              "ruda_conv_dw_plane")
                fn(rows_grid(N * Co, -(-L // 4)), (256,), (arg(x), arg(w), arg(bias), arg(y),
                                                            np.int32(N * Co), np.int32(C),
                                                            np.int32(Co // C)) + geo)
                return y
            wide = y.size >= nn_cuda.WIDE
            fn = function(("conv_dw", dt, k3, wide), lambda: gen.depthwise(dt, k3, wide),
                          "ruda_conv_dw")
            fn((grid(y.size),), (256,), (arg(x), arg(w), arg(bias), arg(y), np.int64(y.size),
                                       np.int32(C), np.int32(Co // C)) + geo)
            return y
        wg = shaped(w, (groups, Co // groups, C // groups * K))
        if K == 1 and all(s == 1 for s in stride) and not any(lo or hi for lo, hi in padding):
            # a pointwise conv: x is its own columns
            y = shaped(_matmul(wg, shaped(x, (N, groups, C // groups, L))), (N, Co) + out)
            return _add_bias(y, bias, dt, Co, L)
        vec = 16 // x.dtype.itemsize                         # 16-byte stores where rows allow
        vec = vec if L % vec == 0 else 1
        cap = gen.plane_cap(out, w.shape[2:], stride, dilation, x.dtype.itemsize)
        if cap is None:
            im2col = function(("im2col", dt, k3, vec), lambda: gen.im2col(dt, k3, vec),
                              "ruda_im2col")
        else:
            im2col = function(("im2col_plane", dt, k3, vec, cap),
                              lambda: gen.im2col_plane(dt, k3, vec, cap), "ruda_im2col_plane")
        per = C * K * L * x.dtype.itemsize                  # column bytes of one image
        step = max(1, COLS_BYTES // per)
        yv = shaped(y, (N, groups, Co // groups, L))
        for n0 in range(0, N, step):
            n1 = min(N, n0 + step)
            cols = empty((n1 - n0, groups, C // groups * K, L), x.dtype)
            if cap is None:
                rows = (n1 - n0) * C * K
                im2col(rows_grid(rows, -(-L // vec)), (256,),
                       (arg(x)[n0:n1], arg(cols), np.int32(rows)) + geo)
            else:
                planes = (n1 - n0) * C
                im2col((grid(planes * 256),), (256,),
                       (arg(x)[n0:n1], arg(cols), np.int32(planes)) + geo)
            _matmul(wg, cols, yv[n0:n1])
        return _add_bias(y, bias, dt, Co, L)


@functools.lru_cache(maxsize=256)
def _geometry(sp, ks, stride, padding, dilation):
    """(out, K, L, geo, k3) of a conv: the output's spatial sizes, taps, output positions, the
    15 int32 geometry arguments and the 3-d kernel extent (computed once per configuration: the
    host work around a small kernel's launch is what a depthwise layer's call costs)."""
    out = tuple((n + lo + hi - d * (k - 1) - 1) // s + 1
                for n, (lo, hi), k, d, s in zip(sp, padding, ks, dilation, stride))
    geo = tuple(np.int32(v) for v in (as_3d(sp, 1) + as_3d(out, 1) + as_3d(stride, 1)
                                      + as_3d(dilation, 1) + as_3d([lo for lo, _ in padding], 0)))
    return out, math.prod(ks), math.prod(out), geo, as_3d(ks, 1)


def _add_bias(y, bias, dt, co, L):
    """y (N, co, *out) with bias (co,) added in place (None: y as it is)."""
    if bias is not None:
        vec = 16 // y.dtype.itemsize                         # 16-byte vectors where rows allow
        vec = vec if L % vec == 0 and aligned(y) else 1
        fn = function(("conv_bias", dt, vec), lambda: gen.bias(dt, vec), "ruda_bias")
        rows = y.size // L
        fn(rows_grid(rows, L), (256,), (arg(y), arg(bias), np.int32(rows), np.int32(co), np.int32(L)))
    return y
