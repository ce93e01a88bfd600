"""bfloat16 and float16 GEMV on cuda: ``y = x @ W.T`` for up to ``MAX_ROWS`` rows of x against
a weight stored row-major (N, K), as ``nn.linear`` reads it while decoding (kernel:
``ruda.runtime.kernels.gemv_cuda``).  ``gemv`` returns None where the layout does not fit."""

import numpy as np

from ruda.backends.cuda._nn_launch import _cp, function
from ruda.runtime import env
from ruda.runtime.kernels import gemv_cuda as gen

MAX_ROWS = 8
# rows the fused norm takes: one warp's in the rows kernel (same bits), one pass of the GEMV's k loop
NORM_MAX_K = 256 * gen.UNROLL
ENABLED = env.flag("RUDA_CUDA_GEMV", True, at_import=True)   # off: cuBLAS for every shape


def gemv(a3, b3, n, k, m, swiglu=False, dtype="bfloat16", norm=None, res=None):
    """(n, m) bits of a3 (1, n, k) @ b3 (1, k, m) in ``dtype`` (bfloat16, float16), or None:
    a3's rows and W = b3's transpose (m, k) must be row-major with row strides and pointers on
    16 bytes, k % 8 == 0.
    ``swiglu`` (m even): (n, m / 2) ``silu(g) * u`` of the product's two halves.
    ``norm``: (g, eps), a3's rows rms-normalized with weight g (k,) first (k <= ``NORM_MAX_K``),
    with the bits of the rows kernel. ``res``: (n, m) bits added to the product (not with
    swiglu), each rounded as the two calls round."""
    if not 0 < n <= MAX_ROWS or k % 8 or k >= 2**31 or m >= 2**31 or (swiglu and m % 2):
        return None
    sa, sb = a3.strides, b3.strides
    if sa[2] != 2 or sb[1] != 2 or (n > 1 and sa[1] % 16) or (m > 1 and sb[2] % 16):
        return None
    if a3.data.ptr & 15 or b3.data.ptr & 15:
        return None
    g, eps, ldr = None, 0.0, 0
    if norm is not None:
        g, eps = norm
        if k > NORM_MAX_K or g.shape != (k,) or g.strides != (2,) or g.data.ptr & 15:
            return None
    if res is not None:
        if swiglu or res.shape != (n, m) or res.strides[1] != 2:
            return None
        ldr = res.strides[0] // 2
    cp = _cp()
    width = m // 2 if swiglu else m
    out = cp.empty((n, width), np.uint16)
    fn = function(("gemv", n, swiglu, dtype, norm is not None, res is not None),
                  lambda: gen.gemv(n, swiglu, dtype, norm is not None, res is not None), "ruda_gemv")
    warps = width if swiglu else -(-m // gen.ROWS)
    fn((-(-warps // gen.WARPS),), (32 * gen.WARPS,),
       (a3.view(np.uint16), np.int64(sa[1] // 2), b3.view(np.uint16), np.int64(sb[2] // 2), out,
        np.int64(width), np.int32(m), np.int32(k), g, np.float32(eps), res, np.int64(ldr)))
    return out
