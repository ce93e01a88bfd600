"""The tuner: measure kernel candidates on the device, validate them, pick and remember one."""
import dataclasses
import math
import sys
import threading
import time

import numpy as np

from ruda._version import __version__
from ruda.runtime import env
from ruda.runtime.tune._cache import TuneCache
from ruda.runtime.tune._timers import check_timer

MODES = ("off", "on", "force")

#: Process-wide counters (all tuners): ``tuning_runs`` (keys measured), ``cache_hits``
#: (keys answered from the cache file), ``memo_hits`` (answered from this process's memory),
#: ``measurements`` (timer.measure calls), ``rejected`` (candidates failing build/validation).
STATS = {"tuning_runs": 0, "cache_hits": 0, "memo_hits": 0, "measurements": 0, "rejected": 0}
_STATS_LOCK = threading.Lock()


def _count(name, n=1):
    with _STATS_LOCK:
        STATS[name] += n


def stats():
    """A copy of :data:`STATS`."""
    with _STATS_LOCK:
        return dict(STATS)


def mode():
    """``RUDA_TUNE``: ``off`` (never measure; default candidate), ``on`` (default: use the
    cache, tune on a miss) or ``force`` (re-tune each key once per process, overwrite).
    The switch spellings mean off and on too (``0``, ``false``, ``1``, ``yes``...); unset or
    empty is ``on``; anything else raises ValueError."""
    value = env.text("RUDA_TUNE")
    if value is None:
        return "on"
    m = value.lower()
    if m in MODES:
        return m
    if m in env.TRUE or m in env.FALSE:
        return "on" if m in env.TRUE else "off"
    raise env.invalid("RUDA_TUNE", value, f"off, on or force (or {env.FLAG_SPELLINGS})")


def default_budget(default=2.0):
    """``RUDA_TUNE_BUDGET`` (seconds of measuring per key, >= 0), else ``default``; a value
    that is not such a number raises ValueError."""
    return env.number("RUDA_TUNE_BUDGET", default, low=0, unit="seconds")


#: Seconds a first call may tune before a one-line notice goes to stderr (``Tuner(notice_after=)``).
NOTICE_AFTER_S = 1.0
#: A candidate whose every sample beats all the others' by this factor ends the rounds early
#: (by the second factor while some candidate has a single sample).
CLEAR_LEAD = (1.25, 2.0)


class TuneError(RuntimeError):
    """No candidate could be validated (the reference itself failed)."""


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One way to run a kernel family: a unique ``name`` and JSON-able ``params``."""
    name: str
    params: dict = dataclasses.field(default_factory=dict, hash=False, compare=False)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    """What makes measurements on one device comparable: backend kind, device name, driver."""
    backend: str
    name: str
    driver: str = ""

    def key(self):
        return f"{self.backend}|{self.name}|{self.driver}"


def bucket_dims(shape):
    """A shape's bucket dimensions: each rounded up to a power of two (0 and 1 stay)."""
    return tuple(d if d <= 1 else 1 << (d - 1).bit_length() for d in map(int, shape))


def bucket(shape):
    """Shape bucket: ``bucket_dims`` as ``"AxBxC"``."""
    return "x".join(map(str, bucket_dims(shape))) or "scalar"


# rtol against max|reference|: norm-wise, so accumulation-order differences pass and
# real errors (wrong tile edge, missing term) fail.
_RTOL = {"f": {2: 1e-2, 4: 1e-4, 8: 1e-9}, "c": {8: 1e-4, 16: 1e-9}}
_BF16_RTOL = 3e-2


def tolerance(dtype):
    """``(rtol, atol)`` used to validate a candidate's output of ``dtype`` against the reference.

    Error is measured norm-wise: ``max|out - ref| <= atol + rtol * max|ref|``.  Integer and
    boolean outputs must match exactly.
    """
    name = str(dtype)
    if name in ("bfloat16", "bf16"):
        return _BF16_RTOL, 0.0
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return 1e-4, 0.0
    if dt.kind in "fc":
        return _RTOL[dt.kind].get(dt.itemsize, 1e-4), 0.0
    if dt.name == "bfloat16":
        return _BF16_RTOL, 0.0
    return 0.0, 0.0


def compare(out, ref, rtol, atol):
    """None if ``out`` matches ``ref`` within tolerance, else the reason (a string).

    Shapes must agree; where the reference is finite the output must be finite (NaN/Inf
    rejected); where the reference is NaN/Inf the output must be the same value.
    """
    out = np.asarray(out)
    ref = np.asarray(ref)
    if out.shape != ref.shape:
        return f"shape {out.shape} != reference shape {ref.shape}"
    if ref.dtype.kind in "biu" and out.dtype.kind in "biu" and rtol == 0 and atol == 0:
        bad = int(np.count_nonzero(out != ref))
        return None if bad == 0 else f"{bad} elements differ from the reference"
    o = out.astype(np.complex128 if np.iscomplexobj(out) or np.iscomplexobj(ref) else np.float64)
    r = ref.astype(o.dtype)
    fin = np.isfinite(r)
    if not np.all(fin):
        nf = ~fin
        same = (o[nf] == r[nf]) | (np.isnan(o[nf]) & np.isnan(r[nf]))
        if not np.all(same):
            return "differs from the reference where the reference is NaN/Inf"
    of, rf = o[fin], r[fin]
    if of.size == 0:
        return None
    if not np.all(np.isfinite(of)):
        return f"{int(np.count_nonzero(~np.isfinite(of)))} NaN/Inf elements where the reference is finite"
    err = float(np.max(np.abs(of - rf)))
    scale = float(np.max(np.abs(rf)))
    limit = atol + rtol * scale
    if err > limit:
        return f"max abs error {err:.3g} > {limit:.3g} (rtol {rtol:g} x max|ref| {scale:.3g} + atol {atol:g})"
    return None


class Tuner:
    """Chooses among candidates for one device.

    ``fingerprint``: a :class:`Fingerprint` (or a dict with backend/name/driver);
    ``timer``: the backend's timer, a :class:`Timer` (``measure(fn, number) -> seconds``);
    ``cache``: a :class:`TuneCache` (default: the user cache file, or ``$RUDA_TUNE_CACHE``);
    ``version``: ruda's version (part of every key); ``budget``: seconds of running candidates
    per key (default ``$RUDA_TUNE_BUDGET`` or 2.0); ``notice_after``: seconds a tuning run may take before
    it says so on stderr, once (default :data:`NOTICE_AFTER_S`; None: never); ``min_tried``: valid
    candidates tried whatever the budget (so that a slow device still compares two).
    """

    def __init__(self, fingerprint, timer, *, cache=None, version=None, budget=None,
                 min_rounds=3, max_rounds=15, min_sample_s=2e-4, max_number=1000,
                 notice_after="default", min_tried=2):
        if isinstance(fingerprint, dict):
            fingerprint = Fingerprint(**fingerprint)
        self.fingerprint = fingerprint
        self.timer = check_timer(timer)
        self.cache = cache if cache is not None else TuneCache()
        self.version = __version__ if version is None else version
        self.budget = budget
        self.min_rounds = min_rounds
        self.max_rounds = max_rounds
        self.min_sample_s = min_sample_s
        self.max_number = max_number
        self.min_tried = min_tried
        self.notice_after = NOTICE_AFTER_S if notice_after == "default" else notice_after
        self._memo = {}
        self._lock = threading.RLock()
        self.last_report = None       # details of the latest tuning run (for tests and `ruda info`)

    def key(self, op, dtype, shape_bucket):
        """The cache key: fingerprint | ruda version | op | dtype | shape bucket."""
        if not isinstance(shape_bucket, str):
            shape_bucket = bucket(shape_bucket)
        return f"{self.fingerprint.key()}|ruda {self.version}|{op}|{_dtype_name(dtype)}|{shape_bucket}"

    def lookup(self, op, dtype, shape, candidates):
        """The remembered candidate for this key (memory, then cache file), or None.  Never measures."""
        names = {c.name: c for c in candidates}
        key = self.key(op, dtype, shape)
        c = self._memo.get(key)
        if c is not None and c.name in names:
            return names[c.name]
        e = self.cache.get(key)
        if e is not None and e["choice"] in names:
            return names[e["choice"]]
        return None

    def choose(self, op, dtype, shape, candidates, build, fetch=np.asarray, *, reference=None,
               default=None, rtol=None, atol=None, budget=None, expected=None):
        """The candidate to use for ``op`` on ``dtype`` inputs of ``shape``.

        ``candidates``: sequence of :class:`Candidate` (unique names).
        ``build(candidate) -> fn``: a zero-argument callable running that candidate once on
        representative inputs of ``shape`` and returning its output (device object); may raise
        (the candidate is then rejected, e.g. too much shared memory on this adapter).
        ``fetch(output) -> numpy array``: host copy for validation.
        ``reference``: name of the candidate whose output is the truth (default: the first).
        ``default``: name used when ``RUDA_TUNE=off`` (default: the reference).
        ``rtol``/``atol``: override :func:`tolerance` (norm-wise, see :func:`compare`).
        ``expected``: the true output (a host array, or a callable returning one, called only
        when tuning): every candidate, the reference too, is checked against it instead of
        against the reference's output, so the reference may be the likeliest winner rather
        than the simplest kernel.  Candidates are tried in the given order (the reference
        first) while the budget lasts: order them by how likely they are to win.
        ``shape`` may be a shape tuple (bucketed with :func:`bucket`) or a bucket string.
        A hit costs a few microseconds (key building, env lookup): hot paths should keep the
        returned candidate per (op, dtype, bucket) themselves.
        """
        candidates = list(candidates)
        if not candidates:
            raise ValueError("ruda.tune: no candidates")
        names = {c.name: c for c in candidates}
        if len(names) != len(candidates):
            raise ValueError("ruda.tune: candidate names must be unique")
        ref_name = reference if reference is not None else candidates[0].name
        if ref_name not in names:
            raise ValueError(f"ruda.tune: reference {ref_name!r} is not a candidate")
        m = mode()
        if m == "off":
            return names[default if default is not None else ref_name]
        key = self.key(op, dtype, shape)
        with self._lock:
            c = self._memo.get(key)
            if c is not None and c.name in names:
                _count("memo_hits")
                return names[c.name]
            if m == "on":
                e = self.cache.get(key)
                if e is not None and e["choice"] in names:
                    _count("cache_hits")
                    c = self._memo[key] = names[e["choice"]]
                    return c
            if len(candidates) == 1:
                self._memo[key] = candidates[0]
                return candidates[0]
            if rtol is None or atol is None:
                r0, a0 = tolerance(dtype)
                rtol = r0 if rtol is None else rtol
                atol = a0 if atol is None else atol
            budget = budget if budget is not None else (self.budget if self.budget is not None
                                                        else default_budget())
            notice = _Notice(self, op, dtype, key.rsplit("|", 1)[-1])
            report = self._tune(candidates, names, ref_name, build, fetch, rtol, atol, budget,
                                expected, notice)
            report["key"] = key
            self.last_report = report
            _count("tuning_runs")
            choice = names[report["choice"]]
            self._memo[key] = choice
            self.cache.put(key, {"choice": choice.name, "params": dict(choice.params),
                                 "median_s": report["median_s"], "rejected": report["rejected"],
                                 "slow_first_call_s": report["slow_first_call_s"],
                                 "rounds": report["rounds"]})
            return choice

    # -------------------------------------------------------------------------
    def _tune(self, candidates, names, ref_name, build, fetch, rtol, atol, budget, expected, notice):
        """Try the candidates in order (the reference first): build, run once, validate, time
        once.  Once ``budget`` seconds went to running them (building not counted), the rest are
        skipped.  The far slower ones are dropped, the others timed in interleaved rounds."""
        t_start = time.perf_counter()
        rejected, fns, first, number = {}, {}, {}, {}
        skipped = []
        spent = [0.0]       # seconds running candidates (first runs and timings)
        order = [ref_name] + [c.name for c in candidates if c.name != ref_name]
        truth = None
        if expected is not None:
            truth = np.asarray(expected() if callable(expected) else expected)
        timer = self.timer

        def measure(name, n):
            _count("measurements")
            t = time.perf_counter()
            total = timer.measure(fns[name], n)
            spent[0] += time.perf_counter() - t
            notice.tick(t_start)
            return total

        for name in order:
            if len(fns) >= max(1, self.min_tried) and spent[0] > budget:   # spent: try no more
                skipped.append(name)
                continue
            try:
                fn = build(names[name])
                t = time.perf_counter()
                out = fetch(fn())
                spent[0] += time.perf_counter() - t
            except Exception as e:  # noqa: BLE001 - a failing candidate is rejected, not fatal
                if name == ref_name and truth is None:
                    raise TuneError(f"ruda.tune: reference candidate {name!r} failed: {e!r}") from e
                rejected[name] = f"failed: {type(e).__name__}: {e}"
                continue
            finally:
                notice.tick(t_start)
            if truth is None:
                truth = out
            else:
                reason = compare(out, truth, rtol, atol)
                if reason is not None:
                    rejected[name] = f"wrong result: {reason}"
                    continue
            del out
            fns[name] = fn
        if rejected:
            _count("rejected", len(rejected))
        if not fns:
            raise TuneError(f"ruda.tune: no candidate matches the expected output: {rejected}")
        live = [n for n in order if n in fns]
        if len(live) == 1:          # nothing to choose between: no timing
            return {"choice": live[0], "median_s": {}, "rejected": rejected, "rounds": 0,
                    "slow_first_call_s": {}, "skipped": skipped,
                    "seconds": time.perf_counter() - t_start}
        for name in live:   # calibrate: enough calls per sample that each lasts >= min_sample_s
            t1 = first[name] = measure(name, 1)
            number[name] = max(1, min(self.max_number, math.ceil(self.min_sample_s / max(t1, 1e-9))))
        # far slower on the first timed call: not worth the budget
        fastest = min(first.values())
        slow = {n: first[n] for n in live if first[n] > 4 * fastest and n != ref_name}
        live = [n for n in live if n not in slow]
        # a calibration of one call is a sample like those of the rounds
        samples = {n: [first[n]] if number[n] == 1 else [] for n in live}
        if len(live) == 1:          # the others far slower: its first timing is its report
            samples[live[0]] = [first[live[0]]]
            live = []
        rounds = 0
        while live and not _clear_lead(samples, live):
            elapsed = time.perf_counter() - t_start
            if elapsed > 3 * budget and all(samples[n] for n in live):   # hard stop, even before
                break                                                     # min_rounds
            k = rounds % len(live)
            for name in live[k:] + live[:k]:          # interleaved, rotating order
                samples[name].append(measure(name, number[name]) / number[name])
            rounds += 1
            if rounds >= self.max_rounds:
                break
            elapsed = time.perf_counter() - t_start
            med = {n: float(np.median(samples[n])) for n in live}
            best = min(live, key=med.get)
            if rounds >= self.min_rounds:
                if elapsed > budget:
                    break
                # drop candidates clearly slower than the best (keeps the budget for close ones)
                live = [n for n in live if med[n] <= 1.5 * med[best]]
                if len(live) == 1:
                    break
        med = {n: float(np.median(s)) for n, s in samples.items() if s}
        choice = min(med, key=lambda n: (med[n], order.index(n)))
        return {"choice": choice, "median_s": med, "rejected": rejected, "rounds": rounds,
                "slow_first_call_s": slow, "skipped": skipped,
                "seconds": time.perf_counter() - t_start}


def _clear_lead(samples, live):
    """One of ``live`` is clearly ahead: each of its samples beats every other's by CLEAR_LEAD."""
    if len(live) < 2 or not all(samples[n] for n in live):
        return False
    lead = CLEAR_LEAD[0] if all(len(samples[n]) > 1 for n in live) else CLEAR_LEAD[1]
    best = min(live, key=lambda n: max(samples[n]))
    return all(lead * max(samples[best]) < min(samples[n]) for n in live if n != best)


class _Notice:
    """Says once on stderr, when a tuning run passes ``tuner.notice_after`` seconds, what is
    tuned, where, that it happens once, where it is kept and how to skip it."""

    def __init__(self, tuner, op, dtype, bucket):
        self.tuner, self.what = tuner, (op, _dtype_name(dtype), bucket)
        self.done = tuner.notice_after is None

    def tick(self, t_start):
        if self.done or time.perf_counter() - t_start <= self.tuner.notice_after:
            return
        self.done = True
        op, dt, bucket = self.what
        fp = self.tuner.fingerprint
        cache = self.tuner.cache
        unsaved = cache.unsaved()
        # where the choice goes: the file, or (not ruda's, not writable) this process only
        kept = (f"then cached in {cache.path}" if unsaved is None else
                f"then kept for this process only (tuning cache {cache.path}: {unsaved})")
        try:
            sys.stderr.write(
                f"ruda: tuning {op} for {dt} {bucket} on {fp.backend} {fp.name}: once per device and "
                f"shape bucket, {kept} (RUDA_TUNE=off skips tuning, "
                f"RUDA_TUNE_BUDGET=<seconds> caps it)\n")
            sys.stderr.flush()
        except (OSError, ValueError):     # no usable stderr: tuning goes on silently
            pass


def _dtype_name(dtype):
    if isinstance(dtype, str):
        return dtype
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)
