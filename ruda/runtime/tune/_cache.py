"""The persistent tuning cache: one JSON file, written atomically.

File layout (``format`` and ``version`` identify it; anything else is foreign)::

    {"format": "ruda-tune-cache", "version": 1,
     "entries": {"<key>": {"choice": "<candidate name>", "params": {...},
                           "median_s": {"<name>": seconds, ...},
                           "rejected": {"<name>": "<reason>", ...},
                           "rounds": int, "tuned_at": "<ISO time>"}}}

A file that cannot be read, is not JSON, or is not in this format is ignored
with a ``RuntimeWarning`` and rebuilt on the next write.  Writes merge with the
file's current content (another process may have added keys), go to a temporary
file in the same directory and replace the old one with ``os.replace``, so a
reader never sees a half-written file.
"""
import json
import os
import tempfile
import threading
import time
import warnings

FORMAT = "ruda-tune-cache"
VERSION = 1


def default_path():
    """``$RUDA_TUNE_CACHE`` if set, else ``<user cache dir>/ruda/tune-v1.json`` (platformdirs)."""
    env = os.environ.get("RUDA_TUNE_CACHE")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    try:
        import platformdirs
        base = platformdirs.user_cache_dir("ruda", appauthor=False)
    except ImportError:  # pragma: no cover - platformdirs is in every extra that tunes
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ruda")
    return os.path.join(base, f"tune-v{VERSION}.json")


def _valid_entry(e):
    return (isinstance(e, dict) and isinstance(e.get("choice"), str)
            and isinstance(e.get("params", {}), dict))


class TuneCache:
    """Key -> entry mapping backed by one JSON file (``path=None``: :func:`default_path`)."""

    def __init__(self, path=None):
        self._path = path
        self._lock = threading.Lock()
        self._entries = None          # loaded lazily
        self._write_failed = False

    @property
    def path(self):
        return self._path or default_path()

    # reading -------------------------------------------------------------
    def _read_file(self, warn=True):
        """Entries in the file, or {} (with a warning) when it is missing/corrupt/foreign."""
        path = self.path
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return {}
        except OSError as e:
            if warn:
                warnings.warn(f"ruda: cannot read tuning cache {path} ({e}); tuning from scratch",
                              RuntimeWarning, stacklevel=4)
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError as e:  # includes UnicodeDecodeError
            reason = f"not valid JSON: {e}"
        else:
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                reason = "not a ruda tuning cache"
            elif data.get("version") != VERSION:
                reason = f"cache format version {data.get('version')!r}, expected {VERSION}"
            elif not isinstance(data.get("entries"), dict):
                reason = "no 'entries' table"
            else:
                entries = data["entries"]
                good = {k: e for k, e in entries.items() if _valid_entry(e)}
                if warn and len(good) != len(entries):
                    warnings.warn(f"ruda: dropped {len(entries) - len(good)} malformed entries "
                                  f"from tuning cache {path}", RuntimeWarning, stacklevel=4)
                return good
        if warn:
            warnings.warn(f"ruda: ignoring tuning cache {path} ({reason}); it will be rebuilt",
                          RuntimeWarning, stacklevel=4)
        return {}

    def _loaded(self):
        if self._entries is None:
            self._entries = self._read_file()
        return self._entries

    def get(self, key):
        with self._lock:
            e = self._loaded().get(key)
            return dict(e) if e is not None else None

    def keys(self):
        with self._lock:
            return list(self._loaded())

    # writing -------------------------------------------------------------
    def put(self, key, entry):
        """Store ``entry`` under ``key`` in memory and in the file (atomic, merged)."""
        entry = dict(entry)
        entry.setdefault("tuned_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with self._lock:
            self._loaded()[key] = entry
            merged = self._read_file(warn=False)
            merged.update(self._entries)
            self._entries = merged
            self._write(merged)

    def clear(self):
        with self._lock:
            self._entries = {}
            self._write({})

    def _write(self, entries):
        path = self.path
        data = {"format": FORMAT, "version": VERSION, "entries": entries}
        tmp = None
        try:
            d = os.path.dirname(path)
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tune-", suffix=".tmp", dir=d)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            tmp = None
        except OSError as e:
            if not self._write_failed:
                self._write_failed = True
                warnings.warn(f"ruda: cannot write tuning cache {path} ({e}); choices are kept "
                              f"for this process only", RuntimeWarning, stacklevel=4)
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
