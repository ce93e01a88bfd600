"""Host (NumPy) kernels of ``ruda.nn``: sdpa, apply_rope (contract: ruda/nn/README.md).

Attention runs by blocks of query rows: each block's scores against the keys it may see
(blocks wholly above the causal diagonal or outside the sliding window are never computed) go
through one BLAS matmul, an in-place exp and a second matmul; K and V are never repeated for
grouped-query attention (the query heads of one kv head are stacked as rows of one matmul).
Scores are not shifted by their row's maximum where a bound shows that exp cannot overflow.
"""
import functools

import numpy as np

from ruda import _dtypes
from ruda.backends import _workers
from ruda.backends.host._jit import jit

_BF16 = _dtypes.bfloat16
_TILE = 1 << 18            # score elements per block: stays in the caches
_THREAD_WORK = 1 << 22     # multiply-adds from which the units go to threads
# Softmax without subtracting the row maximum where every score is bounded: |q.k| <= |q| |k|
# (Cauchy-Schwarz) <= 40 keeps exp(score) and the sums of the weights far from overflow, and
# the row's largest weight at least e^-40, a normal float; the normalization cancels the
# factor exp(max) the subtraction would remove.  Saves two passes over the scores.
_EXP_SAFE = 40.0


def _work_dtype(dt):
    """float32/float64 compute in themselves, bfloat16 in float32; None: not handled."""
    if dt == np.float32 or dt == np.float64:
        return dt
    if _BF16 is not None and dt == _BF16:
        return np.dtype(np.float32)
    return None


def sdpa(q, k, v, mask, is_causal, scale, sliding_window):
    wdt = _work_dtype(q.dtype)
    if wdt is None:
        return NotImplemented
    B, Hq, L, D = q.shape
    _, Hkv, S, Dv = v.shape
    G = Hq // Hkv
    U = B * Hkv                                          # (batch, kv head) units
    if L == 1 and S and mask is None:
        return _decode_row(q, k, v, wdt, scale, sliding_window, U, G)
    q4 = q.reshape(U, G, L, D)
    k3 = k.reshape(U, S, D)
    v3 = v.reshape(U, S, Dv)
    if mask is not None:
        mask = mask if mask.dtype == np.bool_ else np.asarray(mask, dtype=wdt)
        mask = mask.reshape(U, G, L, S)
    out = np.empty((U, G, L, Dv), dtype=wdt)
    args = (q4, k3, v3, mask, out, wdt.type(scale), is_causal, sliding_window)
    parts = _split(U, G * L * S * (D + Dv))
    one_blas = _blas_one_thread() if len(parts) > 1 else None
    if one_blas is None:
        _attend(*args, 0, U)
    else:                                  # NumPy's ufuncs and BLAS calls release the GIL
        with one_blas:
            _workers.run(lambda i: _attend(*args, *parts[i]), len(parts))
    return out.reshape(B, Hq, L, Dv).astype(q.dtype, copy=False)


def _decode_row(q, k, v, wdt, scale, window, U, G):
    """One query row per head (decoding without a mask): every key up to the last is allowed
    (lower-right causal alignment), the window keeps the last ``window``; each kv head's G
    query heads in one matmul, no copy of K or V. Short caches (a few Numba loops' worth) run
    one fused Numba loop instead: NumPy's five calls cost more than the work there."""
    B, Hq, _, D = q.shape
    S, Dv = v.shape[2], v.shape[3]
    lo = max(0, S - window) if window is not None else 0
    if _nb is not None and q.dtype == wdt and k.dtype == wdt and v.dtype == wdt \
            and U * G * (S - lo) * (D + Dv) <= _FUSED_DECODE:
        k3, v3 = k.reshape(U, S, D), v.reshape(U, S, Dv)
        kf, vf = _flat(k3), _flat(v3)
        if kf is not None and vf is not None:
            out = np.empty((U, G, Dv), dtype=wdt)
            _decode_fused(np.ascontiguousarray(q).reshape(U, G, D), k3, kf, v3, vf,
                          float(scale), lo, out)
            return out.reshape(B, Hq, 1, Dv)
    qs = np.asarray(q, dtype=wdt).reshape(U, G, D) * wdt.type(scale)
    kk = np.asarray(k, dtype=wdt).reshape(U, S, D)[:, lo:]
    s = np.matmul(qs, np.swapaxes(kk, 1, 2))             # (U, G, S - lo)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    o = np.matmul(s, np.asarray(v, dtype=wdt).reshape(U, S, Dv)[:, lo:])
    o /= s.sum(axis=-1, keepdims=True)
    return o.reshape(B, Hq, 1, Dv).astype(q.dtype, copy=False)


_FUSED_DECODE = 1 << 20    # multiply-adds up to which one decode row runs as a Numba loop


def _flat(a):
    """The flat view of the C-contiguous array that owns a's memory, where a (U, S, D) has
    contiguous rows (a cache's first S positions are such a view), else None.  Numba compiles
    strided ('A') arrays without vector loops; rows sliced from the owner's flat view are
    contiguous (``_decode_fused`` finds a in it by address)."""
    it = a.itemsize
    if a.strides[2] != it or a.strides[0] % it or a.strides[1] % it or min(a.strides) < 0:
        return None
    r = a
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r.reshape(-1) if r.flags.c_contiguous and r.dtype == a.dtype else None


try:
    import numba as _nb
except ImportError:          # optional: decode rows and apply_rope then go through NumPy
    _nb = None

_decode_fused = _normalize_rows = _mask_after = None
if _nb is not None:
    @jit(cache=True, fastmath={"reassoc", "contract", "nsz", "arcp"})
    def _decode_fused(q, k, kf, v, vf, scale, lo, out):
        """out (U, G, Dv) = softmax(q k[:, lo:]^T * scale) v[:, lo:] per (unit, query head);
        k's rows are read from kf, the flat view of the array holding k (v's from vf)."""
        U, G, D = q.shape
        S, Dv = k.shape[1], v.shape[2]
        it = k.itemsize
        k0, ku, kr = (k.ctypes.data - kf.ctypes.data) // it, k.strides[0] // it, k.strides[1] // it
        v0, vu, vr = (v.ctypes.data - vf.ctypes.data) // it, v.strides[0] // it, v.strides[1] // it
        s = np.empty(S - lo, q.dtype)
        for u in range(U):
            for g in range(G):
                qr = q[u, g]
                m = -np.inf
                for j in range(lo, S):
                    kj = kf[k0 + u * ku + j * kr:][:D]
                    acc = q.dtype.type(0.0)
                    for d in range(D):
                        acc += qr[d] * kj[d]
                    acc *= scale
                    s[j - lo] = acc
                    m = max(m, acc)
                tot = q.dtype.type(0.0)
                for j in range(S - lo):
                    e = np.exp(s[j] - m)
                    s[j] = e
                    tot += e
                o = out[u, g]
                for d in range(Dv):
                    o[d] = 0
                for j in range(S - lo):
                    w = s[j]
                    vj = vf[v0 + u * vu + (lo + j) * vr:][:Dv]
                    for d in range(Dv):
                        o[d] += w * vj[d]
                inv = 1.0 / tot
                for d in range(Dv):
                    o[d] *= inv

    @jit(cache=True, nogil=True, fastmath={"nsz", "arcp"})
    def _normalize_rows(o, out):
        """``_normalize`` of rows (n, Dv + 1) into (n, Dv): one pass without the GIL (NumPy's
        broadcast divide loops in steps of a row, holding it)."""
        n, Dv = out.shape
        for i in range(n):
            d = o[i, Dv]
            r = 1 / d if d != 0 else d
            for j in range(Dv):
                out[i, j] = o[i, j] * r

    @jit(cache=True, nogil=True)
    def _mask_after(s, c):
        """s[g, i, j] = -inf for j >= c + i: the keys after each query row's last (c may be
        negative: rows before the first key, when there are more queries than keys)."""
        G, n, w = s.shape
        for g in range(G):
            for i in range(n):
                for j in range(max(c + i, 0), w):
                    s[g, i, j] = -np.inf


def _blas_one_thread():
    """A context limiting BLAS to one thread (threadpoolctl, where installed), else None.

    Units of attention run on a thread each; a multi-threaded BLAS called from each of them at
    once fights over the cores (twice slower here), so BLAS runs single-threaded meanwhile (a
    process-wide setting, restored on exit). Without threadpoolctl the units run in turn."""
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
            _BLAS.append(ThreadpoolController().select(user_api="blas"))
        except Exception:  # noqa: BLE001 - optional: any failure means no limit, one thread
            _BLAS.append(None)
    return None if _BLAS[0] is None else _BLAS[0].limit(limits=1)


_BLAS = []


def _split(units, work):
    """Unit ranges, one per thread where the work is worth it."""
    n = min(_workers.THREADS, units) if work >= _THREAD_WORK else 1
    step = -(-units // n)
    return [(u, min(units, u + step)) for u in range(0, units, step)]


def _attend(q4, k3, v3, mask, out, scale, causal, window, u0, u1):
    """Attention of units [u0, u1) into out, by blocks of query rows (causal blocks of at most
    ``_SUB`` rows: the masked scores computed past the diagonal are a small block's).  Each
    unit's operands are converted on its worker, not for all units before the threads start;
    V gets a column of ones, so the second matmul also sums each row's weights (the
    denominator).  Few, large NumPy calls: each one hands the GIL to the other workers."""
    _, G, L, D = q4.shape
    S, Dv = k3.shape[1], v3.shape[2]
    wdt = out.dtype
    off = S - L
    rows = max(1, min(L, _TILE // max(1, G * S), _SUB if causal else L))
    buf = _workers.scratch("sdpa scores", G * rows * S, wdt)
    additive = mask is not None and mask.dtype != np.bool_
    for u in range(u0, u1):
        kT = np.asarray(k3[u], dtype=wdt).T
        qs = _workers.scratch("sdpa q", G * L * D, wdt).reshape(G, L, D)
        np.multiply(q4[u], scale, out=qs)
        shift = additive or not _bounded(kT, qs)
        v1 = _workers.scratch("sdpa v1", S * (Dv + 1), wdt).reshape(S, Dv + 1)
        v1[:, :Dv] = v3[u]
        v1[:, Dv] = 1
        for i0 in range(0, L, rows):
            i1 = min(L, i0 + rows)
            n = i1 - i0
            hi = min(S, i1 + off) if causal else S
            lo = max(0, i0 + off - window + 1) if window is not None else 0
            if hi <= lo:
                out[u, :, i0:i1] = 0
                continue
            s2 = buf[:G * n * (hi - lo)].reshape(G * n, hi - lo)   # the G heads' rows: one
            np.matmul(qs[:, i0:i1].reshape(G * n, D), kT[:, lo:hi], out=s2)      # product
            s = s2.reshape(G, n, hi - lo)
            if mask is not None:
                mt = mask[u, :, i0:i1, lo:hi]
                if mt.dtype == np.bool_:
                    np.copyto(s, -np.inf, where=~mt)
                else:
                    s += mt
            _band(s, i0, i1, lo, hi, off, causal, window)
            if shift:
                m = s.max(axis=-1, keepdims=True)
                m[~np.isfinite(m)] = 0               # a row with no key: exp gives all 0
                s -= m
            np.exp(s, out=s)
            _normalize(np.matmul(s2, v1[lo:hi]).reshape(G, n, Dv + 1), out[u, :, i0:i1])


_SUB = 128       # query rows a block of causal attention at most


def _normalize(o, out):
    """out = o[..., :Dv] / o[..., Dv] (the products with V over the weights' sums), 0 in rows
    whose weights are all 0 (no key left to them)."""
    if _normalize_rows is not None and out.flags.c_contiguous:
        _normalize_rows(o.reshape(-1, o.shape[-1]), out.reshape(-1, out.shape[-1]))
        return
    den = o[..., -1:]
    den[den == 0] = 1
    np.divide(o[..., :-1], den, out=out)


def _bounded(kT, qs):
    """Whether every score of the query rows qs (G, L, D) against the keys kT (D, S) is within
    ``_EXP_SAFE`` (False for NaN)."""
    if not kT.shape[1] or not qs.shape[1]:
        return True
    knorm = np.max(np.einsum("dj,dj->j", kT, kT))
    qnorm = np.max(np.einsum("gld,gld->gl", qs, qs))
    return float(np.sqrt(knorm) * np.sqrt(qnorm)) <= _EXP_SAFE


def _band(s, i0, i1, lo, hi, off, causal, window):
    """Sets -inf in scores s (G, i1-i0, hi-lo) where causality or the window forbids; only the
    columns where some row is cut are touched."""
    n = i1 - i0
    if causal and hi - 1 > i0 + off:                 # columns past row i0's last key
        c = i0 + off + 1 - lo                        # column c + j' is after row i' when j' >= i'
        if _mask_after is not None and s.flags.c_contiguous:
            _mask_after(s, c)                        # without the GIL (copyto holds it)
        else:
            c1 = max(c, 0)                           # c < 0: more queries than keys
            np.copyto(s[:, :, c1:], -np.inf, where=_cut(n, hi - lo - c1, c - c1 - 1, True))
    if window is not None and lo <= i1 - 1 + off - window:   # columns before row i1-1's first
        c1 = i1 + off - window                       # key lo + j' is too old for row i' when
        d = i0 + off - window - lo                   # j' - i' <= d
        np.copyto(s[:, :, :c1 - lo], -np.inf, where=_cut(n, c1 - lo, d, False))


@functools.lru_cache(maxsize=64)
def _cut(n, w, d, above):
    """Bool (n, w): ``j - i > d`` when ``above``, else ``j - i <= d`` (cached: the blocks of one
    call repeat a few patterns)."""
    diff = np.arange(w)[None, :] - np.arange(n)[:, None]
    return diff > d if above else diff <= d


def apply_rope(x, cos, sin, interleaved, rotary_dim):
    wdt = _work_dtype(x.dtype)
    if wdt is None:
        return NotImplemented
    h = rotary_dim // 2
    xw = np.asarray(x, dtype=wdt)
    c = np.asarray(cos, dtype=wdt)
    s = np.asarray(sin, dtype=wdt)
    if _rope_rows is not None and not interleaved and xw.ndim >= 2 and xw.size <= 1 << 16:
        # small (decoding): one serial Numba pass instead of a dozen NumPy calls; the same
        # float operations in the same order, so the same result
        out = np.empty(xw.shape, dtype=wdt)
        _rope_rows(xw.reshape(-1, *xw.shape[-2:]), c, s, h, rotary_dim,
                   out.reshape(-1, *xw.shape[-2:]))
        return out.astype(x.dtype, copy=False)
    out = np.array(xw, dtype=wdt, copy=True)
    if interleaved:
        a, b = xw[..., 0:rotary_dim:2], xw[..., 1:rotary_dim:2]
        out[..., 0:rotary_dim:2] = a * c - b * s
        out[..., 1:rotary_dim:2] = b * c + a * s
    else:
        a, b = xw[..., :h], xw[..., h:rotary_dim]
        out[..., :h] = a * c - b * s
        out[..., h:rotary_dim] = b * c + a * s
    return out.astype(x.dtype, copy=False)


_rope_rows = _rope_kv = None
if _nb is not None:
    @jit(inline="always")
    def _rotate(a, b, c, s):
        """A half-split rope pair rotated: (a c - b s, b c + a s), each product rounded (no
        fastmath): ``_rope_rows`` and ``_rope_kv`` give the same values."""
        return a * c - b * s, b * c + a * s

    @jit(cache=True)
    def _rope_rows(x, c, s, h, rd, out):
        """out = x with its first rd features rotated in halves (a c - b s, b c + a s), x (N,
        T, D); no fastmath: each product rounded as NumPy's ufuncs round it."""
        N, T, D = x.shape
        for n in range(N):
            for t in range(T):
                for j in range(h):
                    out[n, t, j], out[n, t, h + j] = _rotate(x[n, t, j], x[n, t, h + j],
                                                             c[t, j], s[t, j])
                for j in range(rd, D):
                    out[n, t, j] = x[n, t, j]

    @jit(cache=True)
    def _rope_kv(qkv, c, s, p, q, kc, vc, q_heads):
        """``rope_kv_put``'s pass; no fastmath, as ``_rope_rows``."""
        B, H, _, D = kc.shape
        h = D // 2
        for b in range(B):
            for head in range(q_heads + 2 * H):
                o = head * D
                if head >= q_heads + H:                     # v: copied
                    for j in range(D):
                        vc[b, head - q_heads - H, p, j] = qkv[b, o + j]
                    continue
                for j in range(h):
                    r1, r2 = _rotate(qkv[b, o + j], qkv[b, o + h + j], c[0, j], s[0, j])
                    if head < q_heads:
                        q[b, head, 0, j], q[b, head, 0, h + j] = r1, r2
                    else:
                        kc[b, head - q_heads, p, j], kc[b, head - q_heads, p, h + j] = r1, r2


def rope_kv_put(qkv, cos, sin, pos, kc, vc, q_heads):
    """qkv (B, (q_heads + 2 H) * D) float32/float64 of the caches' dtype; cos, sin (1, D / 2);
    pos int32 (1,); kc, vc (B, H, T, D): q and k rotated as ``apply_rope`` rotates them (the
    same float operations: the same values), k and v written at row pos, in one Numba pass.
    Returns q (B, q_heads, 1, D)."""
    B, H, T, D = kc.shape
    if _rope_kv is None or qkv.dtype not in (np.float32, np.float64) or kc.dtype != qkv.dtype \
            or vc.dtype != qkv.dtype or vc.shape != kc.shape or D % 2 or qkv.ndim != 2 \
            or qkv.shape != (B, (q_heads + 2 * H) * D) or cos.shape != (1, D // 2) \
            or sin.shape != cos.shape or pos.dtype != np.int32 or pos.shape != (1,):
        return NotImplemented
    p = int(pos[0])
    if not 0 <= p < T:               # composed, where the write raises
        return NotImplemented
    c = np.asarray(cos, dtype=qkv.dtype)
    s = np.asarray(sin, dtype=qkv.dtype)
    q = np.empty((B, q_heads, 1, D), dtype=qkv.dtype)
    _rope_kv(qkv, c, s, p, q, kc, vc, q_heads)
    return q
