"""Runtime tuning: choose among kernel candidates by measuring them on the device at hand.

This package knows nothing of ruda arrays: it times callables it is given, with a timer
the caller supplies, validates their outputs (host NumPy copies the caller fetches) against
an expected output or a reference candidate's, and remembers the fastest valid candidate in a cache file.

Use (a backend, once per kernel family and call site)::

    from ruda.runtime import tune
    timer = _timer.tuning_timer(device, sync)                                  # the backend's
    tuner = tune.Tuner(tune.Fingerprint("wgpu", adapter_name, driver), timer)   # one per device
    cands = [tune.Candidate("t64x64_r4x4_v4", {"tm": 64, ...}), ...]           # first = reference
    best = tuner.choose("matmul", "float32", (M, N, K), cands,
                        build=lambda c: (lambda: run_kernel(c.params, a, b)),  # returns the output
                        fetch=to_numpy)                                        # output -> ndarray
    run_kernel(best.params, a, b)

* Timers (the :class:`Timer` interface, ``measure(fn, number) -> total seconds``): the backend
  supplies one, ``ruda.backends.<device>._timer.tuning_timer(...)`` (CUDA events on cuda;
  timestamp queries on wgpu, where ``fn`` takes ``timestamp_writes=``, else the host clock).
  Here: :class:`HostTimer` (host clock with a ``sync`` callable, e.g. ``backend.synchronize``)
  and :class:`CallableTimer`.
* Selection: candidates are tried in order, the reference first: each is built and run once;
  one that raises, or whose output differs from the truth (``expected=``, else the reference's
  output) beyond :func:`tolerance` (norm-wise), or has NaN/Inf where the truth is finite, is
  rejected.  Once the per-key budget ``$RUDA_TUNE_BUDGET`` (default 2 s for a bare Tuner; wgpu's matmul and conv pass 1 s) has gone to running
  candidates (building them is not counted), the remaining ones are skipped (order them by
  promise).  With one valid candidate nothing is timed; otherwise each is timed once, those
  far slower on that first timing are dropped and the rest timed in interleaved rounds
  (rotating order, at least ``min_rounds`` unless one is clearly ahead, until the budget is
  spent) and the lowest median wins.
* Notice: a tuning run that lasts over a second (``Tuner(notice_after=)``) says on stderr, once,
  what it tunes on which device, where the choice is kept, and how to skip it.
* Key: device fingerprint (backend, name, driver) | ruda version | op | dtype | shape bucket
  (:func:`bucket`, of :func:`bucket_dims`: each dimension rounded up to a power of two; or pass
  a bucket string).
* ``RUDA_TUNE=off|on|force`` (:func:`mode`): off = never measure, use the default (reference)
  candidate; on = cached choice, tune on a miss; force = re-tune each key once per process
  (``0``/``1``, ``false``/``true``... mean off/on; another value raises ValueError).
* Cache: ``$RUDA_TUNE_CACHE`` or ``platformdirs.user_cache_dir("ruda")/tune-v1.json``; atomic
  writes (temp file + ``os.replace``, merged with concurrent writers); a ruda cache of another
  version is ignored with a ``RuntimeWarning`` and rebuilt; a file that is not ruda's is left
  as it is (choices kept for the process, a ``RuntimeWarning`` once).  :func:`stats` counts
  tuning runs and hits.
"""
from ruda.runtime.tune._cache import TuneCache, default_path
from ruda.runtime.tune._timers import CallableTimer, HostTimer, Timer, check_timer
from ruda.runtime.tune._tuner import (
    MODES, STATS, Candidate, Fingerprint, TuneError, Tuner, bucket, bucket_dims, compare,
    default_budget, mode, stats, tolerance,
)

__all__ = [
    "TuneCache", "default_path", "CallableTimer", "HostTimer", "Timer", "check_timer", "MODES", "STATS", "Candidate", "Fingerprint", "TuneError", "Tuner",
    "bucket", "bucket_dims", "compare", "default_budget", "mode", "stats", "tolerance",
]
