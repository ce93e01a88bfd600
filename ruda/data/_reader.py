"""Reading records by global index from one or more files (shards) of one split.

A reader keeps, per part (one split of one file), the record count of every chunk row.
``sync`` refreshes it from the file when another connection committed.  Every chunk row
is checked (checksums, lengths, shapes) the first time it is read, by any path, so a
corrupted file gives DatasetError instead of wrong values.  Results are host NumPy
arrays: fixed fields batched along a new leading axis, variable fields as lists.

Scattered indices (``gather``) are grouped by chunk: a chunk holding many of them is read
whole once and its records copied out with NumPy ``take``; a chunk holding a few, already
verified, is read record by record through blob handles, which then costs less.
"""
import bisect
import mmap
import os
import threading

import numpy as np

_CACHE_CHUNKS = 2
READERS = min(4, os.cpu_count() or 1)    # threads that read the chunks of a window
# Costs (microseconds) that choose between reading a chunk row whole and record by record:
# a whole row costs about ROW_US plus its bytes at ROW_BYTES_PER_US; one record's field
# through a blob handle about FIELD_US.
ROW_US, ROW_BYTES_PER_US, FIELD_US = 30.0, 5000.0, 8.0
MAX_LOOKUP = 1 << 27       # most records for a table of each record's chunk (4 bytes each)


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


class Room:
    """A window buffer: an array per fixed field, reused by windows and epochs (fresh memory
    costs a page fault per page on first touch, about as much as filling it), and the chunk
    rows it holds whole: ``held[(part, chunk, records)]`` = the row's first buffer index."""

    def __init__(self):
        self.arrays = None
        self.held = {}

    def fit(self, fields, m, spare=0):
        """The arrays, for at least ``m`` records; if too small, new ones holding nothing,
        for ``m + spare`` records."""
        a = self.arrays
        if a is None or a and len(a[0]) < m:
            self.arrays, self.held = None, {}       # free the old ones first
            self.arrays = [_empty((m + spare,) + f.shape, f.dtype) for f in fields if f.fixed]
        return self.arrays


def _empty(shape, dtype):
    """An uninitialized array in private anonymous memory of 4 KiB pages where the OS allows
    (Linux): a window buffer is filled once and then reused, and a fresh transparent huge
    page costs several times more to fill than 4 KiB ones on virtual machines whose host
    backs the guest's free memory lazily."""
    count = int(np.prod(shape))
    if not hasattr(mmap, "MADV_NOHUGEPAGE") or count * np.dtype(dtype).itemsize < 1 << 21:
        return np.empty(shape, dtype)
    m = mmap.mmap(-1, count * np.dtype(dtype).itemsize,
                  flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(m, dtype, count).reshape(shape)


class Reader:
    def __init__(self, parts):
        self.parts = parts
        self.fields = parts[0].store.fields
        self.offsets = [0] * (len(parts) + 1)
        self._cache = {}           # (part, chunk, n) -> decoded chunk, most recent last
        self._checked = set()      # (part, chunk, n) verified
        self._spares = []          # idle worker readers, kept for their warm connections
        self._table = None         # (parts' starts lists, first record of every chunk, where)
        self._rooms = []           # idle window buffers, shared with the workers (see room)
        self.closed = False

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
        r._rooms = self._rooms
        return r

    def release(self, worker):
        """Take back a worker reader once its thread is done with it (closed, if this reader
        was closed meanwhile)."""
        if self.closed:
            worker.close()
            return
        for p in worker.parts:
            p.store.drop_blobs()          # ends its read transaction
        self._spares.append(worker)

    def close(self):
        self.closed = True
        self._rooms.clear()
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
        return self.pick(*self.gather(np.asarray(idx, np.int64)))

    def record_bytes(self):
        """Mean stored bytes per record (fixed fields exactly; variable ones as stored)."""
        fixed = sum(f.item_bytes for f in self.fields if f.fixed)
        if all(f.fixed for f in self.fields) or not len(self):
            return max(fixed, 1)
        stored = sum(p.store.stored_bytes(p.sid) for p in self.parts if p.sid is not None)
        return max(stored / len(self), 1)

    def _chunks(self):
        """(first global record of every chunk then the total, [(part, chunk)]), for the
        index as of the last sync; rebuilt only when a part's index changed."""
        t = self._table
        if t is None or len(t[0]) != len(self.parts) or \
                any(a is not p.starts for a, p in zip(t[0], self.parts)):
            firsts, where = [], []
            for j, p in enumerate(self.parts):
                firsts.append(np.asarray(p.starts[:-1], np.int64) + self.offsets[j])
                where += [(j, c) for c in range(len(p.sizes))]
            firsts.append(np.array([self.offsets[-1]], np.int64))
            t = self._table = [[p.starts for p in self.parts], np.concatenate(firsts), where,
                               None]
        return t[1], t[2]

    def _chunk_of(self, idx, firsts, most):
        """The chunk (index into ``firsts``) of each record of ``idx``: looked up in a table
        of every record's chunk (4 bytes a record, kept with the index) where there are at
        most ``most`` records (and MAX_LOOKUP), else searched."""
        if len(self) > min(most, MAX_LOOKUP):
            return np.searchsorted(firsts, idx, "right") - 1
        t = self._table
        if t[3] is None:
            t[3] = np.repeat(np.arange(len(firsts) - 1, dtype=np.int32), np.diff(firsts))
        return t[3][idx]

    def room(self):
        """A window buffer (see Room), taken from the idle ones that this reader and its
        workers share (give it back with ``unroom``).  The dataset holds them until it is
        closed."""
        return self._rooms.pop() if self._rooms else Room()

    def unroom(self, room):
        self._rooms.append(room)

    def window(self, idx, room, limit):
        """(buffers, rows) as ``gather`` gives, in ``room``: where the chunk rows that ``idx``
        touches hold at most ``limit`` records in all, and at most twice ``len(idx)`` (and
        every field is fixed), each is held whole, and rows that the room already holds from
        an earlier window or epoch are not read again; otherwise ``gather`` into the room."""
        got = self._resident(idx, room, limit)
        if got is None:
            room.held = {}
            got = self.gather(idx, room.fit(self.fields, len(idx)))
        return got

    def _resident(self, idx, room, limit):
        if not len(idx) or not all(f.fixed for f in self.fields):
            return None
        firsts, where = self._chunks()
        g = self._chunk_of(idx, firsts, limit)         # a table where all rows may fit
        touched = np.flatnonzero(np.bincount(g, minlength=len(firsts) - 1))
        sizes = firsts[touched + 1] - firsts[touched]
        ends = np.cumsum(sizes)
        if ends[-1] > min(limit, 2 * len(idx)):       # whole rows: at most twice the records
            return None
        starts = ends - sizes
        m = int(ends[-1])          # room to spare for rows appended later, within the limit
        arrays = room.fit(self.fields, m, min(m // 8, limit - m))
        held, keys, runs, dense = room.held, [], [], []
        for t, s, e in zip(touched.tolist(), starts.tolist(), ends.tolist()):
            j, c = where[t]
            keys.append((j, c, self.parts[j].sizes[c]))
            if held.get(keys[-1]) != s:
                runs.append((s, e, None))
                dense.append((j, c))
        # a row read into place keeps its slot; others are dropped until read (an error
        # leaves no slot claimed that was not filled)
        room.held = {k: s for k, s in zip(keys, starts.tolist()) if held.get(k) == s}
        self._copy_out(runs, dense, arrays)
        room.held = dict(zip(keys, starts.tolist()))
        if len(touched) == len(firsts) - 1:      # every row, in file order: records in place
            return arrays, idx
        shift = np.zeros(len(firsts) - 1, np.int64)
        shift[touched] = starts - firsts[touched]
        return arrays, idx + shift[g]

    def gather(self, idx, room=None):
        """Records at ``idx`` (any order, repeats allowed) read chunk by chunk, grouped by
        chunk so that each chunk's records are written in one run, into buffers: ``room``'s
        arrays (see ``room``) or new ones for fixed fields, new lists for variable ones.
        Returns (buffers, rows) where row ``rows[i]`` holds record ``idx[i]``."""
        firsts, where = self._chunks()
        g = np.searchsorted(firsts, idx, "right") - 1
        local = idx - firsts[g]
        order = np.argsort(g, kind="stable")
        rows = np.empty(len(idx), np.int64)
        rows[order] = np.arange(len(idx))
        m = len(idx)
        fixed = iter(room or self.empty(m))
        out = [next(fixed) if f.fixed else [None] * m for f in self.fields]
        row_bytes = self.record_bytes()
        runs, dense, start = [], [], 0
        for loc in np.split(local[order], np.flatnonzero(np.diff(g[order])) + 1) \
                if len(idx) else ():
            j, c = where[int(g[order[start]])]
            p, stop = self.parts[j], start + len(loc)
            if (j, c, p.sizes[c]) in self._checked and len(loc) * len(self.fields) * FIELD_US < \
                    ROW_US + p.sizes[c] * row_bytes / ROW_BYTES_PER_US:
                for i, lo in enumerate(loc.tolist(), start):
                    for k, a in enumerate(p.store.record(p.sid, c, p.sizes[c], lo)):
                        out[k][i] = a
            else:
                runs.append((start, stop, loc))
                dense.append((j, c))
            start = stop
        self._copy_out(runs, dense, out)
        return out, rows

    def _copy_out(self, runs, keys, out):
        """Read the chunks ``keys`` whole and copy records ``runs[i]`` = (start, stop, loc)
        of chunk ``keys[i]`` to ``out[start:stop]``.  READERS threads share the chunks, each
        on its own connections (this one, then workers): blob copies, checksums and NumPy
        copies all run with the GIL released."""
        def work(reader, share):
            for (start, stop, loc), (j, c) in share:
                if failed:
                    return
                for k, (f, a) in enumerate(zip(self.fields, reader._chunk(j, c))):
                    if loc is None:                     # the whole row, in order
                        out[k][start:stop] = a[:stop - start]
                    elif f.fixed:
                        np.take(a, loc, axis=0, out=out[k][start:stop], mode="clip")
                    else:
                        out[k][start:stop] = [np.array(a[lo]) for lo in loc.tolist()]

        def helper(reader, share):
            try:
                work(reader, share)
            except BaseException as e:  # re-raised by the calling thread
                failed.append(e)

        failed, jobs = [], list(zip(runs, keys))
        count = min(READERS, max(1, len(jobs) // 8))    # a thread for a few chunks costs more
        helpers = [self.worker() for _ in range(1, count)]
        threads = [threading.Thread(target=helper, args=(r, jobs[t::count]), daemon=True,
                                    name="ruda.data reader") for t, r in enumerate(helpers, 1)]
        try:
            for t in threads:
                t.start()
            work(self, jobs[::count])
        except BaseException as e:
            failed.append(e)
        finally:
            for t in threads:
                if t.ident is not None:         # started
                    t.join()
            for r in helpers:
                self.release(r)
        if failed:
            raise failed[0]

    def pick(self, buffers, rows, out=None):
        """The records at ``rows`` (valid indices) of ``buffers``, as a new batch (fixed
        fields into the arrays ``out`` where given, from ``empty``; "clip" since "raise"
        would copy through a temporary)."""
        out = iter(out or ())
        return [np.take(a, rows, axis=0, out=next(out, None), mode="clip") if f.fixed else
                [a[r] for r in rows.tolist()] for f, a in zip(self.fields, buffers)]

    def empty(self, m):
        """Uninitialized arrays for ``m`` records of each fixed field."""
        return [np.empty((m,) + f.shape, f.dtype) for f in self.fields if f.fixed]

    def _join(self, pieces):
        out = []
        for k, f in enumerate(self.fields):
            if f.fixed:
                out.append(np.concatenate([p[k] for p in pieces]) if pieces
                           else np.empty((0,) + f.shape, f.dtype))
            else:
                out.append([np.array(a) for p in pieces for a in p[k]])
        return out
