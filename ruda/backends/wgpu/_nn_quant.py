"""``linear_quantized`` on wgpu: x (rows, in) float32 times a GGML Q8_0/Q4_0/Q4_1 weight,
dequantized inside the kernel (sources from :mod:`ruda.runtime.kernels.quant_wgsl`).

Up to ``GEMV_ROWS`` rows of x (decode) take the GEMV, more (prefill) the tiled GEMM. A method
of :class:`ruda.backends.wgpu._nn.Kernels` (``self.be`` is the backend); it returns
``NotImplemented`` for what it does not cover (non-float32 x, sizes past 32-bit indexing), and
ruda.nn then composes dequantize + matmul.
"""
import numpy as np

from ruda.runtime.kernels import quant_wgsl as gen

_F32 = np.dtype(np.float32)
_QDT = {"q8_0": np.dtype(np.int8), "q4_0": np.dtype(np.uint8), "q4_1": np.dtype(np.uint8)}
_U32 = 2 ** 32
GEMV_ROWS = 8
GEMV_OB = 4            # output rows per GEMV workgroup
# the longest rows each kernel takes: its invocations loop along them, and lavapipe ends an
# invocation after 65,535 loop iterations in all (see _reductions.SCAN_ROW); past these (4x
# short of the lengths that failed) ruda.nn composes dequantize + matmul
GEMV_MAX_IN = 1 << 18
GEMM_MAX_IN = 1 << 15


def linear_quantized(self, x, q, scales, mins, kind, bias):
    """x (rows, in) float32; q, scales, mins as ruda.nn.QuantizedWeight's; bias (out,) float32
    or None -> (rows, out) float32."""
    if kind not in _QDT or x.dtype != _F32 or x.ndim != 2 or q.dtype != _QDT[kind] \
            or scales.dtype != _F32 or (kind == "q4_1") != (mins is not None) \
            or (mins is not None and mins.dtype != _F32) \
            or (bias is not None and bias.dtype != _F32):
        return NotImplemented
    be = self.be
    rows, n = x.shape
    out = q.shape[0]
    if n == 0 or n % 32 or q.shape[1] != (n if kind == "q8_0" else n // 2):
        return NotImplemented
    if max(x.size, q.size, rows * out) >= _U32 or n > (GEMV_MAX_IN if rows <= GEMV_ROWS
                                                        else GEMM_MAX_IN):
        return NotImplemented
    y = be._new((rows, out), _F32)
    if rows == 0 or out == 0:
        return y
    x, q, scales = be._contig(x), be._contig(q), be._contig(scales)
    ins = [x, q, scales]
    if mins is not None:
        mins = be._contig(mins)
        ins.append(mins)
    if bias is not None:
        bias = be._contig(bias)
        ins.append(bias)
    hb = bias is not None
    writable = (False,) * len(ins) + (True,)
    if rows <= GEMV_ROWS:
        key = ("qgemv", kind, rows, GEMV_OB, hb)
        pipe, bgl = self._pipeline(key, lambda: gen.gemv(kind, rows, GEMV_OB, hb), writable,
                                   f"nn linear_quantized {kind} gemv")
        gx, gy = gen.grid(-(-out // GEMV_OB), self.max_groups)
    else:
        pipe, bgl = self._pipeline(("qgemm", kind, hb), lambda: gen.gemm(kind, hb), writable,
                                   f"nn linear_quantized {kind} gemm")
        gx, gy = -(-out // gen.GEMM_T), -(-rows // gen.GEMM_T)
        if gx > self.max_groups or gy > self.max_groups:
            return NotImplemented
    words = np.frombuffer(gen.pack(
        rows, out, n, gx, x.offset, q.offset, scales.offset,
        0 if mins is None else mins.offset, 0 if bias is None else bias.offset, y.offset),
        np.uint32)
    be.ctx.launch_raw(pipe, bgl, words, [a.st for a in ins] + [y.st], (gx, gy, 1), (len(ins),))
    return y
