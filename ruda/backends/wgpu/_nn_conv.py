"""``conv`` on wgpu: float32 convolution with 1 to 3 spatial axes (sources from
:mod:`ruda.runtime.kernels.conv_wgsl`).

Depthwise convolutions (``groups == C_in``, one input channel per group, any multiplier) take
a direct kernel (``DW_ROW`` outputs of a row per invocation where rows are as long); every
other one the implicit GEMM, its tile chosen by the runtime tuner (``_tile``:
``conv_wgsl.tiles``' choice for the GEMM's shape is the reference; small GEMMs and
``RUDA_TUNE=off`` take it as it is). A method of :class:`ruda.backends.wgpu._nn.Kernels`
(``self.be`` is the backend); it returns ``NotImplemented`` for what it does not cover
(non-float32 operands, sizes past 31-bit indexing, grids past the adapter's limit), and ruda.nn
then composes.
"""
import numpy as np

from ruda.backends.wgpu import _timer
from ruda.runtime import tune
from ruda.runtime.kernels import as_3d
from ruda.runtime.kernels import conv_wgsl as gen

_F32 = np.dtype(np.float32)
_I31 = 2 ** 31
DW_ROW = 4              # depthwise outputs of a row per invocation, where rows are as long
DW_MAX_TAPS = 169       # the depthwise kernel unrolls its taps: compiling 31x31 took 37 s
GEMM_MAX_K = 1 << 15    # the implicit GEMM loops along C_in / groups x taps in each invocation:
                        # lavapipe ends one after 65,535 loop iterations in all (it failed past
                        # ~58k); past these ruda.nn composes (per-tap matmuls)
TUNE_MIN = 1 << 24      # multiply-adds of the GEMM from which its tile is tuned
_CANDIDATES = 4         # tiles tried (each one compiled): the reference and the next largest
_BUDGET = 1.0           # seconds of measuring per shape bucket unless $RUDA_TUNE_BUDGET says


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
    r0 = 0
    taps = ks[0] * ks[1] * ks[2]
    depthwise = groups == cin and w.shape[1] == 1
    if taps > DW_MAX_TAPS if depthwise else cin // groups * taps > GEMM_MAX_K:
        return NotImplemented
    if depthwise:
        vo = DW_ROW if out[2] >= DW_ROW else 1          # a row's outputs vo at a time
        r0 = -(-out[2] // vo)
        gx, gy = gen.grid(-(-(total // out[2] * r0) // gen.DW_WG), self.max_groups)
        pipe, bgl = self._pipeline(("conv_dw", ks, hb, vo, st[2], dil[2]),
                                   lambda: gen.depthwise(ks, hb, vo, st[2], dil[2]), writable,
                                   "nn conv depthwise")
        if gy > self.max_groups:
            return NotImplemented
        grid = (gx, gy, 1)
    else:
        gx = 1
        m = n * out[0] * out[1] * out[2]
        cin_g, cout_g = cin // groups, cout // groups

        def gemm(tile):
            """(pipeline, layout, grid) of the implicit GEMM with ``tile``, None past the
            adapter's grid."""
            grid = (-(-cout_g // tile[1]), -(-m // tile[0]), groups)
            if max(grid) > self.max_groups:
                return None
            tap = cin_g >= gen.slice_k(tile)
            return self._pipeline(("conv_gemm", ks, hb, tile, tap),
                                  lambda: gen.gemm(ks, hb, tile, tap), writable,
                                  "nn conv implicit gemm") + (grid,)

        def pack(y_offset):
            return np.frombuffer(gen.pack(n, cin, cout, groups, ks, sp, out, st, dil, lo,
                                          offs[:3] + (y_offset,), gx), np.uint32)
        tile = _tile(self, m, cout_g, cin_g * ks[0] * ks[1] * ks[2], gemm, pack, ins, yshape)
        if tile is None or gemm(tile) is None:
            return NotImplemented
        pipe, bgl, grid = gemm(tile)
    words = np.frombuffer(gen.pack(n, cin, cout, groups, ks, sp, out, st, dil, lo, offs, gx, r0),
                          np.uint32)
    be.ctx.launch_raw(pipe, bgl, words, [a.st for a in ins] + [y.st], grid, (len(ins),))
    return y


def _tile(kern, m, cout_g, k, gemm, pack, ins, yshape):
    """The implicit GEMM's tile for M = m output pixels, N = cout_g, K = k: ``gen.tiles``' choice
    where RUDA_TUNE=off or M * N * K is under ``TUNE_MIN``; else the runtime tuner's fastest
    valid candidate of the shape bucket (cached per device), each candidate run on this call's
    operands into a scratch output and checked against the reference's output."""
    ref = gen.tiles(m, cout_g)
    mode = tune.mode()
    if mode == "off" or m * cout_g * k < TUNE_MIN or gemm(ref) is None:
        return ref
    be = kern.be
    ctx = be.ctx
    dims = tune.bucket_dims((m, cout_g, k))
    bucket = tune.bucket(dims)
    key = (mode, tune.default_path(), bucket, ref)
    choices = ctx.ext.setdefault("conv", {})
    if key in choices:
        return choices[key]
    fits = [t for t in gen.TILES
            if t != ref and t[0] <= max(16, dims[0]) and t[1] <= max(16, dims[1])]
    fits.sort(key=lambda t: (-t[0] * t[1], -t[0]))
    tiles = {"x".join(map(str, t)): t for t in [ref] + fits[:_CANDIDATES - 1]}
    tc = [tune.Candidate(name, {"tile": list(t)}) for name, t in tiles.items()]
    tuner = be._mm_state().tuner(ctx)      # the device's tuner, kept with matmul's state
    hit = tuner.lookup("conv", "float32", bucket, tc) if mode == "on" else None
    build = fetch = None
    if hit is None and len(tc) > 1:
        y2 = be._temp(yshape, _F32)
        buffers = [a.st.buffer for a in ins] + [y2.st.buffer]
        ubuf = ctx.device.create_buffer_with_data(data=pack(y2.offset).tobytes(),
                                                  usage=ctx.wgpu.BufferUsage.UNIFORM)
        ctx.flush()          # the work recorded so far (the operands, maybe) goes first

        def build(c):
            made = gemm(tuple(c.params["tile"]))
            if made is None:
                raise ValueError("grid past the adapter's limit")
            pipe, bgl, grid = made
            bg = ctx.device.create_bind_group(layout=bgl, entries=[
                {"binding": 0, "resource": {"buffer": ubuf, "offset": 0, "size": ubuf.size}}] + [
                {"binding": i + 1, "resource": {"buffer": b, "offset": 0, "size": b.size}}
                for i, b in enumerate(buffers)])
            return _timer.candidate_run(ctx, pipe, bg, grid, y2)

        def fetch(y):
            host = np.empty(yshape, _F32)
            ctx.read(y.st, y.offset * 4, host.nbytes, host.reshape(-1).view(np.uint8))
            return host
    budget = tune.default_budget(_BUDGET)
    choice = tuner.choose("conv", "float32", bucket, tc, build=build, fetch=fetch, budget=budget)
    choices[key] = tiles[choice.name]
    return choices[key]
