"""cuBLAS's two bfloat16 GEMMs, emulated on raw host pointers (column-major, as cuBLAS), and the
math mode of the one handle (``cupy.cuda.device.get_cublas_handle()``)."""
import ctypes

import numpy as np

CUDA_R_16BF, CUDA_R_16F, CUBLAS_COMPUTE_32F = 14, 2, 68
CUBLAS_DEFAULT_MATH = 0
math_mode = CUBLAS_DEFAULT_MATH


def _handle(handle):
    from cupy.cuda.device import CUBLAS_HANDLE
    assert handle == CUBLAS_HANDLE, handle


def getMathMode(handle):
    _handle(handle)
    return math_mode


def setMathMode(handle, mode):
    global math_mode
    _handle(handle)
    math_mode = mode


def getPointerMode(handle):
    return 0


def setPointerMode(handle, mode):
    raise AssertionError("the pointer mode is host already")


def _mat(ptr, rows, cols, ld):
    n = (cols - 1) * ld + rows
    buf = np.frombuffer((ctypes.c_uint16 * n).from_address(ptr), np.uint16)
    return np.lib.stride_tricks.as_strided(buf, shape=(rows, cols), strides=(2, 2 * ld))


def _gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, dtype):
    assert lda >= max(1, k if ta else m) and ldb >= max(1, n if tb else k) and ldc >= max(1, m)
    x = _mat(a, k if ta else m, m if ta else k, lda)
    y = _mat(b, n if tb else k, k if tb else n, ldb)
    if dtype == CUDA_R_16BF:
        import ml_dtypes
        B = np.dtype(ml_dtypes.bfloat16)
    else:
        B = np.dtype(np.float16)
    x = (x.T if ta else x).view(B).astype(np.float64)
    y = (y.T if tb else y).view(B).astype(np.float64)
    _mat(c, m, n, ldc)[...] = (x @ y).astype(B).view(np.uint16)


def gemmEx(handle, ta, tb, m, n, k, alpha, a, at, lda, b, bt, ldb, beta, c, ct, ldc, compute, algo):
    assert at == bt == ct and at in (CUDA_R_16BF, CUDA_R_16F) and compute == CUBLAS_COMPUTE_32F
    _gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, at)


def gemmStridedBatchedEx(handle, ta, tb, m, n, k, alpha, a, at, lda, sa, b, bt, ldb, sb, beta, c, ct,
                         ldc, sc, count, compute, algo):
    assert at == bt == ct and at in (CUDA_R_16BF, CUDA_R_16F) and compute == CUBLAS_COMPUTE_32F
    for i in range(count):
        _gemm(ta, tb, m, n, k, a + 2 * i * sa, lda, b + 2 * i * sb, ldb, c + 2 * i * sc, ldc, at)
