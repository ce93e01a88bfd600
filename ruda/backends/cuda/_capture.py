"""CUDA graph recording for the cuda backend (``CudaBackend.capture``), and the cuBLAS calls
that must work inside it.

CuPy refuses every cuBLAS call while a stream is capturing (its wrappers rebind the handle's
stream first, and refuse to during capture); cuBLAS itself records into graphs. So while
capturing, :func:`gemm` calls cuBLAS's own entry points through ctypes, on CuPy's handle and the
capturing stream: the bfloat16 GEMMs of ``_bf16`` go there.  Other work CuPy hands to cuBLAS
(float32 matmul) cannot be recorded: :func:`capture` then warns and returns NotImplemented.
"""
import ctypes
import os
import warnings

import cupy

_LIB = []


def _cublas():
    """The libcublas CuPy loaded (by soname; never a second copy)."""
    if not _LIB:
        mode = getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_LAZY
        for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"):
            try:
                lib = ctypes.CDLL(name, mode=mode)
                break
            except OSError:
                continue
        else:
            raise RuntimeError("ruda: cuda: capture: the cuBLAS library CuPy uses is not loaded")
        vp, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        lib.cublasSetStream_v2.argtypes = [vp, vp]
        lib.cublasSetPointerMode_v2.argtypes = [vp, i]
        lib.cublasGemmEx.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, vp, i, i, vp, vp, i, i, i, i]
        lib.cublasGemmStridedBatchedEx.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, ll, vp, i, i,
                                                   ll, vp, vp, i, i, ll, i, i, i]
        _LIB.append(lib)
    return _LIB[0]


def _check(status, fn):
    if status:
        raise RuntimeError(f"ruda: cuda: {fn} failed during capture (cuBLAS status {status})")


def gemm(handle, opb, opa, m, n, k, alpha, pb, btype, ldb, sb, pa, atype, lda, sa, beta, pc,
         ctype, nb, compute, algo):
    """``cublasGemmEx`` (nb == 1) or ``cublasGemmStridedBatchedEx`` on the current stream, host
    pointer mode, arguments as cuBLAS takes them (C's leading dimension m, batch stride n*m)."""
    lib = _cublas()
    _check(lib.cublasSetStream_v2(handle, cupy.cuda.get_current_stream().ptr), "cublasSetStream")
    _check(lib.cublasSetPointerMode_v2(handle, 0), "cublasSetPointerMode")
    if nb == 1:
        _check(lib.cublasGemmEx(handle, opb, opa, m, n, k, alpha, pb, btype, ldb, pa, atype, lda,
                                beta, pc, ctype, m, compute, algo), "cublasGemmEx")
    else:
        _check(lib.cublasGemmStridedBatchedEx(handle, opb, opa, m, n, k, alpha, pb, btype, ldb, sb,
                                              pa, atype, lda, sa, beta, pc, ctype, m, n * m, nb,
                                              compute, algo), "cublasGemmStridedBatchedEx")


def capturing():
    return cupy.cuda.get_current_stream().is_capturing()


def capture(device, fn):
    """``(replay, out)``: ``fn()`` run once eagerly (compiling its kernels, caching its scalars),
    then recorded as a CUDA graph on a stream of its own, blocking (so ordered with the legacy
    default stream), with a private memory pool, so no memory the graph touches is handed to
    other work.  NotImplemented, with a RuntimeWarning naming the cause, when the recorded call
    fails (it ran eagerly just before, so the cause is the recording)."""
    pool = cupy.cuda.MemoryPool()
    with device:
        stream = cupy.cuda.Stream()
        with cupy.cuda.using_allocator(pool.malloc), stream:
            fn()
            stream.synchronize()
            stream.begin_capture(cupy.cuda.runtime.streamCaptureModeRelaxed)
            try:
                out = fn()
            except Exception as e:          # noqa: BLE001 - reported, then run unrecorded
                try:
                    stream.end_capture()
                except Exception:           # noqa: BLE001 - the capture is invalid anyway
                    pass
                warnings.warn(f"ruda: cuda: capture: the call cannot be recorded as a CUDA graph "
                              f"({type(e).__name__}: {e}); it runs unrecorded", RuntimeWarning,
                              stacklevel=3)
                return NotImplemented
            graph = stream.end_capture()

    def replay(_keep=(pool, stream)):
        graph.launch(stream)
    return replay, out
