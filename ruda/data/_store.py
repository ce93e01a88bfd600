"""One dataset file: an SQLite database of chunk rows, one table per split.

Layout (format "ruda.data", version 1; ``PRAGMA application_id`` = 'ruda'):

* ``meta(key, value)``: format, version, schema JSON, chunk_records, check.
* ``splits(id, name, count)``: one row per named split.
* ``c<id>(chunk, n, bytes, crc, f0, [s1, f1, ...])``: chunk rows of split ``id``.  A row
  holds ``n`` consecutive records; ``f<k>`` is field k's raw little-endian bytes for all
  of them, ``s<k>`` (variable shapes only) their int64 shapes, ``crc`` the CRC-32 of
  every blob column (uint32 each).  No pickle: reading a file cannot run code.

Rows are written whole in one transaction per call (WAL journal, ``synchronous=NORMAL``):
a call that returned survives a crash of the process (kill -9) but not necessarily an
OS crash or power loss.  Small trailing rows are merged on append so that record-at-a-time
writers still get chunks of useful size.
"""
import os
import sqlite3
import sys
import urllib.request
import zlib
from contextlib import contextmanager

import numpy as np

from ruda.data import _schema
from ruda.data._schema import DatasetError
from ruda.runtime.checksum import crc32

FORMAT = "ruda.data"
VERSION = 1
APP_ID = 0x72756461                 # 'ruda'
CHUNK_BYTES = 1 << 20               # target size of a chunk row
MERGE_BYTES = 1 << 16               # trailing rows smaller than this grow on append
MAX_CHUNK_RECORDS = 1 << 16
PAGE_SIZE = 1 << 16
MAX_BLOBS = 1 << 13                 # open blob handles kept per connection

if sys.byteorder != "little":  # pragma: no cover
    raise ImportError("ruda.data stores little-endian bytes and needs a little-endian host")


@contextmanager
def guard(path):
    """Turn SQLite errors into DatasetError naming the file."""
    try:
        yield
    except sqlite3.ProgrammingError as e:   # misuse: a closed dataset (as a closed file's
        if "closed" in str(e):              # ValueError), or another thread
            raise closed_error(path) from None
        if "thread" in str(e):
            raise wrong_thread("ruda.data.Dataset", path) from None
        raise
    except sqlite3.DataError as e:          # a value over SQLite's length limit (write checks
        raise ValueError(f"ruda.data: {path}: a value is too big for SQLite ({e}; see "
                         f"SQLITE_LIMIT_LENGTH); nothing was written") from None   # it first)
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):
            raise DatasetError(f"ruda.data: {path}: the file is locked by another writer ({e})") \
                from None
        raise DatasetError(f"ruda.data: {path}: cannot read the file ({e}); it is not a ruda "
                           f"dataset, or it is corrupted or truncated") from None
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise DatasetError(f"ruda.data: {path}: the file is not a ruda dataset, or it is "
                           f"corrupted or truncated ({e})") from None


def closed_error(path):
    return ValueError(f"ruda.data: {path}: the dataset is closed")


def wrong_thread(fn, path):
    return RuntimeError(f"{fn}: {path}: the dataset is used in a thread other than the one that "
                        f"opened it; open it (ruda.data.Dataset.open) in the thread that uses it")


def _connect(path, writable, threads=False):
    mode = "rw" if os.access(path, os.W_OK) else "ro"
    if not writable and _read_only_folder(path):
        mode = "ro&immutable=1"
    uri = f"file:{urllib.request.pathname2url(os.path.abspath(path))}?mode={mode}"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30,
                           check_same_thread=not threads)
    conn.execute("PRAGMA mmap_size=1099511627776")   # SQLite caps it at its compiled maximum
    if not writable:
        conn.execute("PRAGMA query_only=1")
    return conn


def _read_only_folder(path):
    """Whether ``path`` lies in a folder where SQLite cannot make the -shm file that reading
    a WAL file needs (a read-only folder or file system), and none is there.  The file is
    then read as immutable, which ignores a -wal file: one that holds commits is an error."""
    if os.path.exists(path + "-shm") or os.access(os.path.dirname(os.path.abspath(path)),
                                                  os.W_OK):
        return False
    if os.path.exists(path + "-wal") and os.path.getsize(path + "-wal"):
        raise DatasetError(f"ruda.data: {path}: its folder is read-only and the file's last "
                           f"commits are still in its -wal file; open it once where it is "
                           f"writable (that moves them into the file)")
    return True


def _columns(fields):
    """Blob columns of a chunk row: (column, field index, is_shape)."""
    out = []
    for k, f in enumerate(fields):
        if not f.fixed:
            out.append((f"s{k}", k, True))
        out.append((f"f{k}", k, False))
    return out


class Store:
    """An open dataset file: its connection, schema and chunk I/O."""

    def __init__(self, path, conn, fields, chunk_records, writable):
        self.path = path
        self.conn = conn
        self.fields = fields
        self.chunk_records = chunk_records
        self.writable = writable
        self.columns = _columns(fields)
        self._blobs = {}            # (sid, column, chunk) -> open read-only Blob
        self.writes = 0             # commits through this connection (see data_version)
        self.closed = False

    def drop_blobs(self):
        """Close the cached blob handles, ending the read transaction they hold open."""
        blobs, self._blobs = self._blobs, {}
        for b in blobs.values():
            b.close()

    # opening -------------------------------------------------------------------------------
    @classmethod
    def create(cls, path, fields, overwrite):
        fn = "ruda.data.Dataset.create"
        if os.path.isdir(path):
            raise ValueError(f"{fn}: path {path!r} is a folder; expected a file path (use "
                             f"ruda.data.shard_path(folder, rank) for shards)")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"{fn}: the folder {folder!r} of {path!r} does not exist; "
                                    f"make it first (os.makedirs)")
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"{fn}: {path!r} exists; pass overwrite=True to replace it")
        if not os.access(folder, os.W_OK):
            raise PermissionError(f"{fn}: the folder {folder!r} of {path!r} is read-only")
        fixed = sum(f.item_bytes for f in fields if f.fixed)
        records = max(1, min(MAX_CHUNK_RECORDS, CHUNK_BYTES // max(fixed, 1)))
        tmp = f"{path}.creating-{os.getpid()}"
        _remove(tmp)
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                room = _row_room(conn, _columns(fields))
                if fixed > room:            # no record could ever be written
                    big = max((f for f in fields if f.fixed), key=lambda f: f.item_bytes)
                    raise ValueError(f"{fn}: one record of this schema holds {fixed:,} bytes "
                                     f"(field {big.name!r}: {big.item_bytes:,}), more than the "
                                     f"{room:,} that one SQLite row can hold; split the field "
                                     f"across records")
                _initialize(conn, fields, records)
            finally:
                conn.close()
            _remove(path)
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)            # never leave a half-made file behind
            raise
        return cls.open(path, writable=True)

    @classmethod
    def open(cls, path, writable, threads=False):
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"ruda.data: no dataset file at {path!r}")
        if writable and not os.access(path, os.W_OK):
            raise PermissionError(f"ruda.data: {path!r} is read-only; open it with mode 'r'")
        if writable and not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
            raise PermissionError(f"ruda.data: {path!r} is in a read-only folder (appending "
                                  f"needs its -wal and -shm files there); open it with mode 'r'")
        with guard(path):
            conn = _connect(path, writable, threads)
            try:
                fields, records = _read_meta(path, conn)
                if writable:
                    conn.execute("PRAGMA synchronous=NORMAL")
            except BaseException:
                conn.close()
                raise
        return cls(path, conn, fields, records, writable)

    def reopen(self):
        """A read-only Store on the same file with its own connection (for another thread)."""
        with guard(self.path):
            conn = _connect(self.path, False, threads=True)
        return Store(self.path, conn, self.fields, self.chunk_records, False)

    def close(self):
        self.drop_blobs()
        self.conn.close()
        self.closed = True

    # splits --------------------------------------------------------------------------------
    def splits(self):
        """{name: (id, count)}."""
        with guard(self.path):
            rows = self.conn.execute("SELECT id, name, count FROM splits ORDER BY id").fetchall()
        if not all(isinstance(s, int) and isinstance(name, str) and isinstance(n, int) and n >= 0
                   for s, name, n in rows):
            raise self.corrupt("the splits table holds malformed rows")
        return {name: (sid, count) for sid, name, count in rows}

    def add_split(self, name):
        cols = ", ".join(f"{c} BLOB NOT NULL" for c, _, _ in self.columns)
        with guard(self.path), self._transaction():
            sid = self.conn.execute("INSERT INTO splits(name, count) VALUES (?, 0)",
                                    (name,)).lastrowid
            self.conn.execute(f"CREATE TABLE c{sid}(chunk INTEGER PRIMARY KEY, n INTEGER NOT "
                              f"NULL, bytes INTEGER NOT NULL, crc BLOB NOT NULL, {cols})")
        return sid

    @contextmanager
    def _transaction(self, kind="IMMEDIATE"):
        self.conn.execute(f"BEGIN {kind}")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:      # SQLite may have rolled back already
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        if kind != "DEFERRED":
            self.writes += 1

    # reading -------------------------------------------------------------------------------
    def data_version(self):
        """A value that changes with every commit: SQLite's data_version for other
        connections' commits, this connection's own count for its own (which SQLite's
        does not count), as split views share the connection."""
        self.drop_blobs()
        with guard(self.path):
            return self.conn.execute("PRAGMA data_version").fetchone()[0], self.writes

    def index(self, sid, since):
        """(count, [n of chunks since, since+1, ...]) of split ``sid``, from one snapshot."""
        with guard(self.path), self._transaction("DEFERRED"):
            row = self.conn.execute("SELECT count FROM splits WHERE id=?", (sid,)).fetchone()
            rows = self.conn.execute(f"SELECT chunk, n FROM c{sid} WHERE chunk>=? ORDER BY chunk",
                                     (since,)).fetchall()
        if row is None or any(c != since + j or not isinstance(n, int) or n < 1
                              for j, (c, n) in enumerate(rows)):
            raise self.corrupt(f"split table c{sid} has missing or malformed chunk rows")
        return row[0], [n for _, n in rows]

    def stored_bytes(self, sid):
        """Blob bytes of every chunk row of split ``sid`` (the rows' ``bytes`` column)."""
        with guard(self.path):
            return self.conn.execute(f"SELECT total(bytes) FROM c{sid}").fetchone()[0]

    def chunk(self, sid, c, checksum=True):
        """(n, [array with a leading axis per fixed field, list of arrays per variable field]).

        Lengths and shapes are always checked, checksums unless ``checksum`` is false.
        """
        with guard(self.path):
            n, crc, blobs = self._row(sid, c)
        if not isinstance(crc, bytes) or len(crc) != 4 * len(blobs) or checksum and \
                np.frombuffer(crc, "<u4").tolist() != [crc32(b) for b in blobs]:
            raise self.corrupt(f"chunk {c} of split table c{sid} fails its checksum")
        out = [None] * len(self.fields)
        for (_, k, is_shape), blob in zip(self.columns, blobs):
            if not is_shape:
                out[k] = self._decode(self.fields[k], n, blob, out[k], c)
            else:
                out[k] = blob
        return n, out

    def _row(self, sid, c):
        """(n, crc, blobs) of chunk row ``c``.  The blobs are read through blob handles, one
        copy each straight into a bytes object with the GIL released (a SELECT copies twice,
        into SQLite's memory and then into Python's).  The handles are opened first: while
        they are open the connection keeps one read snapshot, so n and crc match the blobs."""
        handles = []
        try:
            for col, _, _ in self.columns:
                try:
                    handles.append(self.conn.blobopen(f"c{sid}", col, c, readonly=True))
                except sqlite3.OperationalError as e:
                    if "no such rowid" in str(e):
                        raise self.corrupt(f"chunk {c} of split table c{sid} is missing") from None
                    if "cannot open value" in str(e):
                        raise self.corrupt(f"chunk {c} of split table c{sid} has values of the "
                                           f"wrong type") from None
                    raise
            row = self.conn.execute(f"SELECT n, crc FROM c{sid} WHERE chunk=?", (c,)).fetchone()
            if row is None:
                raise self.corrupt(f"chunk {c} of split table c{sid} is missing")
            if not isinstance(row[0], int):
                raise self.corrupt(f"chunk {c} of split table c{sid} has values of the wrong type")
            return row[0], row[1], [b.read() for b in handles]
        finally:
            for b in handles:
                b.close()

    def _decode(self, f, n, data, shapes, c):
        if f.fixed:
            if len(data) != n * f.item_bytes:
                raise self.corrupt(f"chunk {c}: field {f.name!r} holds {len(data)} bytes; "
                                   f"expected {n * f.item_bytes}")
            return np.frombuffer(data, f.dtype).reshape((n,) + f.shape)
        shapes, offsets = self._shapes(f, n, shapes, len(data), c)
        return [np.frombuffer(data, f.dtype, int(offsets[j + 1] - offsets[j]) // f.dtype.itemsize,
                              int(offsets[j])).reshape(shapes[j]) for j in range(n)]

    def _shapes(self, f, n, blob, nbytes, c, whole=True):
        """Validated (shapes as tuples, byte offsets) of a variable field's first n records
        (all records of the row when ``whole``), whose data blob has ``nbytes`` bytes."""
        nd = len(f.shape)
        if len(blob) != n * nd * 8:
            raise self.corrupt(f"chunk {c}: field {f.name!r} has a malformed shape table")
        s = np.frombuffer(blob, "<i8").reshape(n, nd)
        fixed = np.array([-1 if d is None else d for d in f.shape], np.int64)
        if (s < 0).any() or ((fixed >= 0) & (s != fixed)).any() or \
                np.prod(s.astype(np.float64), axis=1).sum() * f.dtype.itemsize > nbytes:
            raise self.corrupt(f"chunk {c}: field {f.name!r} has invalid shapes")
        offsets = np.concatenate(([0], np.cumsum(np.prod(s, axis=1) * f.dtype.itemsize)))
        if offsets[-1] != nbytes and (whole or offsets[-1] > nbytes):
            raise self.corrupt(f"chunk {c}: field {f.name!r} holds {nbytes} bytes; its shapes "
                               f"need {offsets[-1]}")
        return [tuple(r) for r in s.tolist()], offsets

    def record(self, sid, c, n, j):
        """Record ``j`` of chunk ``c`` (of ``n`` records, already verified) as host arrays."""
        out = []
        with guard(self.path):
            for k, f in enumerate(self.fields):
                if f.fixed:
                    out.append(np.frombuffer(self._read(sid, f"f{k}", c, j * f.item_bytes,
                                                        f.item_bytes), f.dtype)
                               .reshape(f.shape).copy())
                    continue
                nbytes = len(self._blob(sid, f"f{k}", c))
                table = self._read(sid, f"s{k}", c, 0, n * len(f.shape) * 8)
                shapes, offsets = self._shapes(f, n, table, nbytes, c, whole=False)
                size = int(offsets[j + 1] - offsets[j])
                data = self._read(sid, f"f{k}", c, int(offsets[j]), size)
                out.append(np.frombuffer(data, f.dtype).reshape(shapes[j]).copy())
        return out

    def _blob(self, sid, col, c):
        key = (sid, col, c)
        b = self._blobs.get(key)
        if b is None:
            if len(self._blobs) >= MAX_BLOBS:
                self._blobs.pop(next(iter(self._blobs))).close()
            b = self._blobs[key] = self.conn.blobopen(f"c{sid}", col, c, readonly=True)
        return b

    def _read(self, sid, col, c, offset, size):
        b = self._blob(sid, col, c)
        b.seek(offset)
        data = b.read(size)
        if len(data) != size:
            raise self.corrupt(f"chunk {c}: column {col} is shorter than its records")
        return data

    def corrupt(self, what):
        return DatasetError(f"ruda.data: {self.path}: the file is corrupted ({what})")

    # writing -------------------------------------------------------------------------------
    def write(self, sid, n, arrays):
        """Append ``n`` records (fixed fields: arrays; variable: lists) in one transaction."""
        self.drop_blobs()
        nbytes = _record_bytes(self.fields, n, arrays)
        with guard(self.path):
            room = _row_room(self.conn, self.columns)
        if nbytes.max() > room:             # checked first: SQLite would refuse the row
            i = int(np.argmax(nbytes > room))
            sizes = [a[i].nbytes for a in arrays]
            k = int(np.argmax(sizes))
            raise ValueError(f"ruda.data: {self.path}: record {i} of the {n} written holds "
                             f"{nbytes[i]:,} bytes (field {self.fields[k].name!r}: "
                             f"{sizes[k]:,}), more than the {room:,} that one SQLite row can "
                             f"hold; split it across records (nothing was written)")
        with guard(self.path), self._transaction():
            last = self.conn.execute(f"SELECT chunk, n, bytes FROM c{sid} ORDER BY chunk DESC "
                                     f"LIMIT 1").fetchone()
            first = 0 if last is None else last[0] + 1
            if last is not None and last[2] < MERGE_BYTES and nbytes.sum() < MERGE_BYTES and \
                    last[1] + n <= self.chunk_records:
                old_n, old = self.chunk(sid, last[0])
                arrays = [np.concatenate((o, a)) if f.fixed else o + a
                          for f, o, a in zip(self.fields, old, arrays)]
                nbytes = _record_bytes(self.fields, old_n + n, arrays)
                first = last[0]
            ends = _cuts(nbytes, self.chunk_records, min(CHUNK_BYTES, room))
            start = 0
            for c, end in enumerate(ends, first):
                self._insert(sid, c, end - start, [a[start:end] for a in arrays])
                start = end
            self.conn.execute("UPDATE splits SET count=count+? WHERE id=?", (n, sid))

    def _insert(self, sid, c, n, arrays):
        blobs = []
        for _, k, is_shape in self.columns:
            a, f = arrays[k], self.fields[k]
            if f.fixed:
                blobs.append(memoryview(np.ascontiguousarray(a).reshape(-1).view(np.uint8)))
            elif is_shape:
                blobs.append(np.array([x.shape for x in a], "<i8").reshape(n, len(f.shape))
                             .tobytes())
            else:
                blobs.append(b"".join(np.ascontiguousarray(x).tobytes() for x in a))
        crc = np.array([crc32(b) for b in blobs], "<u4").tobytes()
        total = sum(len(b) for b in blobs)
        marks = ", ".join("?" * (4 + len(blobs)))
        self.conn.execute(f"INSERT OR REPLACE INTO c{sid} VALUES ({marks})",
                          (c, n, total, crc, *blobs))


def _record_bytes(fields, n, arrays):
    out = np.zeros(n, np.int64)
    for f, a in zip(fields, arrays):
        if f.fixed:
            out += f.item_bytes
        else:
            out += np.array([x.nbytes + 8 * x.ndim for x in a], np.int64).reshape(n)
    return out


def _row_room(conn, columns):
    """The most record bytes that one chunk row can hold: SQLite's SQLITE_LIMIT_LENGTH (1e9
    bytes unless built or set otherwise) bounds every value and also every row (encoded as
    one value when written), less a bound on the rest of the row (its header of a varint
    per column, n, bytes and 4 crc bytes per blob column)."""
    return conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) - 16 * (len(columns) + 5)


def _cuts(nbytes, max_records, target):
    """End index of each chunk: at most max_records records, and at most ``target`` bytes
    unless it holds one record."""
    cum = np.cumsum(nbytes)
    ends, start, n = [], 0, len(nbytes)
    while start < n:
        base = cum[start - 1] if start else 0
        end = int(np.searchsorted(cum, base + target, "right"))
        end = min(max(end, start + 1), start + max_records, n)
        ends.append(end)
        start = end
    return ends


def _initialize(conn, fields, records):
    conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
    conn.execute(f"PRAGMA application_id={APP_ID}")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(
        "BEGIN; CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE splits(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, "
        "count INTEGER NOT NULL); COMMIT;")
    meta = {"format": FORMAT, "version": str(VERSION), "schema": _schema.to_json(fields),
            "chunk_records": str(records)}
    meta["check"] = _meta_check(meta)
    conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())


def _read_meta(path, conn):
    if conn.execute("PRAGMA application_id").fetchone()[0] != APP_ID:
        raise DatasetError(f"ruda.data: {path} is not a ruda dataset (its SQLite application_id "
                           f"is not 'ruda')")
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    except sqlite3.OperationalError as e:
        raise DatasetError(f"ruda.data: {path} is not a ruda dataset ({e})") from None
    if meta.get("format") != FORMAT:
        raise DatasetError(f"ruda.data: {path} is not a ruda dataset (format tag "
                           f"{meta.get('format')!r}; expected {FORMAT!r})")
    if meta.get("version") != str(VERSION):
        raise DatasetError(f"ruda.data: {path} has format version {meta.get('version')!r}; this "
                           f"ruda reads version {VERSION}")
    if meta.get("check") != _meta_check(meta):
        raise DatasetError(f"ruda.data: {path}: the file is corrupted (its meta table fails its "
                           f"checksum)")
    fields = _schema.from_json(meta.get("schema", ""), path)
    records = meta.get("chunk_records", "")
    if not records.isdigit() or not 1 <= int(records) <= MAX_CHUNK_RECORDS:
        raise DatasetError(f"ruda.data: {path}: invalid chunk_records {records!r} in its meta "
                           f"table")
    return fields, int(records)


def _meta_check(meta):
    body = "\n".join(f"{k}={meta[k]}" for k in sorted(meta) if k != "check")
    return str(zlib.crc32(body.encode()))


def _remove(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass
