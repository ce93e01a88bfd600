"""The Dataset: records of named tensors in SQLite, read back as ruda arrays."""
import glob
import os
import threading
import time

import numpy as np

import ruda as xp
from ruda.data import _schema
from ruda.data._reader import Part, Reader
from ruda.data._schema import DatasetError
from ruda.data._store import Store, closed_error, wrong_thread

SHARD_SUFFIX = ".ruda"
RESYNC_SECONDS = 1.0    # single-record reads look for new commits at least this often


def shard_path(folder, rank):
    """The file that rank ``rank`` writes in a sharded dataset ``folder`` (made if missing)."""
    if not isinstance(rank, int) or rank < 0:
        raise ValueError(f"ruda.data.shard_path: expected rank as a non-negative int; got {rank!r}")
    folder = _path("ruda.data.shard_path", folder, "folder")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"shard-{rank:05d}{SHARD_SUFFIX}")


class Dataset:
    """Records of named tensors in one SQLite file, or in a folder of shard files read as one.

    Every ``append``/``extend`` is one transaction in a WAL journal with ``synchronous=NORMAL``:
    once the call returns, its records survive a crash of the process (kill -9) and the file
    opens; an OS crash or power loss may lose the last calls, never corrupt the file.  Readers
    in other processes keep working while a writer appends and see each committed call
    (``len(ds)``, an index past the known end, a new ``batches`` call, or a single-record read
    a second after the last look).  Every chunk row is checked against its CRC-32 the first
    time it is read, so a corrupted file raises DatasetError rather than returning wrong
    values.  A shard folder reads its ``*.ruda`` files (present when opened) in name order.
    Reads go to the default device unless ``device=`` says otherwise; variable-shape fields
    come back in batches as lists of arrays.

    A Dataset is used in the thread that opened it (each thread opens its own); pickled, it
    is reopened from its path, mode and split (as spawned worker processes need).  A file in
    a read-only folder or file system opens in mode "r" (read as immutable).
    """

    def __init__(self, stores, split, mode, path):
        self._stores = stores
        self.path = path
        self.mode = mode
        self.split_name = split
        self.fields = stores[0].fields
        self._thread = threading.get_ident()      # the connections' thread
        ids = [s.splits().get(split) for s in stores]
        self._reader = Reader([Part(s, None if i is None else i[0]) for s, i in zip(stores, ids)])
        self._sync()

    def _here(self, method):
        """Raise a clear error where SQLite would refuse a closed connection or one of another
        thread (checked here too, as reads served from the cache never reach SQLite)."""
        if self.closed and method != "close":
            raise closed_error(self.path)
        if threading.get_ident() != self._thread:
            raise wrong_thread(f"ruda.data.Dataset.{method}", self.path)

    def __reduce__(self):
        if self.closed:
            raise ValueError(f"ruda.data.Dataset: {self.path}: cannot pickle a closed dataset")
        return _reopen, (os.path.abspath(self.path), self.mode, self.split_name)

    @property
    def closed(self):
        return any(s.closed for s in self._stores)

    def _sync(self):
        self._reader.sync()
        self._synced = time.monotonic()

    # opening -------------------------------------------------------------------------------
    @classmethod
    def create(cls, path, schema, *, overwrite=False, split="train"):
        """A new dataset file (mode "a") with ``schema`` = {name: (dtype, shape)}."""
        path = _path("ruda.data.Dataset.create", path)
        fields = _schema.parse(schema)
        _check_split("ruda.data.Dataset.create", split)
        store = Store.create(path, fields, overwrite)
        store.add_split(split)
        return cls([store], split, "a", store.path)

    @classmethod
    def open(cls, path, mode="r", *, split="train"):
        """Open a dataset file or shard folder; mode "r" reads, "a" also appends (files only).

        ``split=None`` picks "train" where present, else the file's first split.
        """
        fn = "ruda.data.Dataset.open"
        if mode not in ("r", "a"):
            raise ValueError(f"{fn}: expected mode 'r' or 'a'; got {mode!r}")
        if split is not None:
            _check_split(fn, split)
        path = _path(fn, path)
        files = _shard_files(fn, path) if os.path.isdir(path) else [path]
        if mode == "a" and os.path.isdir(path):
            raise ValueError(f"{fn}: mode 'a' needs one dataset file; {path!r} is a shard folder "
                             f"(each writer appends to its own ruda.data.shard_path(folder, rank))")
        stores = []
        try:
            for f in files:
                stores.append(Store.open(f, writable=mode == "a"))
                if _schema.to_json(stores[-1].fields) != _schema.to_json(stores[0].fields):
                    raise DatasetError(f"{fn}: shard {f!r} has schema {_describe(stores[-1])}; "
                                       f"expected {_describe(stores[0])} as in {files[0]!r}")
            names = [n for s in stores for n in s.splits()]
            if split is None:
                split = "train" if "train" in names or not names else names[0]
            if split not in names:
                if mode != "a":
                    raise ValueError(f"{fn}: {path!r} has no split {split!r}; its splits: "
                                     f"{', '.join(dict.fromkeys(names)) or 'none'}")
                stores[0].add_split(split)
        except BaseException:
            for s in stores:
                s.close()
            raise
        return cls(stores, split, mode, path)

    def split(self, name):
        """The split ``name`` of the same file(s) (created on the spot in mode "a")."""
        _check_split("ruda.data.Dataset.split", name)
        self._here("split")
        if name not in self.splits:
            if self.mode != "a":
                raise ValueError(f"ruda.data.Dataset.split: {self.path!r} has no split {name!r}; "
                                 f"its splits: {', '.join(self.splits)}")
            self._stores[0].add_split(name)
        return Dataset(self._stores, name, self.mode, self.path)

    def close(self):
        """Close the file(s), shared with the Datasets that ``split`` gave."""
        self._here("close")
        self._reader.close()
        for s in self._stores:
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # description ---------------------------------------------------------------------------
    @property
    def schema(self):
        return _schema.as_dict(self.fields)

    @property
    def splits(self):
        self._here("splits")
        names = []
        for s in self._stores:
            names += [n for n in s.splits() if n not in names]
        return tuple(names)

    def counts(self):
        """{split: records}, summed over shards."""
        self._here("counts")
        out = {}
        for s in self._stores:
            for name, (_, count) in s.splits().items():
                out[name] = out.get(name, 0) + count
        return out

    @property
    def files(self):
        return tuple(s.path for s in self._stores)

    def __len__(self):
        self._here("__len__")
        self._sync()
        return len(self._reader)

    def __repr__(self):
        fields = ", ".join(f"{f.name}: {f.describe()}" for f in self.fields)
        if self.closed:
            state = "closed"
        elif threading.get_ident() != self._thread:     # its connections are not usable here
            state = "opened in another thread"
        else:
            state = f"{len(self)} records"
        return f"Dataset({self.path!r}, split={self.split_name!r}, {state}, {{{fields}}})"

    # reading -------------------------------------------------------------------------------
    def __getitem__(self, key):
        """``ds[i]``: a dict of arrays; ``ds[i:j]``, ``ds[index_array]``: batched arrays."""
        self._here("__getitem__")
        idx = self._index(key)
        if isinstance(idx, int):
            return {f.name: xp.asarray(a) for f, a in zip(self.fields, self._reader.one(idx))}
        if isinstance(idx, range) and idx.step == 1:
            return self._arrays(self._reader.range(idx.start, idx.stop), None)
        return self._arrays(self._reader.take(np.asarray(idx, np.int64)), None)

    def _index(self, key):
        if isinstance(key, xp.Array):
            key = np.asarray(key.to_device("cpu"))
        if isinstance(key, np.ndarray) and key.ndim == 0 and key.dtype.kind in "iu":
            key = key[()]              # a 0-d integer array (an argmax) indexes as its int
        if isinstance(key, int | np.integer) and not isinstance(key, bool | np.bool_):
            i = int(key)
            n = len(self._reader)
            if not 0 <= i < n or time.monotonic() - self._synced > RESYNC_SECONDS:
                n = len(self)
            if not -n <= i < n:
                raise IndexError(f"ruda.data.Dataset: index {i} is out of range for {n} records")
            return i % n
        n = len(self)
        if isinstance(key, slice):
            return range(*key.indices(n))
        if isinstance(key, list | np.ndarray):
            return _index_array(np.asarray(key), n)
        hint = " (records have one index: a list takes several)" if isinstance(key, tuple) else ""
        raise TypeError(f"ruda.data.Dataset: expected an int, a slice or a 1-D integer or boolean "
                        f"index array; got {type(key).__name__}{hint}")

    def _arrays(self, host, device):
        return {f.name: xp.asarray(a, device=device) if f.fixed
                else [xp.asarray(x, device=device) for x in a]
                for f, a in zip(self.fields, host)}

    def batches(self, batch_size, *, shuffle=False, seed=None, drop_last=False, device=None,
                shard=None, prefetch=2, window=None):
        """Iterate batches (dicts of arrays on ``device``) of the records present now.

        ``shuffle`` draws one permutation of all the records from
        ``numpy.random.default_rng(seed)`` (the same seed, the same order);
        ``shard=(rank, world_size)`` gives rank its contiguous part of that order, so ranks
        that share the seed get disjoint parts that together cover every record (their sizes
        differ by at most one record); with ``drop_last`` every rank gets the same number of
        full batches, as collectives in lockstep need.  Up to ``prefetch`` groups of batches
        (about 8 MiB each) are read ahead by a background thread (0: none).

        Shuffled batches are read ``window`` bytes of records at a time (default 1 GiB, or
        the rank's whole share if smaller): the chunk rows that a window's records lie in are
        each read once and the batches gathered from one buffer of that size, which the
        dataset keeps for the next epoch until it is closed.  Where the rows a window touches
        fit in the window whole and hold at most twice its records (a dataset, or a share of
        half of it, smaller than the window), the buffer holds them whole and later epochs
        read only the rows it does not hold yet (new or grown ones).
        A larger window reads each chunk row fewer times per epoch (about share / window
        times); the order is the same whatever the window.
        """
        from ruda.data._batches import iterate
        self._here("batches")
        return iterate(self, batch_size, shuffle, seed, drop_last, device, shard, prefetch,
                       window)

    def verify(self):
        """Read and check every chunk of every split; returns {split: records}."""
        self._here("verify")
        out = {}
        for name in self.splits:
            r = self.split(name)._reader if name != self.split_name else self._reader
            r.sync()
            for j, p in enumerate(r.parts):
                for c in range(len(p.sizes)):
                    r._chunk(j, c)
            out[name] = len(r)
        return out

    # writing -------------------------------------------------------------------------------
    def append(self, record):
        """Write one record ``{field: array}`` in one transaction (values as for ``extend``)."""
        store = self._writer("append")
        arrays = _schema.check_record("ruda.data.Dataset.append", self.fields, record)
        self._write(store, 1, arrays)

    def extend(self, batch):
        """Write ``{field: array with a leading batch axis}`` in one transaction.

        A variable-shape field may be given as a list of per-record arrays.  NumPy and ruda
        arrays must have the field's dtype (NumPy's in either byte order); Python lists and
        scalars are converted as NumPy's same_kind casting allows (ints into a float field,
        never floats into an int one), and must fit the dtype.
        """
        store = self._writer("extend")
        n, arrays = _schema.check_batch("ruda.data.Dataset.extend", self.fields, batch)
        if n:
            self._write(store, n, arrays)

    def _writer(self, fn):
        self._here(fn)
        if self.mode != "a":
            raise ValueError(f"ruda.data.Dataset.{fn}: the dataset {self.path!r} is open for "
                             f"reading; open it with mode='a' to write")
        return self._stores[0]

    def _write(self, store, n, arrays):
        part = self._reader.parts[0]
        store.write(part.sid, n, arrays)
        part.invalidate()


def _reopen(path, mode, split):
    return Dataset.open(path, mode, split=split)


def _path(fn, path, what="path"):
    """``path`` (str, bytes or os.PathLike) as a str."""
    try:
        text = os.fsdecode(os.fspath(path))
    except TypeError:
        raise TypeError(f"{fn}: expected {what} as a str, bytes or os.PathLike; got "
                        f"{type(path).__name__}") from None
    if not text:
        raise ValueError(f"{fn}: expected a non-empty {what}; got {path!r}")
    return text


def _index_array(a, n):
    if a.ndim != 1:
        raise IndexError(f"ruda.data.Dataset: expected a 1-D index array; got shape {a.shape}")
    if a.dtype == bool:
        if a.shape[0] != n:
            raise IndexError(f"ruda.data.Dataset: expected a boolean mask of length {n}; got "
                             f"{a.shape[0]}")
        return np.flatnonzero(a)
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"ruda.data.Dataset: expected an integer or boolean index array; got "
                        f"dtype {a.dtype}")
    if a.min() < -n or a.max() >= n:
        raise IndexError(f"ruda.data.Dataset: index array has values outside [-{n}, {n}) for "
                         f"{n} records")
    return np.where(a < 0, a + n, a).astype(np.int64)


def _shard_files(fn, folder):
    files = sorted(glob.glob(os.path.join(glob.escape(folder), "*" + SHARD_SUFFIX)))
    if not files:
        raise FileNotFoundError(f"{fn}: the folder {folder!r} holds no shard files "
                                f"(*{SHARD_SUFFIX})")
    return files


def _check_split(fn, name):
    if not isinstance(name, str) or not name:
        raise ValueError(f"{fn}: expected split as a non-empty string; got {name!r}")


def _describe(store):
    return "{" + ", ".join(f"{f.name}: {f.describe()}" for f in store.fields) + "}"
