"""The persistent tuning cache: one JSON file, written atomically.

File layout (``format`` and ``version`` identify it; anything else is foreign)::

    {"format": "ruda-tune-cache", "version": 1,
     "entries": {"<key>": {"choice": "<candidate name>", "params": {...},
                           "median_s": {"<name>": seconds, ...},
                           "rejected": {"<name>": "<reason>", ...},
                           "rounds": int, "tuned_at": "<ISO time>"}}}

A file that is missing or empty is created; one in this format whose version or table does
not fit is ignored with a ``RuntimeWarning`` and rebuilt on the next write.  Any other file (not
JSON, another program's JSON, unreadable) is not ruda's to replace: it is left as it is, the
choices are kept in memory for the process, and a ``RuntimeWarning`` names it once.  Writes
merge with the file's current content (another process may have added keys), go to a temporary
file in the same directory and replace the old one with ``os.replace``, so a reader never sees
a half-written file.
"""
import json
import os
import tempfile
import threading
import time

from ruda.runtime import env

FORMAT = "ruda-tune-cache"
VERSION = 1
_WARNED = set()     # warnings given in this process: each once, however many caches share a file


def _warn_once(message):
    if message not in _WARNED:
        _WARNED.add(message)
        env.warn(message)


def default_path():
    """``$RUDA_TUNE_CACHE`` if set, else ``<user cache dir>/ruda/tune-v1.json`` (platformdirs)."""
    given = env.text("RUDA_TUNE_CACHE")
    if given:
        return os.path.abspath(os.path.expanduser(given))
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
        self._kept = None             # why the file is left as it is (not ruda's), else None

    @property
    def path(self):
        return self._path or default_path()

    # reading -------------------------------------------------------------
    def _read_file(self, warn=True):
        """``(entries, kept)``: the file's valid entries ({} where there are none), and None
        where the file may be replaced (missing, empty or in ruda's format), else why it is
        not ruda's to replace."""
        path = self.path
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return {}, None
        except OSError as e:        # a directory, no permission: nothing to tell it is ruda's
            return {}, f"it cannot be read ({e})"
        if not raw.strip():
            return {}, None
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as e:   # UnicodeDecodeError is a ValueError; deep
            return {}, f"it is not JSON ({e})"          # nesting ('[[[...') a RecursionError
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}, f"it is JSON without ruda's \"format\": \"{FORMAT}\""
        if data.get("version") != VERSION:
            reason = f"cache format version {data.get('version')!r}, expected {VERSION}"
        elif not isinstance(data.get("entries"), dict):
            reason = "no 'entries' table"
        else:
            entries = data["entries"]
            good = {k: e for k, e in entries.items() if _valid_entry(e)}
            if warn and len(good) != len(entries):
                _warn_once(f"ruda: dropped {len(entries) - len(good)} malformed entries from "
                           f"tuning cache {path}")
            return good, None
        if warn:
            _warn_once(f"ruda: ignoring tuning cache {path} ({reason}); it will be rebuilt")
        return {}, None

    def _keep(self, why):
        """Leave the file alone from now on: choices stay in memory (said once per file)."""
        self._kept = why
        _warn_once(f"ruda: tuning cache {self.path} is left as it is: {why}; tuning choices are "
                   f"kept for this process only (move the file away or set RUDA_TUNE_CACHE to "
                   f"another path)")

    def _loaded(self):
        if self._entries is None:
            self._entries, kept = self._read_file()
            if kept is not None:
                self._keep(kept)
        return self._entries

    def get(self, key):
        with self._lock:
            e = self._loaded().get(key)
            return dict(e) if e is not None else None

    def keys(self):
        with self._lock:
            return list(self._loaded())

    def unsaved(self):
        """Why choices made now would not reach the file, or None where they would: the file
        is not ruda's, a write failed, or its folder cannot be written."""
        with self._lock:
            self._loaded()
            if self._kept is not None:
                return self._kept
        if self._write_failed:
            return "it cannot be written"
        folder = os.path.dirname(self.path)
        while folder and not os.path.exists(folder):        # the folders made on writing
            parent = os.path.dirname(folder)
            folder = "" if parent == folder else parent
        if folder and not os.access(folder, os.W_OK | os.X_OK):
            return "its folder cannot be written"
        return None

    # writing -------------------------------------------------------------
    def put(self, key, entry):
        """Store ``entry`` under ``key`` in memory and in the file (atomic, merged), unless the
        file is not ruda's."""
        entry = dict(entry)
        entry.setdefault("tuned_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        with self._lock:
            self._loaded()[key] = entry
            if self._kept is not None:
                return
            merged, kept = self._read_file(warn=False)
            if kept is not None:            # another program's file appeared since: keep it
                self._keep(kept)
                return
            merged.update(self._entries)
            self._entries = merged
            self._write(merged)

    def clear(self):
        with self._lock:
            self._entries = {}
            _, kept = self._read_file(warn=False)
            if kept is not None:
                self._keep(kept)
                return
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
                _warn_once(f"ruda: cannot write tuning cache {path} ({e}); choices are kept "
                           f"for this process only")
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
