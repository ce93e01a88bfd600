"""Reading records by global index from one or more files (shards) of one split.

A reader keeps, per part (one split of one file), the record count of every chunk row.
``sync`` refreshes it from the file when another connection committed.  Every chunk row
is checked (checksums, lengths, shapes) the first time it is read, by any path, so a
corrupted file gives DatasetError instead of wrong values.  Results are host NumPy
arrays: fixed fields batched along a new leading axis, variable fields as lists.
"""
import bisect

import numpy as np

_CACHE_CHUNKS = 2


class Part:
    """One split of one Store, as a reader sees it."""

    def __init__(self, store, sid):
        self.store = store
        self.sid = sid
        self.version = None
        self.sizes = []            # records per chunk row
        self.starts = [0]          # first record of each chunk, then the total

    def sync(self):
        if self.sid is None:
            return
        version = self.store.data_version()
        if version == self.version:
            return
        since = max(len(self.sizes) - 1, 0)      # the last row may have grown since
        count, sizes = self.store.index(self.sid, since)
        self.sizes = self.sizes[:since] + sizes
        starts = np.concatenate(([0], np.cumsum(self.sizes, dtype=np.int64))).tolist()
        if starts[-1] != count:
            raise self.store.corrupt(f"split table c{self.sid} holds {starts[-1]} records; its "
                                     f"count says {count}")
        self.starts, self.version = starts, version

    def invalidate(self):
        self.version = None

    def clone(self):
        p = Part(self.store.reopen(), self.sid)
        p.sizes, p.starts, p.version = self.sizes, self.starts, self.version
        return p

    def __len__(self):
        return self.starts[-1]


class Reader:
    def __init__(self, parts):
        self.parts = parts
        self.fields = parts[0].store.fields
        self.offsets = [0] * (len(parts) + 1)
        self._cache = {}           # (part, chunk, n) -> decoded chunk, most recent last
        self._checked = set()      # (part, chunk, n) verified
        self._spares = []          # idle worker readers, kept for their warm connections

    def sync(self):
        total = 0
        for j, p in enumerate(self.parts):
            p.sync()
            total += len(p)
            self.offsets[j + 1] = total

    def __len__(self):
        return self.offsets[-1]

    def worker(self):
        """A reader for another thread, on its own connections, with this one's index."""
        r = self._spares.pop() if self._spares else Reader([p.clone() for p in self.parts])
        for mine, theirs in zip(self.parts, r.parts):
            theirs.sizes, theirs.starts, theirs.version = mine.sizes, mine.starts, mine.version
        r.offsets = list(self.offsets)
        r._checked = self._checked
        return r

    def release(self, worker):
        """Take back a worker reader once its thread is done with it."""
        for p in worker.parts:
            p.store.drop_blobs()          # ends its read transaction
        self._spares.append(worker)

    def close(self):
        for r in self._spares:
            r.close()
        for p in self.parts:
            p.store.close()

    def _locate(self, i):
        j = bisect.bisect_right(self.offsets, i) - 1
        p = self.parts[j]
        local = i - self.offsets[j]
        c = bisect.bisect_right(p.starts, local) - 1
        return j, c, local - p.starts[c]

    def _chunk(self, j, c):
        p = self.parts[j]
        key = (j, c, p.sizes[c])
        hit = self._cache.pop(key, None)
        if hit is None:
            n, hit = p.store.chunk(p.sid, c, key not in self._checked)
            if n < p.sizes[c]:
                raise p.store.corrupt(f"chunk {c} has {n} records; its index says {p.sizes[c]}")
            self._checked.add(key)
            if len(self._cache) >= _CACHE_CHUNKS:
                del self._cache[next(iter(self._cache))]
        self._cache[key] = hit
        return hit

    def one(self, i):
        """Record ``i`` as a list of host arrays (one per field)."""
        j, c, local = self._locate(i)
        p = self.parts[j]
        key = (j, c, p.sizes[c])
        hit = self._cache.get(key)
        if hit is None and key not in self._checked:
            hit = self._chunk(j, c)
        if hit is not None:
            return [a[local].copy() for a in hit]
        return p.store.record(p.sid, c, p.sizes[c], local)

    def range(self, start, stop):
        """Records start..stop-1, batched."""
        pieces = []
        i = start
        while i < stop:
            j, c, local = self._locate(i)
            take = min(stop - i, self.parts[j].sizes[c] - local)
            hit = self._chunk(j, c)
            pieces.append([a[local:local + take] for a in hit])
            i += take
        return self._join(pieces)

    def take(self, idx):
        """Records at the (valid, non-negative) indices ``idx``, batched."""
        if len(idx) and idx[-1] - idx[0] == len(idx) - 1 and (np.diff(idx) == 1).all():
            return self.range(int(idx[0]), int(idx[-1]) + 1)
        return self._join([[a[None] if f.fixed else [a] for f, a in zip(self.fields, self.one(i))]
                           for i in idx.tolist()])

    def _join(self, pieces):
        out = []
        for k, f in enumerate(self.fields):
            if f.fixed:
                out.append(np.concatenate([p[k] for p in pieces]) if pieces
                           else np.empty((0,) + f.shape, f.dtype))
            else:
                out.append([np.array(a) for p in pieces for a in p[k]])
        return out
