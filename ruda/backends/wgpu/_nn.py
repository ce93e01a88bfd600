"""Fused nn kernels on wgpu (the names in ``ruda.backends.NN_KERNELS``; None where absent).

``WgpuBackend.nn`` is a :class:`Kernels` bound to the backend (a WArray does not know its
device, so the kernels reach the queue through it).  Each kernel takes native arrays already
checked by ``ruda.nn`` (see ruda/nn/README.md) and returns native arrays, or ``NotImplemented``
for a dtype it does not cover: float32 only (float64, where the adapter has it, and every other
dtype take ``ruda.nn``'s composed path).  Sources come from :mod:`ruda.runtime.kernels.nn_wgsl`;
pipelines are compiled once per device and configuration by the queue's ``raw_pipeline``
(as matmul's) and recorded with ``launch_raw`` in the queue's batch.
"""
import numpy as np

from ruda.runtime.kernels import nn_wgsl as gen

_F32 = np.dtype(np.float32)
_U32 = 2 ** 32


class Kernels:
    """The fused kernels of one wgpu backend (``backend.nn``)."""

    group_norm = None       # composed: ruda.nn folds it into layer_norm rows
    glu = None
    activation = None
    apply_rope = None
    top_k = None
    from ruda.backends.wgpu._nn_quant import linear_quantized  # noqa: E402  (a method)
    from ruda.backends.wgpu._nn_conv import conv  # noqa: E402  (a method)

    # On a CPU adapter (lavapipe) each invocation is a SIMD lane, and the attention kernel's
    # per-query registers (q row, accumulator, tile scores) spill: the composed path (tuned
    # matmul) was as fast at L = S = 64, D = 64 and faster beyond (3.6x slower at L = S = 40,
    # D = 16); the kernel takes only work up to this many L * S * (D + Dv) on such an adapter.
    SDPA_CPU_MAX = 1 << 16
    # lavapipe ends an invocation after 65,535 loop iterations in all (see
    # _reductions.SCAN_ROW), silently: on a CPU adapter the row kernels (two or three passes
    # of n / (wg * vec) steps) and attention (a few steps per key) decline past these, 4x short
    # of that limit, and ruda.nn composes
    ROW_CPU_MAX_STEPS = 1 << 13
    SDPA_CPU_MAX_S = 1 << 13

    def __init__(self, backend):
        self.be = backend
        self.cpu = backend._cpu_adapter()       # lavapipe's loop limiter (ROW_CPU_MAX_STEPS)
        self.max_groups = int(backend.ctx.limits.get("max-compute-workgroups-per-dimension", 65535))

    def _pipeline(self, key, make, writable, name):
        return self.be.ctx.raw_pipeline(("nn",) + key, make, writable, name)

    def _rows(self, op, x, w, b, eps):
        if x.dtype != _F32 or x.ndim != 2 or any(a is not None and a.dtype != _F32 for a in (w, b)):
            return NotImplemented
        be = self.be
        rows, n = x.shape
        y = be._new((rows, n), _F32)
        if rows == 0 or n == 0:
            return y
        x = be._contig(x)
        w = None if w is None else be._contig(w)
        b = None if b is None else be._contig(b)
        if rows * n >= _U32:
            return NotImplemented
        wg = gen.wg_for(n)
        hw, hb = w is not None, b is not None
        ins = [a for a in (x, w, b) if a is not None]
        vec = 4 if n % 4 == 0 and all(a.offset % 4 == 0 for a in ins + [y]) else 1
        if self.cpu and -(-n // (wg * vec)) > self.ROW_CPU_MAX_STEPS:
            return NotImplemented
        pipe, bgl = self._pipeline(("rows", op, wg, hw, hb, vec), lambda: gen.rows(op, wg, hw, hb, vec),
                                   (False,) * len(ins) + (True,), f"nn {op}")
        gx, gy = gen.grid(rows, self.max_groups)
        words = np.frombuffer(gen.pack_rows(rows, n, gx, x.offset, 0 if w is None else w.offset,
                                            0 if b is None else b.offset, y.offset, eps), np.uint32)
        be.ctx.launch_raw(pipe, bgl, words, [a.st for a in ins] + [y.st], (gx, gy, 1), (len(ins),))
        return y

    def softmax(self, x, log):
        return self._rows("log_softmax" if log else "softmax", x, None, None, 0.0)

    def layer_norm(self, x, weight, bias, eps):
        return self._rows("layer_norm", x, weight, bias, eps)

    def rms_norm(self, x, weight, eps):
        return self._rows("rms_norm", x, weight, None, eps)

    def _map(self, key, make, name, arrays, pack):
        """One invocation per element of ``arrays[0]``'s shape, a float32 result: the kernel
        ``make()`` bound to the arrays (read) and y, its uniform ``pack(n, gx, offsets, y's
        offset)``, a ``gen.grid`` of 256-invocation workgroups."""
        be = self.be
        n = arrays[0].size
        y = be._new(arrays[0].shape, _F32)
        if n == 0:
            return y
        if n >= _U32:
            return NotImplemented
        ins = [be._contig(a) for a in arrays]
        pipe, bgl = self._pipeline(key, make, (False,) * len(ins) + (True,), name)
        gx, gy = gen.grid(-(-n // 256), self.max_groups)
        words = np.frombuffer(pack(n, gx, [a.offset for a in ins], y.offset), np.uint32)
        be.ctx.launch_raw(pipe, bgl, words, [a.st for a in ins] + [y.st], (gx, gy, 1),
                          (len(ins),))
        return y

    def swiglu(self, gate, up):
        if gate.dtype != _F32 or up.dtype != _F32 or tuple(gate.shape) != tuple(up.shape):
            return NotImplemented
        return self._map(("swiglu", 256), lambda: gen.swiglu(256), "nn swiglu", [gate, up],
                         lambda n, gx, o, oy: gen.pack_rows(n, n, gx, o[0], o[1], 0, oy, 0.0))

    def batch_norm(self, x, mean, var, weight, bias, eps):
        """Inference batch_norm over x (N, C, L) in one pass (float32; the coefficients per
        element: composed, they and the affine step are seven dispatches, two over x)."""
        args = (x, mean, var, weight, bias)
        if x.ndim != 3 or any(a is not None and a.dtype != _F32 for a in args):
            return NotImplemented
        hw, hb = weight is not None, bias is not None

        def pack(n, gx, o, oy):
            wb = iter(o[3:])
            return gen.pack_batch_norm(n, x.shape[1], x.shape[2], gx, o[0], o[1], o[2],
                                       next(wb) if hw else 0, next(wb) if hb else 0, oy, eps)
        return self._map(("batch_norm", hw, hb), lambda: gen.batch_norm(hw, hb), "nn batch_norm",
                         [a for a in args if a is not None], pack)

    def sdpa(self, q, k, v, mask, is_causal, scale, sliding_window):
        """Tiled online-softmax attention (float32; no mask or window: those compose)."""
        if mask is not None or sliding_window is not None or \
                any(a.dtype != _F32 for a in (q, k, v)):
            return NotImplemented
        B, Hq, L, D = q.shape
        _, Hkv, S, Dv = v.shape
        be = self.be
        bk = gen.sdpa_block_k(D, Dv, int(be.ctx.limits.get("max-compute-workgroup-storage-size", 16384)))
        if D > 256 or Dv > 256 or bk == 0 or B * Hq > self.max_groups or \
                max(q.size, k.size, v.size, B * Hq * L * Dv) >= _U32:
            return NotImplemented
        if self.cpu and (L * S * (D + Dv) > self.SDPA_CPU_MAX or S > self.SDPA_CPU_MAX_S):
            return NotImplemented
        o = be._new((B, Hq, L, Dv), _F32)
        if o.size == 0:
            return o
        if S == 0:
            return be.full((B, Hq, L, Dv), 0, _F32)
        q, k, v = be._contig(q), be._contig(k), be._contig(v)
        pipe, bgl = self._pipeline(("sdpa", D, Dv, bk), lambda: gen.sdpa(D, Dv, bk),
                                   (False, False, False, True), "nn sdpa")
        words = np.frombuffer(gen.pack_sdpa(Hq, Hkv, L, S, q.offset, k.offset, v.offset, o.offset,
                                            scale, is_causal), np.uint32)
        gx = -(-L // gen.SDPA_WG)
        if gx > self.max_groups:
            return NotImplemented
        be.ctx.launch_raw(pipe, bgl, words, [q.st, k.st, v.st, o.st], (gx, B * Hq, 1), (3,))
        return o
