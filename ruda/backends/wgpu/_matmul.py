"""Tuned matmul of the wgpu backend: the tiled WGSL kernels of
:mod:`ruda.runtime.kernels.matmul_wgsl`, chosen per device, dtype and shape bucket by
:mod:`ruda.runtime.tune`.

:class:`MatmulOps` is a mixin placed before ``Ops`` in the backend's bases; its ``matmul``
serves float32 (and float16 where the adapter has ``shader-f16``) operands of any rank the
standard allows (1-D operands, 2-D, batched with broadcasting); other dtypes go to
``Ops.matmul`` (the generic IR kernel).  ``tensordot`` and ``linalg_matrix_power`` of ``Ops``
call ``self.matmul`` and so run these kernels too; ``vecdot`` stays a fused multiply-reduce
(as a GEMM it would be a batch of 1x1 products, each wasting almost a whole workgroup).

Choice of kernel
----------------
The shape bucket is ``tune.bucket((M, N, K))`` (each dimension rounded up to a power of two).
The first call of a bucket on a device asks the tuner (``RUDA_TUNE=on``, the default: the
cache file, else measure; ``force``: measure once per process).  Measuring tries the
candidates that fit the device limits (tiles no larger than the bucket), the ``RUDA_TUNE=off``
default first, then the largest tiles, each once on scratch random operands of shape
``(M, round4(N), round4(K))``, rejects any whose output differs from the operands' float64
product, and times the others with timestamp queries (host clock where the adapter has none)
until ``$RUDA_TUNE_BUDGET`` seconds (default here 1.0) went to running them: a slow device
tries two or a few, a fast one all (tuner details in :mod:`ruda.runtime.tune`; a run past a
second says so on stderr).  The scratch
data is the tuner's own; the caller's operands are never read back.  ``RUDA_TUNE=off`` never
measures and uses a fixed default (64x64 tiles, 4x4 blocks, vec4 loads when M, N >= 64;
32x32 tiles otherwise).  The choice is memoized per (device, ``RUDA_TUNE``,
``RUDA_TUNE_CACHE``, dtype, bucket) and the compiled pipeline per (device, candidate), so a
later call costs two dict lookups.  A chosen candidate with vec-wide loads that this call's
alignment (K, N, leading dimensions, offsets) does not allow runs as its narrower-load twin
(same tiles, ``vec`` 2 or 1): no re-tuning, no copy.

Operands: the kernel reads row-major matrices with any leading dimension, offset and one batch
stride (0 broadcasts).  Views with unit column stride are used in place; other views
(transposed, negative strides) are copied to contiguous first.  Batch dimensions are
collapsed; what cannot be collapsed into one stride is dispatched as several launches.
``x @ W.T`` with W row-major (``ruda.nn.linear``) copies no W: up to 8 rows of x it runs as
one multiply-reduce over W's rows (the tiles would idle most of their rows), beyond as
``(W @ x.T).T``, copying only the smaller ``x.T``.
"""
import itertools
import math
import os

import numpy as np

from ruda.backends.wgpu import _timer
from ruda.backends.wgpu._array import basic_index, broadcast_strides, collapse
from ruda.backends.wgpu._linalg import _as_matrices, _drop_vector_dims
from ruda.runtime import tune
from ruda.runtime.kernels import matmul_wgsl as mm

_F32 = np.dtype(np.float32)
_F16 = np.dtype(np.float16)
_IR = {_F32: "f32", _F16: "f16"}
_U32 = 2 ** 32
_DEFAULT_BUDGET = 1.0      # seconds of measuring per bucket unless $RUDA_TUNE_BUDGET says otherwise

_WRITABLE = (False, False, True)   # a, b, out


_FEW_ROWS = 8       # up to this many rows, x @ W.T runs as a multiply-reduce (no copy of W.T)
# products loop over K in each invocation; lavapipe ends an invocation after 65,535 loop
# iterations in all (see _reductions.SCAN_ROW), so a longer K is summed over blocks of this
K_BLOCK = 1 << 15


def _rows_by_transposed(x1, x2):
    """The rows of x1 (all but its last axis) when x2 is a transposed matrix view (unit row
    stride, as W.T of a row-major W) with fewer rows than x2 has columns, else 0."""
    if x2.ndim != 2 or x1.ndim == 0 or x1.shape[-1] != x2.shape[0] or 1 in x2.shape or \
            0 in x2.shape or x2.strides[0] != 1 or x2.strides[1] == 1:
        return 0
    rows = math.prod(x1.shape[:-1])
    return rows if rows < x2.shape[1] else 0


def _bucket_dims(M, N, K):
    return tuple(d if d <= 1 else 1 << (d - 1).bit_length() for d in (M, N, K))


def _round4(n):
    return -(-n // 4) * 4


def _with_vec(p, v):
    """``p`` with ``vec`` loads of width ``v`` (same tiles; always valid for v in 1, 2, 4 <= p.vec)."""
    return p if p.vec == v else mm.MatmulParams.from_dict(dict(p.as_dict(), vec=v))


class _State:
    """Per-device matmul state: device limits, choices, tuners."""

    def __init__(self, ctx):
        lim = ctx.limits
        self.max_shared = int(lim.get("max-compute-workgroup-storage-size", 16384))
        self.max_inv = int(lim.get("max-compute-invocations-per-workgroup", 256))
        self.max_groups = int(lim.get("max-compute-workgroups-per-dimension", 65535))
        self.choices = {}      # (RUDA_TUNE, RUDA_TUNE_CACHE, ir dtype, bucket dims) -> MatmulParams
        self.tuners = {}       # cache path -> tune.Tuner
        self.last_choice = None     # (bucket string, candidate name, how): for tests and `ruda info`

    def pipeline(self, ctx, p):
        """(pipeline, layout) of candidate ``p``, compiled once per device by the queue."""
        return ctx.raw_pipeline(("matmul", p), lambda: mm.generate(p), _WRITABLE, f"matmul {p.name}")

    def candidates(self, ir):
        return mm.candidates(ir, max_shared_bytes=self.max_shared, max_invocations=self.max_inv)

    def default(self, ir, M, N):
        """The RUDA_TUNE=off kernel: 64x64 tiles with 4x4 register blocks and vec4 loads for
        matrices of at least 64x64, else 32x32 tiles (the reference if even those do not fit)."""
        if M >= 64 and N >= 64:
            p = mm.MatmulParams(64, 64, 16, 4, 4, 4, ir, svec=4)
        else:
            p = mm.MatmulParams(32, 32, 16, 2, 2, 1, ir)
        if p.shared_bytes > self.max_shared or p.invocations > self.max_inv:
            p = mm.MatmulParams(16, 16, 16, 1, 1, 1, ir)
        return p

    def tuner(self, ctx):
        path = tune.default_path()
        t = self.tuners.get(path)
        if t is None:
            info = ctx.adapter.info
            fp = tune.Fingerprint("wgpu", f"{info.get('device', '?')} ({info.get('backend_type', '?')})",
                                  str(info.get("description", "")))
            timer = _timer.tuning_timer(ctx.device, ctx.synchronize)
            t = self.tuners[path] = tune.Tuner(fp, timer, cache=tune.TuneCache(path))
        return t


class MatmulOps:
    """``matmul`` through the tuned tiled WGSL kernels (mixin; needs ``LinalgOps`` after it)."""

    def _mm_state(self):
        ext = self.ctx.ext
        st = ext.get("matmul")
        if st is None:
            st = ext["matmul"] = _State(self.ctx)
        return st

    def matmul(self, x1, x2):
        K = x1.shape[-1]
        if K > K_BLOCK:
            return self._matmul_k_blocks(x1, x2, K)
        dt = x1.dtype
        ir = _IR.get(dt)
        if ir is None or x2.dtype != dt or (ir == "f16" and "shader-f16" not in self.ctx.features):
            return super().matmul(x1, x2)
        rows = _rows_by_transposed(x1, x2)
        if rows and ir == "f32":
            # x @ W.T (nn.linear): the tiled kernel would copy W.T first
            wt = x2.view(x2.shape[::-1], x2.strides[::-1], x2.offset)
            if rows <= _FEW_ROWS:    # a multiply-reduce over W's rows, W read in place
                a = x1.view(x1.shape[:-1] + (1, x1.shape[-1]),
                            x1.strides[:-1] + (0, x1.strides[-1]), x1.offset)
                return self.vecdot(a, wt)
            # else (W @ x.T).T: only the small x.T is copied
            x = self.reshape(x1, (rows, x1.shape[-1]))
            r = self.matmul(wt, x.view(x.shape[::-1], x.strides[::-1], x.offset))
            r = self.copy(r.view(r.shape[::-1], r.strides[::-1], r.offset))
            return self.reshape(r, x1.shape[:-1] + (x2.shape[1],))
        a, b, va, vb, batch, M, K, N = _as_matrices(x1, x2)
        oshape = batch + (M, N)
        st = self._mm_state()
        gx, gy = -(-N // 16), -(-M // 16)          # the smallest tiles: the most workgroups
        if gx > st.max_groups or gy > st.max_groups:
            return super().matmul(x1, x2)          # beyond one dispatch's grid: the generic kernel
        if math.prod(oshape) == 0:
            out = self._new(oshape, dt)
        elif K == 0:
            out = self.full(oshape, 0, dt)
        else:
            out = self._new(oshape, dt)
            self._mm_run(st, ir, a, b, out, batch, M, N, K)
        return _drop_vector_dims(out, va, vb)

    def _matmul_k_blocks(self, x1, x2, K):
        """x1 @ x2 as the sum of the products of K_BLOCK-long slices of the inner axis."""
        out = None
        for k0 in range(0, K, K_BLOCK):
            ks = slice(k0, min(k0 + K_BLOCK, K))
            a = basic_index(x1, (Ellipsis, ks))
            b = basic_index(x2, (ks,) if x2.ndim == 1 else (Ellipsis, ks, slice(None)))
            p = self.matmul(a, b)
            out = p if out is None else self.add(out, p)
        return out

    # ------------------------------------------------------------------ launch
    def _mm_operand(self, x, batch, rows, cols):
        """(array, batch strides, leading dimension) usable by the kernel (copied if it must be)."""
        for attempt in (0, 1):
            full = broadcast_strides(x, batch + (rows, cols))
            sb, (sr, sc) = full[:-2], full[-2:]
            ld = sr if rows > 1 else cols
            ok = (cols == 1 or sc == 1) and ld >= 0 and all(s >= 0 for s in sb)
            if ok or attempt:
                return x, sb, ld
            x = self.copy(x)
        raise AssertionError("unreachable")

    def _mm_run(self, st, ir, a, b, out, batch, M, N, K):
        a, sa, lda = self._mm_operand(a, batch, M, K)
        b, sb, ldb = self._mm_operand(b, batch, K, N)
        sc = list(out.strides[:-2])
        cshape, (csa, csb, csc) = collapse(batch, [sa, sb, sc]) if batch else ((), [(), (), ()])
        if not cshape:
            cshape, csa, csb, csc = (1,), (0,), (0,), (M * N,)
        zb, za, zbb, zc = cshape[-1], csa[-1], csb[-1], csc[-1]
        p = self._mm_choose(st, ir, M, N, K)
        outer = [s for d in range(len(cshape) - 1) for s in (csa[d], csb[d])]
        for v in (p.vec, 2, 1):          # the widest loads this call's alignment allows
            if v <= p.vec:
                q = _with_vec(p, v)
                if mm.applicable(q, M, N, K, lda, ldb, a.offset, b.offset, za, zbb) and \
                        all(s % v == 0 for s in outer):
                    p = q
                    break
        ctx = self.ctx
        pipe, bgl = st.pipeline(ctx, p)
        sts = (a.st, b.st, out.st)
        for idx in itertools.product(*(range(n) for n in cshape[:-1])):
            oa = a.offset + sum(i * s for i, s in zip(idx, csa))
            ob = b.offset + sum(i * s for i, s in zip(idx, csb))
            oc = out.offset + sum(i * s for i, s in zip(idx, csc))
            for z0 in range(0, zb, st.max_groups):
                nz = min(st.max_groups, zb - z0)
                vals = (M, N, K, nz, lda, ldb, N, oa + z0 * za, ob + z0 * zbb, oc + z0 * zc, za, zbb, zc)
                if any(not 0 <= int(v) < _U32 for v in vals):
                    raise ValueError(f"ruda wgpu.matmul: operands too large for the kernel's 32-bit "
                                     f"indexing (shapes {a.shape} @ {b.shape})")
                words = np.frombuffer(mm.pack_params(*vals), np.uint32)
                gx, gy, _ = mm.grid(p, M, N, nz)
                ctx.launch_raw(pipe, bgl, words, sts, (gx, gy, nz), (2,))

    # ------------------------------------------------------------------ choice
    def _mm_choose(self, st, ir, M, N, K):
        env = os.environ
        bd = _bucket_dims(M, N, K)
        key = (env.get("RUDA_TUNE"), env.get("RUDA_TUNE_CACHE"), ir, bd)
        p = st.choices.get(key)
        if p is None:
            p, how = self._mm_select(st, ir, M, N, K, bd)
            st.choices[key] = p
            st.last_choice = ("x".join(map(str, bd)), p.name, how)
        return p

    def _mm_select(self, st, ir, M, N, K, bd):
        if tune.mode() == "off":
            return st.default(ir, M, N), "default (RUDA_TUNE=off)"
        Mb, Nb, _ = bd
        cands = [p for i, p in enumerate(st.candidates(ir))
                 if i == 0 or (p.tm <= max(16, Mb) and p.tn <= max(16, Nb))]
        # tried while the budget lasts, so by promise: the untuned default (the reference), then
        # the largest tiles (the most reuse per load), vec4 stores to shared memory first
        dflt = st.default(ir, M, N)
        cands.sort(key=lambda p: (p != dflt, -p.tm * p.tn, -p.svec))
        by_name = {p.name: p for p in cands}
        tuner = st.tuner(self.ctx)
        budget = tune.default_budget(_DEFAULT_BUDGET)
        bucket = "x".join(map(str, bd))
        tc = [tune.Candidate(p.name, p.as_dict()) for p in cands]
        hit = tuner.lookup("matmul", _np_name(ir), bucket, tc) if tune.mode() == "on" else None
        if hit is None and len(tc) > 1:
            build, fetch, expected = self._mm_tuning_run(st, ir, M, _round4(N), _round4(K))
        else:       # cached, or nothing to choose: choose() answers without building anything
            build = fetch = expected = None
        choice = tuner.choose("matmul", _np_name(ir), bucket, tc, build=build, fetch=fetch,
                              budget=budget, expected=expected)
        how = "cache" if hit is not None else ("tuned" if build is not None else "only candidate")
        return by_name[choice.name], how

    def _mm_tuning_run(self, st, ir, M, N, K):
        """build/fetch/expected for the tuner: each candidate on scratch operands of shape
        (M, N, K), checked against their float64 product on the host."""
        ctx = self.ctx
        dt = _F32 if ir == "f32" else _F16
        rng = np.random.default_rng(12345)
        A = rng.standard_normal((M, K)).astype(dt)
        B = rng.standard_normal((K, N)).astype(dt)
        sa, sb = ctx.upload(A), ctx.upload(B)
        sc = ctx.alloc(M * N * dt.itemsize)
        ubuf = ctx.device.create_buffer_with_data(
            data=mm.pack_params(M, N, K), usage=ctx.wgpu.BufferUsage.UNIFORM)
        _, bgl = st.pipeline(ctx, st.default(ir, M, N))
        bg = ctx.device.create_bind_group(layout=bgl, entries=[
            {"binding": 0, "resource": {"buffer": ubuf, "offset": 0, "size": 64}}] + [
            {"binding": i + 1, "resource": {"buffer": s.buffer, "offset": 0, "size": s.buffer.size}}
            for i, s in enumerate((sa, sb, sc))])
        ctx.flush()       # work recorded so far goes first

        def build(c):
            p = mm.MatmulParams.from_dict(c.params)
            pipe, _ = st.pipeline(ctx, p)
            return _timer.candidate_run(ctx, pipe, bg, mm.grid(p, M, N, 1), sc)

        def fetch(storage):
            host = np.empty((M, N), dt)
            ctx.read(storage, 0, host.nbytes, host.reshape(-1).view(np.uint8))
            return host
        return build, fetch, lambda: A.astype(np.float64) @ B.astype(np.float64)


def _np_name(ir):
    return "float32" if ir == "f32" else "float16"
