"""Scaled dot-product attention on cuda (``sdpa`` of ``ruda.backends.NN_KERNELS``).

Two paths, both one online-softmax pass over the keys (no (L, S) score matrix), float32 math:

* bfloat16 and float16 on tensor cores (``nn_cuda.attention_mma``: mma.sync m16n8k16,
  ldmatrix, K/V tiles loaded with cp.async during the other's products), where D == Dv is a
  multiple of 16 and rows start on 16 bytes;
* otherwise tiled on CUDA cores (``nn_cuda.attention``): a block per 32 or 64 query rows of one
  (batch, head), K/V tiles staged through shared memory.
Causal and sliding-window tiles outside the band are skipped.
* decode (``nn_cuda.decode``), for few queries against many keys, and for one query against
  any number: the keys are split over blocks (enough blocks to fill the GPU), then a merge
  kernel combines the partial softmaxes; with 16-byte aligned rows (``decode_vec``) a block
  reads K and V in 16-byte vectors once for all the query heads of its kv head, and up to
  ``DECODE_ONE_BLOCK_S`` keys that block takes them all and writes the output (one launch).

float32, bfloat16 and float16, head dims up to 128; GQA reads kv head ``h // (Hq // Hkv)`` in
place; masks are read through their broadcast strides (0 on broadcast axes).  A query whose keys are
all masked out gets zeros.  Other cases return ``NotImplemented``.
"""
import math

import numpy as np

from ruda.backends.cuda._nn_launch import HALVES, _cp, arg, contiguous, dname, empty, function, sms
from ruda.runtime.kernels import nn_cuda_attention as gen

MAX_HEAD_DIM = 128
# tensor-core kernel tiles: (query rows a block, row tiles of 16 a warp, keys a tile, blocks a
# multiprocessor to bound registers for, 0: the compiler's choice).  One row tile a warp needs
# ~170 registers at D = 128, so three 4-warp blocks share a multiprocessor. Two a warp (each K/V
# fragment serves 32 rows) need 247 with 32-key tiles, two blocks a multiprocessor: ~14% slower.
MMA_TILES = (64, 1, 64, 0)
DECODE_MAX_L = 16       # at most this many queries and ...
DECODE_MIN_S = 256      # ... at least this many keys: split-key decode
DECODE_MIN_CHUNK = 64   # keys per decode block, at least
DECODE_BLOCKS_PER_SM = 4  # split the keys until there are this many blocks a multiprocessor
DECODE_MAX_GROUP = 8    # query heads per kv head up to which one block serves the group
# up to this many keys one 16-byte-load block takes them all (no merge launch); beyond, split
# blocks and the merge are faster (one block a kv head leaves most multiprocessors idle)
DECODE_ONE_BLOCK_S = 128


def _row_strides(a):
    """(batch, head, row) strides in elements, with the last axis contiguous (else a copy)."""
    if a.strides[-1] != a.dtype.itemsize and a.shape[-1] > 1:
        a = contiguous(a)
    return a, [np.int64(s // a.dtype.itemsize) for s in a.strides[:3]]


def _mask_arg(mask, shape):
    """(kind, mask dtype name, argument, strides) of a mask broadcast to ``shape``; None: unsupported."""
    cp = _cp()
    if mask is None:
        return None, None, np.uint64(0), [np.int64(0)] * 4
    if mask.dtype == np.bool_:
        kind, md, m = "bool", None, mask
    else:
        md = dname(mask)
        if md is None:
            return None
        kind, m = "add", arg(mask)
    m = cp.broadcast_to(m, shape)
    return kind, md, m, [np.int64(s // m.dtype.itemsize) for s in m.strides]


def sdpa(q, k, v, mask, is_causal, scale, sliding_window):
    dt = dname(q)
    if dt not in ("float32", "bfloat16", "float16") or k.dtype != q.dtype or v.dtype != q.dtype:
        return NotImplemented
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        return NotImplemented
    B, Hq, L, D = q.shape
    Hkv, S, Dv = k.shape[1], k.shape[2], v.shape[3]
    if not 0 < D <= MAX_HEAD_DIM or Dv > MAX_HEAD_DIM or Hkv == 0 or Hq % Hkv:
        return NotImplemented
    window = 0 if sliding_window is None else int(sliding_window)
    if window < 0 or max(B * Hq * L, S) >= 2**31:
        return NotImplemented
    if B > 65535 or Hq * min(L, DECODE_MAX_L) > 65535:
        return NotImplemented     # grid y / z limits
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    with q.device:
        margs = _mask_arg(mask, (B, Hq, L, S))
        if margs is None:
            return NotImplemented
        mkind, md, m, ms = margs
        o = empty((B, Hq, L, Dv), q.dtype)
        if o.size == 0:
            return o
        if S == 0:                  # no keys: like a fully masked query, zeros
            arg(o).fill(0)
            return o
        q, qs = _row_strides(q)
        k, ks = _row_strides(k)
        v, vs = _row_strides(v)
        os_ = [np.int64(s // o.dtype.itemsize) for s in o.strides[:3]]
        args = (arg(q), arg(k), arg(v), m, arg(o), np.int32(Hq), np.int32(Hkv), np.int32(L), np.int32(S),
                *qs, *ks, *vs, *ms, *os_, np.float32(scale * math.log2(math.e)), np.int32(bool(is_causal)),
                np.int32(window))
        if L <= DECODE_MAX_L and (S >= DECODE_MIN_S or L == 1):
            _decode(dt, D, Dv, mkind, md, args, B, Hq, Hkv, L, S, o, os_,
                    _aligned(16 // q.dtype.itemsize, q, qs, k, ks, v, vs))
        elif dt in HALVES and D == Dv and D % 16 == 0 and _aligned(8, q, qs, k, ks, v, vs):
            bm, mi, bn, minb = MMA_TILES
            fn = function(("attention_mma", dt, D, mkind, md, bm, mi, bn, minb),
                          lambda: gen.attention_mma(D, mkind, md, bm, mi, bn, minb, dt), "ruda_attention_mma")
            smem = gen.attention_mma_smem(D, bm, bn)
            _allow_shared(fn, smem)
            fn((-(-L // bm), Hq, B), (bm // mi * 2,), args, shared_mem=smem)
        else:
            bm = 64 if max(D, Dv) <= 64 else 32
            fn = function(("attention", dt, D, Dv, mkind, md, bm), lambda: gen.attention(dt, D, Dv, mkind, md, bm, 16),
                          "ruda_attention")
            fn((-(-L // bm), Hq, B), (bm,), args)
        return o


def _allow_shared(fn, nbytes):
    """Lets ``fn`` use ``nbytes`` of dynamic shared memory (over 48 KiB needs the opt-in)."""
    if nbytes > 48 * 1024 and _SHARED.get(fn.ptr, 0) < nbytes:
        _cp().cuda.driver.funcSetAttribute(fn.ptr, 8, nbytes)   # MAX_DYNAMIC_SHARED_SIZE_BYTES
        _SHARED[fn.ptr] = nbytes


_SHARED = {}


def _aligned(vec, *pairs):
    """Every row of these (array, strides in elements) pairs starts on 16 bytes (``vec``
    elements)."""
    for a, st in zip(pairs[::2], pairs[1::2]):
        if a.data.ptr & 15 or any(int(x) % vec for x in st):
            return False
    return True


def _decode(dt, D, Dv, mkind, md, args, B, Hq, Hkv, L, S, o, os_, vec_ok):
    cp = _cp()
    rows = B * Hq * L
    group = Hq // Hkv
    per = 16 // o.dtype.itemsize                   # elements in a 16-byte load
    vec = (vec_ok and D == Dv and D % per == 0 and D // per in (1, 2, 4, 8, 16, 32)
           and group <= DECODE_MAX_GROUP)
    blocks = B * Hkv * L if vec else rows
    nsplit = max(1, min(-(-DECODE_BLOCKS_PER_SM * sms() // blocks), -(-S // DECODE_MIN_CHUNK)))
    if vec and S <= DECODE_ONE_BLOCK_S:
        nsplit = 1
    chunk = -(-S // nsplit)
    nsplit = -(-S // chunk)
    if vec:
        fn = function(("decode_vec", dt, D, group, mkind, md),
                      lambda: gen.decode_vec(dt, D, group, mkind, md), "ruda_decode_vec")
        if nsplit == 1:
            fn((1, Hkv * L, B), (256,), (*args, args[4], np.int32(chunk)))
            return
    part = cp.empty((rows, nsplit, Dv + 2), np.float32)
    key = ("decode", dt, D, Dv, mkind, md)
    make = lambda: gen.decode(dt, D, Dv, mkind, md)   # noqa: E731
    merge = function(key + ("merge",), make, "ruda_decode_merge")
    if vec:
        fn((nsplit, Hkv * L, B), (256,), (*args, part, np.int32(chunk)))
    else:
        fn = function(key, make, "ruda_decode")
        fn((nsplit, Hq * L, B), (128,), (*args, part, np.int32(chunk)))
    merge((rows,), (128,), (part, arg(o), np.int32(nsplit), np.int32(L), np.int32(Hq), *os_))
