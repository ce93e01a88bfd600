"""Host kernel of ``ruda.nn.top_k`` (contract: ruda/nn/README.md): the k largest of each row,
largest first, ties by lower index, NaN counted as the largest (as torch.topk).

k up to 256 (sampling's k): one pass per row keeping the k best in a heap (Numba, rows in
parallel). Without Numba, long rows: a threshold from an evenly spaced sample of each row (its
k-th largest is at most the row's, so the row's top k and all their ties reach it), the entries
at or above it collected, and a sort of those few.  Otherwise argpartition, then a sort. These
two paths rank floats holding NaN by an integer key (``_ordered``), in which NaN is largest.
"""
import numpy as np

from ruda import _dtypes
from ruda.backends.host._jit import jit, parallel_kernel

try:
    import numba as _nb
except ImportError:          # optional: the candidates are then collected by NumPy
    _nb = None

_BF16 = _dtypes.bfloat16
_SAMPLE = 4096
_HEAP_K = 256      # a heap of up to this many entries per row (Numba)
_CHUNK = 32        # entries of a row tested against the heap's root at once

if _nb is not None:
    @jit(inline="always")
    def _worse(va, ia, vb, ib):
        """(va, ia) ranks below (vb, ib): a smaller value, NaN above everything, and among
        equal values the higher index."""
        an, bn = va != va, vb != vb
        if an or bn:
            return ib < ia if an and bn else bn
        if va != vb:
            return va < vb
        return ia > ib

    @jit(inline="always")
    def _sift(hv, hi, p, m):
        """Restore the heap (worst at the root) below position p, of size m."""
        while True:
            c = 2 * p + 1
            if c >= m:
                return
            if c + 1 < m and _worse(hv[c + 1], hi[c + 1], hv[c], hi[c]):
                c += 1
            if not _worse(hv[c], hi[c], hv[p], hi[p]):
                return
            hv[p], hv[c] = hv[c], hv[p]
            hi[p], hi[c] = hi[c], hi[p]
            p = c

    @parallel_kernel(cache=True)
    def _heap_top_k(key, k, out):
        """Per row, one pass keeping the k best entries seen in a heap whose root is the worst
        of them: an entry replaces the root only if it ranks above it (most entries of a long
        row are one comparison), then the heap is emptied worst first into out from the end."""
        rows, n = key.shape
        for r in _nb.prange(rows):
            row = key[r]
            hv = row[:k].copy()
            hi = np.arange(k)
            for p in range(k // 2 - 1, -1, -1):
                _sift(hv, hi, p, k)
            j = k
            while j < n:
                # an entry enters only if it is NaN or above the root's value (the root's index
                # is lower, so a tie ranks below it): a chunk holding none is one vector test
                e = min(n, j + _CHUNK)
                t = hv[0]
                hit = False
                for u in range(j, e):
                    v = row[u]
                    hit |= (v > t) | (v != v)
                if hit:
                    for u in range(j, e):
                        v = row[u]
                        if _worse(hv[0], hi[0], v, u):
                            hv[0], hi[0] = v, u
                            _sift(hv, hi, 0, k)
                j = e
            for m in range(k, 0, -1):
                out[r, m - 1] = hi[0]
                hv[0], hi[0] = hv[m - 1], hi[m - 1]
                _sift(hv, hi, 0, m - 1)


def top_k(x, k):
    if x.dtype.kind not in "iuf" and not (_BF16 is not None and x.dtype == _BF16):
        return NotImplemented
    rows, n = x.shape
    # half types compared as float32 (exact; Numba has no float16 arithmetic)
    key = x.astype(np.float32) if x.dtype == _BF16 or x.dtype == np.float16 else x
    if _nb is not None and 0 < k <= _HEAP_K and k < n:
        idx = np.empty((rows, k), dtype=np.int64)
        _heap_top_k(np.ascontiguousarray(key), k, idx)
    else:
        if key.dtype.kind == "f" and np.isnan(key).any():
            key = _ordered(key)
        if k < n and n >= _SAMPLE * 4 and k <= _SAMPLE // 4:
            idx = _candidates(key, k)
        else:
            idx = _top_k_rows(key, k)
    return np.take_along_axis(x, idx, axis=1), idx.astype(np.int64, copy=False)


def _ordered(key):
    """An integer key of float32/float64 key in the same order, NaN above +inf (every NaN
    equal: ties by index, as equal values) and -0.0 equal to 0.0: the float's bits, those of a
    negative float with all but the sign bit flipped (so that a larger magnitude is smaller)."""
    key = np.where(np.isnan(key), key.dtype.type(np.nan), key + key.dtype.type(0))  # -0 + 0 = +0
    i = key.view(np.int32 if key.dtype == np.float32 else np.int64)
    return i ^ ((i >> (8 * i.itemsize - 1)) & np.iinfo(i.dtype).max)


def _top_k_rows(key, k):
    """Indices of the k largest of each row of key (no NaN), largest first, ties by lower index."""
    rows, n = key.shape
    if k == 0:
        idx = np.empty((rows, 0), dtype=np.int64)
    elif k < n:
        # argpartition finds k candidates whose smallest is the k-th largest value; where that
        # value has more ties in the row than among the candidates, the row is redone exactly
        # (the lowest-indexed ties kept).
        idx = np.argpartition(key, n - k, axis=1)[:, n - k:]
        cand = np.take_along_axis(key, idx, axis=1)
        kth = cand.min(axis=1, keepdims=True)
        extra = (key == kth).sum(axis=1) != (cand == kth).sum(axis=1)
        for r in np.flatnonzero(extra):
            above = np.flatnonzero(key[r] > kth[r, 0])
            ties = np.flatnonzero(key[r] == kth[r, 0])[:k - above.size]
            idx[r] = np.concatenate((above, ties))
    else:
        idx = np.broadcast_to(np.arange(n), (rows, n))
    kv = np.take_along_axis(key, idx, axis=1)
    order = np.lexsort((idx, _neg(kv)), axis=-1)     # value descending, then index ascending
    return np.take_along_axis(idx, order, axis=1)


def _candidates(key, k):
    """Long rows (key without NaN): the entries at or above the sample's threshold, collected
    flat."""
    rows, n = key.shape
    sample = key[:, ::n // _SAMPLE]
    t = np.partition(sample, sample.shape[1] - k, axis=1)[:, sample.shape[1] - k]
    r, j = np.divmod(np.flatnonzero(key >= t[:, None]), n)       # flat: faster than 2-D
    counts = np.bincount(r, minlength=rows)
    width = int(counts.max())
    pos = np.arange(r.size) - np.repeat(np.cumsum(counts) - counts, counts)
    idx = np.full((rows, width), n, dtype=np.int64)
    idx[r, pos] = j
    low = -np.inf if key.dtype.kind == "f" else np.iinfo(key.dtype).min
    vals = np.full((rows, width), low, dtype=key.dtype)
    vals[r, pos] = key[r, j]
    # candidates are in index order: a stable sort on the value keeps ties by lower index
    order = np.argsort(_neg(vals), axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(idx, order, axis=1)


def _neg(a):
    """A key whose ascending order is a's descending order (integers: ~a, no overflow)."""
    return ~a if a.dtype.kind in "iu" else -a
