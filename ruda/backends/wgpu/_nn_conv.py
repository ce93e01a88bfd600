"""``conv`` on wgpu: float32 convolution with 1 to 3 spatial axes (sources from
:mod:`ruda.runtime.kernels.conv_wgsl`).

Depthwise convolutions (``groups == C_in``, one input channel per group, any multiplier) take
the direct kernel; every other one the implicit GEMM, its tile chosen from the GEMM's shape by
``conv_wgsl.tiles``. A method of :class:`ruda.backends.wgpu._nn.Kernels` (``self.be`` is the
backend); it returns ``NotImplemented`` for what it does not cover (non-float32 operands, sizes
past 31-bit indexing, grids past the adapter's limit), and ruda.nn then composes.
"""
import numpy as np

from ruda.runtime.kernels import as_3d
from ruda.runtime.kernels import conv_wgsl as gen

_F32 = np.dtype(np.float32)
_I31 = 2 ** 31


def conv(self, x, w, bias, stride, padding, dilation, groups):
    """x ``(N, C_in, *sp)``, w ``(C_out, C_in / groups, *k)``, bias ``(C_out,)`` or None, float32
    -> ``(N, C_out, *out)`` (ruda/nn/README.md's contract)."""
    if x.dtype != _F32 or w.dtype != _F32 or (bias is not None and bias.dtype != _F32):
        return NotImplemented
    nd = x.ndim - 2
    if not 1 <= nd <= 3:
        return NotImplemented
    be = self.be
    n, cin = x.shape[:2]
    cout = w.shape[0]
    ks = as_3d(w.shape[2:], 1)
    sp = as_3d(x.shape[2:], 1)
    st, dil = as_3d(stride, 1), as_3d(dilation, 1)
    lo = as_3d([p[0] for p in padding], 0)
    hi = as_3d([p[1] for p in padding], 0)
    out = tuple((s + a + b - d * (k - 1) - 1) // t + 1
                for s, a, b, d, k, t in zip(sp, lo, hi, dil, ks, st))
    yshape = (n, cout) + out[3 - nd:]
    total = n * cout * out[0] * out[1] * out[2]
    if max(x.size, w.size, total) >= _I31 or any(a + b + s >= _I31 for a, b, s in zip(lo, hi, sp)):
        return NotImplemented
    y = be._new(yshape, _F32)
    if total == 0:
        return y
    x, w = be._contig(x), be._contig(w)
    ins = [x, w]
    if bias is not None:
        bias = be._contig(bias)
        ins.append(bias)
    hb = bias is not None
    offs = (x.offset, w.offset, 0 if bias is None else bias.offset, y.offset)
    writable = (False,) * len(ins) + (True,)
    if groups == cin and w.shape[1] == 1:
        gx, gy = gen.grid(-(-total // gen.DW_WG), self.max_groups)
        if gy > self.max_groups:
            return NotImplemented
        pipe, bgl = self._pipeline(("conv_dw", ks, hb), lambda: gen.depthwise(ks, hb), writable,
                                   "nn conv depthwise")
        grid = (gx, gy, 1)
    else:
        gx = 1
        m = n * out[0] * out[1] * out[2]
        tile = gen.tiles(m, cout // groups)
        tap = cin // groups >= gen.slice_k(tile)
        grid = (-(-(cout // groups) // tile[1]), -(-m // tile[0]), groups)
        if max(grid) > self.max_groups:
            return NotImplemented
        pipe, bgl = self._pipeline(("conv_gemm", ks, hb, tile, tap),
                                   lambda: gen.gemm(ks, hb, tile, tap), writable,
                                   "nn conv implicit gemm")
    words = np.frombuffer(gen.pack(n, cin, cout, groups, ks, sp, out, st, dil, lo, offs, gx),
                          np.uint32)
    be.ctx.launch_raw(pipe, bgl, words, [a.st for a in ins] + [y.st], grid, (len(ins),))
    return y
