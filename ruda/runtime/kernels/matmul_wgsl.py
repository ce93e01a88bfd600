"""Tiled WGSL matmul: source generator and tuning candidates (pure code generation).

``C[b] = A[b] @ B[b]`` for row-major ``A`` (M x K), ``B`` (K x N), ``C`` (M x N), in a batch of
``batch`` matrices (batch strides may be 0 to broadcast an operand).  Each workgroup computes
a ``tm x tn`` tile of ``C``, staging ``tk``-deep slices of ``A`` and ``B`` in workgroup memory;
each invocation accumulates an ``rm x rn`` register block.  ``svec=1``: rows ``ty + i*tm/rm``,
columns ``tx + j*tn/rn``, scalar workgroup-memory reads; ``svec=4`` (rm, rn multiples of 4):
workgroup tiles held as ``vec4``, rows ``4*(ty + p*tm/rm) + e`` and column vectors
``tx + q*tn/rn``, so one ``vec4`` read feeds 4 rows or columns (4x fewer shared loads per
FMA; neighbouring invocations still read neighbouring vectors).  ``pf=True`` prefetches the
next tile's global loads into registers before computing the current tile (latency hiding).  Global loads of
``A`` (along K) and ``B`` (along N) are ``vec``-wide (1, 2 or 4).  Edges are guarded, so any
M, N, K work; ``vec > 1`` needs K, N, the leading dimensions, offsets and batch strides of A
and B to be multiples of ``vec`` (see :func:`applicable`).

Interface for the wgpu backend (kernel wiring) and the tuner:

``MatmulParams(tm, tn, tk, rm, rn, vec, dtype="f32", acc=None, svec=1, pf=False)``
    one candidate; ``dtype`` "f32" or "f16" (storage of A, B, C; f16 needs the device
    feature ``"shader-f16"``), ``acc`` the accumulation type (default "f32").
    ``.name`` (stable id, used as the tuning candidate name), ``.workgroup_size``,
    ``.shared_bytes``, ``.as_dict()`` / ``MatmulParams.from_dict(d)`` (JSON round trip).
``generate(params) -> str``
    the WGSL module.  Entry point ``main``.  Bindings (group 0):
    ``@binding(0)`` uniform ``Params`` = 16 x u32 from :func:`pack_params`;
    ``@binding(1)`` A (read-only storage), ``@binding(2)`` B (read-only storage),
    ``@binding(3)`` C (read-write storage).  A/B are declared as ``array<vecN<T>>`` when
    ``vec > 1``; C as ``array<T>``.  Offsets, leading dimensions and strides are in elements.
``pack_params(M, N, K, batch=1, lda=K, ldb=N, ldc=N, off_a=0, off_b=0, off_c=0,
stride_a=M*lda, stride_b=K*ldb, stride_c=M*ldc) -> bytes``  (the uniform buffer, 64 bytes)
``grid(params, M, N, batch=1) -> (x, y, z)``  workgroups to dispatch (``x`` over N tiles).
``applicable(params, M, N, K, lda=K, ldb=N, off_a=0, off_b=0, stride_a=None, stride_b=None)``
    whether a candidate can run these operands (vector alignment).
``candidates(dtype="f32", *, max_shared_bytes=16384, max_invocations=256)``
    the tuning candidates that fit the device limits, the first being the simple
    reference (16x16 tile, 1x1 block, scalar loads) that the tuner validates the others against.

Wiring sketch (wgpu backend; ``tests/test_tune.py::_mm_run`` is a complete raw-wgpu version)::

    cands = [p for p in mm.candidates("f32", max_shared_bytes=lim["max-compute-workgroup-storage-size"],
             max_invocations=lim["max-compute-invocations-per-workgroup"])
             if mm.applicable(p, M, N, K, lda, ldb, off_a, off_b, sa, sb)]
    best = tuner.choose("matmul", "float32", (M, N, K),
                        [tune.Candidate(p.name, p.as_dict()) for p in cands],
                        build=lambda c: (lambda timestamp_writes=None: launch(
                            mm.MatmulParams.from_dict(c.params), a, b, scratch_c, timestamp_writes)),
                        fetch=read_back)          # scratch output: the user's C is written once
    launch(mm.MatmulParams.from_dict(best.params), a, b, c)  # pipeline cached per params.name

Subgroup and cooperative-matrix variants are not generated yet; they would be further
candidates with their own feature requirements.
"""
import dataclasses
import struct

_ACC_DEFAULT = "f32"
_TYPES = ("f32", "f16")


@dataclasses.dataclass(frozen=True)
class MatmulParams:
    tm: int
    tn: int
    tk: int
    rm: int
    rn: int
    vec: int = 1
    dtype: str = "f32"
    acc: str = None
    svec: int = 1
    pf: bool = False

    def __post_init__(self):
        if self.acc is None:
            object.__setattr__(self, "acc", _ACC_DEFAULT)
        self.check()

    def check(self):
        if self.dtype not in _TYPES or self.acc not in _TYPES:
            raise ValueError(f"matmul_wgsl: dtype/acc must be in {_TYPES}; got {self.dtype}/{self.acc}")
        if self.vec not in (1, 2, 4):
            raise ValueError(f"matmul_wgsl: vec must be 1, 2 or 4; got {self.vec}")
        for v in (self.tm, self.tn, self.tk, self.rm, self.rn):
            if v <= 0:
                raise ValueError(f"matmul_wgsl: sizes must be positive: {self}")
        if self.tm % self.rm or self.tn % self.rn:
            raise ValueError(f"matmul_wgsl: tm/rm and tn/rn must divide: {self}")
        if self.tk % self.vec or self.tn % self.vec:
            raise ValueError(f"matmul_wgsl: vec must divide tk and tn: {self}")
        if self.svec not in (1, 4) or self.svec == 4 and (self.rm % 4 or self.rn % 4):
            raise ValueError(f"matmul_wgsl: svec must be 1, or 4 with rm and rn multiples of 4: {self}")

    @property
    def name(self):
        acc = "" if self.acc == _ACC_DEFAULT else f"_acc{self.acc}"
        return (f"mm_{self.dtype}{acc}_t{self.tm}x{self.tn}x{self.tk}_r{self.rm}x{self.rn}"
                f"_v{self.vec}" + ("_s4" if self.svec == 4 else "") + ("_pf" if self.pf else ""))

    @property
    def workgroup_size(self):
        return (self.tn // self.rn, self.tm // self.rm, 1)

    @property
    def invocations(self):
        x, y, _ = self.workgroup_size
        return x * y

    @property
    def shared_bytes(self):
        return (self.tm * self.tk + self.tk * self.tn) * (4 if self.acc == "f32" else 2)

    def as_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


def pack_params(M, N, K, batch=1, lda=None, ldb=None, ldc=None, off_a=0, off_b=0, off_c=0,
                stride_a=None, stride_b=None, stride_c=None):
    """The 64-byte uniform block (16 x u32) for :func:`generate`'s ``Params``."""
    lda = K if lda is None else lda
    ldb = N if ldb is None else ldb
    ldc = N if ldc is None else ldc
    stride_a = M * lda if stride_a is None else stride_a
    stride_b = K * ldb if stride_b is None else stride_b
    stride_c = M * ldc if stride_c is None else stride_c
    vals = (M, N, K, batch, lda, ldb, ldc, off_a, off_b, off_c, stride_a, stride_b, stride_c, 0, 0, 0)
    for v in vals:
        if not 0 <= v < 2**32:
            raise ValueError(f"matmul_wgsl: parameter {v} does not fit in u32")
    return struct.pack("<16I", *vals)


def grid(params, M, N, batch=1):
    return (-(-N // params.tn), -(-M // params.tm), batch)


def applicable(params, M, N, K, lda=None, ldb=None, off_a=0, off_b=0, stride_a=None,
               stride_b=None):
    v = params.vec
    if v == 1:
        return True
    lda = K if lda is None else lda
    ldb = N if ldb is None else ldb
    stride_a = M * lda if stride_a is None else stride_a
    stride_b = K * ldb if stride_b is None else stride_b
    return all(x % v == 0 for x in (K, N, lda, ldb, off_a, off_b, stride_a, stride_b))


def _lit(x, t):
    return f"{x}.0" if t == "f32" else f"{x}.0h"


def generate(p):
    """WGSL source of candidate ``p`` (a :class:`MatmulParams`)."""
    p.check()
    T, A_ = p.dtype, p.acc
    v = p.vec
    s4 = p.svec == 4
    VT = T if v == 1 else f"vec{v}<{T}>"
    wx, wy, _ = p.workgroup_size
    nthreads = wx * wy
    a_vecs = p.tm * p.tk // v                         # vector loads per A tile
    b_vecs = p.tk * p.tn // v
    kv_a = p.tk // v                                  # vectors per A tile row (along k)
    nv_b = p.tn // v                                  # vectors per B tile row (along n)
    conv = (lambda e: e) if A_ == T else (lambda e: f"{A_}({e})")
    zero = _lit(0, A_)
    S = f"vec4<{A_}>" if s4 else A_                   # workgroup-memory element
    L = []
    w = L.append
    if "f16" in (T, A_):
        w("enable f16;")
    w("struct Params { M: u32, N: u32, K: u32, batch: u32, lda: u32, ldb: u32, ldc: u32,")
    w("  off_a: u32, off_b: u32, off_c: u32, stride_a: u32, stride_b: u32, stride_c: u32,")
    w("  pad0: u32, pad1: u32, pad2: u32 };")
    w("@group(0) @binding(0) var<uniform> P: Params;")
    w(f"@group(0) @binding(1) var<storage, read> A: array<{VT}>;")
    w(f"@group(0) @binding(2) var<storage, read> B: array<{VT}>;")
    w(f"@group(0) @binding(3) var<storage, read_write> C: array<{T}>;")
    q = 4 if s4 else 1
    w(f"var<workgroup> As: array<{S}, {p.tk * p.tm // q}>;   // [k][m]")
    w(f"var<workgroup> Bs: array<{S}, {p.tk * p.tn // q}>;   // [k][n]")
    w(f"@compute @workgroup_size({wx}, {wy}, 1)")
    w("fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {")
    w("  let tx = lid.x;")
    w("  let ty = lid.y;")
    w(f"  let tid = ty * {wx}u + tx;")
    w(f"  let m0 = wid.y * {p.tm}u;")
    w(f"  let n0 = wid.x * {p.tn}u;")
    w("  let bz = wid.z;")
    w("  let M = P.M;")
    w("  let N = P.N;")
    w("  let K = P.K;")
    w("  let base_a = P.off_a + bz * P.stride_a;")
    w("  let base_b = P.off_b + bz * P.stride_b;")
    w("  let base_c = P.off_c + bz * P.stride_c;")
    if s4:
        # accumulators: rows 4*(ty + ip*wy) + e (ip < rm/4), column vectors tx + jq*wx (jq < rn/4)
        for i in range(p.rm):
            for jq in range(p.rn // 4):
                w(f"  var c{i}_{jq}: vec4<{A_}> = vec4<{A_}>({zero});")
    else:
        for i in range(p.rm):
            for j in range(p.rn):
                w(f"  var c{i}_{j}: {A_} = {zero};")

    def store_smem(arr, flat, value):
        if s4:
            return f"{arr}[({flat}) / 4u][({flat}) % 4u] = {value};"
        return f"{arr}[{flat}] = {value};"

    n_a = -(-a_vecs // nthreads)                      # A / B vectors staged per invocation
    n_b = -(-b_vecs // nthreads)
    zv = f"{VT}({_lit(0, T)})"
    for it in range(n_a):
        w(f"  var ra{it}: {VT};")
    for it in range(n_b):
        w(f"  var rb{it}: {VT};")

    def load(kbase):
        """Global -> registers ra*/rb* for the tile starting at k = kbase (edges give 0)."""
        for it in range(n_a):            # A: tm x tk, vectors along k
            lim = f"l < {a_vecs}u && " if (it + 1) * nthreads > a_vecs else ""
            idx = "base_a + gm * P.lda + gk"
            w(f"    {{ let l = tid + {it * nthreads}u; let gm = m0 + l / {kv_a}u; "
              f"let gk = {kbase} + (l % {kv_a}u) * {v}u;")
            w(f"      ra{it} = {zv}; if ({lim}gm < M && gk < K) "
              f"{{ ra{it} = A[{idx if v == 1 else f'({idx}) / {v}u'}]; }} }}")
        for it in range(n_b):            # B: tk x tn, vectors along n
            lim = f"l < {b_vecs}u && " if (it + 1) * nthreads > b_vecs else ""
            idx = "base_b + gk * P.ldb + gn"
            w(f"    {{ let l = tid + {it * nthreads}u; let gk = {kbase} + l / {nv_b}u; "
              f"let gn = n0 + (l % {nv_b}u) * {v}u;")
            w(f"      rb{it} = {zv}; if ({lim}gk < K && gn < N) "
              f"{{ rb{it} = B[{idx if v == 1 else f'({idx}) / {v}u'}]; }} }}")

    def store():
        """Registers -> workgroup tiles (A transposed to [k][m], B as [k][n])."""
        for it in range(n_a):
            guard = (it + 1) * nthreads > a_vecs
            w(f"    {{ let l = tid + {it * nthreads}u;" + (f" if (l < {a_vecs}u) {{" if guard else ""))
            w(f"      let r = l / {kv_a}u; let kk = (l % {kv_a}u) * {v}u;")
            for e in range(v):
                comp = f"ra{it}" if v == 1 else f"ra{it}[{e}]"
                w("      " + store_smem("As", f"(kk + {e}u) * {p.tm}u + r", conv(comp)))
            w("    }" + (" }" if guard else ""))
        for it in range(n_b):
            guard = (it + 1) * nthreads > b_vecs
            w(f"    {{ let l = tid + {it * nthreads}u;" + (f" if (l < {b_vecs}u) {{" if guard else ""))
            w(f"      let kk = l / {nv_b}u; let nn = (l % {nv_b}u) * {v}u;")
            if s4 and v == 4:
                val = f"rb{it}" if A_ == T else f"vec4<{A_}>(rb{it})"
                w(f"      Bs[(kk * {p.tn}u + nn) / 4u] = {val};")
            else:
                for e in range(v):
                    comp = f"rb{it}" if v == 1 else f"rb{it}[{e}]"
                    w("      " + store_smem("Bs", f"kk * {p.tn}u + nn + {e}u", conv(comp)))
            w("    }" + (" }" if guard else ""))

    if p.pf:
        load("0u")
    w(f"  for (var k0: u32 = 0u; k0 < K; k0 = k0 + {p.tk}u) {{")
    if not p.pf:
        load("k0")
    store()
    if p.pf:          # next tile's global loads are in flight while this tile is computed
        w("    workgroupBarrier();")
        load(f"k0 + {p.tk}u")
        b_marker = True
    else:
        b_marker = False
    if not b_marker:
        w("    workgroupBarrier();")
    w(f"    for (var kk: u32 = 0u; kk < {p.tk}u; kk = kk + 1u) {{")
    if s4:
        w(f"      let ao = kk * {p.tm // 4}u + ty;")
        w(f"      let bo = kk * {p.tn // 4}u + tx;")
        for ip in range(p.rm // 4):
            w(f"      let a{ip} = As[ao + {ip * wy}u];")
        for jq in range(p.rn // 4):
            w(f"      let b{jq} = Bs[bo + {jq * wx}u];")
        for i in range(p.rm):
            ip, e = divmod(i, 4)
            w(f"      let s{i} = vec4<{A_}>(a{ip}[{e}]);")
            for jq in range(p.rn // 4):
                w(f"      c{i}_{jq} = fma(s{i}, b{jq}, c{i}_{jq});")
    else:
        sm, sn = p.tm // p.rm, p.tn // p.rn
        w(f"      let ao = kk * {p.tm}u + ty;")
        w(f"      let bo = kk * {p.tn}u + tx;")
        for i in range(p.rm):
            w(f"      let a{i} = As[ao + {i * sm}u];")
        for j in range(p.rn):
            w(f"      let b{j} = Bs[bo + {j * sn}u];")
        for i in range(p.rm):
            for j in range(p.rn):
                w(f"      c{i}_{j} = fma(a{i}, b{j}, c{i}_{j});")
    w("    }")
    w("    workgroupBarrier();")
    w("  }")
    out = (lambda e: e) if A_ == T else (lambda e: f"{T}({e})")
    for i in range(p.rm):
        if s4:
            ip, e = divmod(i, 4)
            w(f"  {{ let gm = m0 + 4u * (ty + {ip * wy}u) + {e}u;")
        else:
            w(f"  {{ let gm = m0 + ty + {i * (p.tm // p.rm)}u;")
        w("    if (gm < M) {")
        w("      let row = base_c + gm * P.ldc;")
        if s4:
            for jq in range(p.rn // 4):
                for e2 in range(4):
                    w(f"      {{ let gn = n0 + 4u * (tx + {jq * wx}u) + {e2}u; "
                      f"if (gn < N) {{ C[row + gn] = {out(f'c{i}_{jq}[{e2}]')}; }} }}")
        else:
            sn = p.tn // p.rn
            for j in range(p.rn):
                w(f"      {{ let gn = n0 + tx + {j * sn}u; if (gn < N) {{ C[row + gn] = {out(f'c{i}_{j}')}; }} }}")
        w("    }")
        w("  }")
    w("}")
    return "\n".join(L) + "\n"


# (tm, tn, tk, rm, rn, vec[, svec[, pf]]): the first is the reference
_SHAPES = (
    (16, 16, 16, 1, 1, 1),
    (32, 32, 16, 2, 2, 1),
    (64, 64, 16, 4, 4, 1),
    (64, 64, 8, 4, 4, 4),
    (64, 64, 16, 4, 4, 4),
    (64, 64, 32, 4, 4, 4),
    (128, 64, 16, 8, 4, 4),
    (64, 128, 16, 4, 8, 4),
    (128, 128, 8, 8, 8, 4),
    (128, 128, 16, 8, 8, 4),
    (64, 64, 16, 4, 4, 2),
    (128, 128, 16, 8, 8, 2),
    (64, 64, 16, 4, 4, 4, 4),
    (128, 64, 16, 8, 4, 4, 4),
    (64, 128, 16, 4, 8, 4, 4),
    (128, 128, 8, 8, 8, 4, 4),
    (128, 128, 16, 8, 8, 4, 4),
    (128, 128, 8, 8, 8, 1, 4),
    (64, 64, 16, 4, 4, 4, 4, True),
    (64, 128, 16, 4, 8, 4, 4, True),
    (128, 128, 8, 8, 8, 4, 4, True),
    (128, 128, 16, 8, 8, 4, 4, True),
    (128, 64, 16, 8, 8, 4, 4, True),      # 128 invocations
    (64, 128, 16, 8, 8, 4, 4, True),
    # > 16 KiB of workgroup memory: offered only where the device allows it
    (128, 128, 32, 8, 8, 4, 4, True),
    (128, 128, 32, 8, 8, 4, 4),
)


def candidates(dtype="f32", *, max_shared_bytes=16384, max_invocations=256, acc=None):
    """Candidates for ``dtype`` that fit the device limits (reference first)."""
    out = []
    for tm, tn, tk, rm, rn, vec, *more in _SHAPES:
        svec, pf = (list(more) + [1, False][len(more):])[:2]
        p = MatmulParams(tm, tn, tk, rm, rn, vec, dtype, acc, svec, pf)
        if p.shared_bytes <= max_shared_bytes and p.invocations <= max_invocations:
            out.append(p)
    return out
