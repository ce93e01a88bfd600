"""Guard: compiling the kernels of one call takes well under a second on wgpu, at any size.

Kernel text that grows with the data (an unrolled binary search, hashed as an exponentially
large tree) once made searchsorted at 512 sorted values compile for half a minute.  Here each
op runs in a fresh state (the ops layer's kernel table, replay plans and pipeline cache empty)
in a worker process with Mesa's shader cache off, so every pipeline really compiles; its
compile part is the first call's wall time minus a second, warm call's (same inputs: the
difference is IR build, hashing, rendering and pipeline compilation).  The kernels compiled
must also be the same at every size: one pipeline serves every n.

isin sorts its second operand (a bitonic sort: 8 s at 2^20 on lavapipe, all of it running, not
compiling), so its sizes stop at 2^14; the kernels it compiles are asserted size-free as well.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

LIMIT_S = 1.0         # per call, the compile part only (it takes ~0.1 s on lavapipe)
SEARCH_SIZES = (300, 1 << 20)     # 300: the old unrolled search took 16 s here, so a relapse shows early
ISIN_SIZES = (5, 1 << 14)
QUERIES = 1000


def _cases():
    """(name, sizes, make(rng, n) -> host inputs, call(xp, *device inputs))."""
    def sorted_vals(dt, nan):
        def make(rng, n):
            s = rng.standard_normal(n) * 1000
            q = rng.standard_normal(QUERIES) * 1000
            if nan:
                s[rng.random(n) < 0.05] = np.nan
                q[:10] = np.nan
            s, q = s.astype(dt), q.astype(dt)
            q[10:10 + min(n, 10)] = s[:10]      # exact hits: left and right differ
            return np.sort(s), q
        return make

    def shuffled(make):
        def m(rng, n):
            s, q = make(rng, n)
            s = rng.permutation(s)
            return s, q, np.argsort(s, kind="stable")
        return m

    out = []
    for dt in ("float64", "int32"):
        nan = dt.startswith("float")
        for side in ("left", "right"):
            out.append((f"searchsorted {dt} {side}", SEARCH_SIZES, sorted_vals(dt, nan),
                        lambda xp, s, q, side=side: xp.searchsorted(s, q, side=side)))
            out.append((f"searchsorted {dt} {side} sorter", SEARCH_SIZES, shuffled(sorted_vals(dt, nan)),
                        lambda xp, s, q, p, side=side: xp.searchsorted(s, q, side=side, sorter=p)))

    def isin_vals(dt):
        def make(rng, n):
            b = rng.integers(-50, 50, n) + (1j * rng.integers(-2, 3, n) if "complex" in dt else 0)
            a = rng.integers(-60, 60, QUERIES) + (1j * rng.integers(-2, 3, QUERIES) if "complex" in dt else 0)
            return a.astype(dt), b.astype(dt)
        return make
    for dt, invert in (("float32", False), ("float64", True), ("int32", True), ("int64", False),
                       ("complex64", True), ("complex128", False)):
        out.append((f"isin {dt} invert={invert}", ISIN_SIZES, isin_vals(dt),
                    lambda xp, a, b, invert=invert: xp.isin(a, b, invert=invert)))
    return out


def _worker():
    """Measure every case; one JSON line each (flushed, so a timeout still shows the ones done)."""
    import ruda as xp
    from ruda.backends.wgpu import _base
    from ruda.runtime.cache import ProgramCache

    class TimedCache(ProgramCache):
        def __init__(self, *a):
            super().__init__(*a)
            self.sources = set()

        def get(self, kernel):
            before = self.misses
            hit = super().get(kernel)
            if self.misses != before:
                self.sources.add(hashlib.sha1(hit[0].source.encode()).hexdigest()[:12])
            return hit

    dev = xp.device("wgpu")
    ctx = dev.backend.ctx
    keep = []                # every cache stays alive: bind groups are cached by layout id
    xp.sum(xp.ones(8, device=dev)).to_device("cpu")      # the driver's one-time start-up
    rng = np.random.default_rng(7)
    for name, sizes, make, call in _cases():
        for n in sizes:
            host = make(rng, n)
            if not all(dev.backend.supports(h.dtype) for h in host):   # an adapter without f64/i64
                print(json.dumps({"case": name, "n": n, "skipped": True}), flush=True)
                continue
            args = [xp.asarray(h, device=dev) for h in host]
            dev.backend.synchronize()
            ctx.cache = TimedCache(ctx.renderer, ctx._compile)
            keep.append(ctx.cache)
            _base._K.clear()
            ctx.plans.clear()
            times = []
            for _ in range(2):      # cold (compiles), then warm (the same launches, compiled)
                t = time.perf_counter()
                res = np.asarray(call(xp, *args).to_device("cpu"))
                times.append(time.perf_counter() - t)
            want = _reference(name, host)
            rec = {"case": name, "n": n, "compile_s": times[0] - times[1], "cold_s": times[0],
                   "kernels": sorted(ctx.cache.sources), "correct": bool(np.array_equal(res, want))}
            print(json.dumps(rec), flush=True)
            if rec["compile_s"] > 10 * LIMIT_S:
                return          # far over: the larger sizes would only take longer


def _reference(name, host):
    if name.startswith("searchsorted"):
        side = "right" if " right" in name else "left"
        return np.searchsorted(host[0], host[1], side=side, sorter=host[2] if len(host) > 2 else None)
    return np.isin(host[0], host[1], invert="invert=True" in name)


def test_compile_time_of_searchsorted_and_isin_is_small_and_size_free(wgpu_device):
    env = dict(os.environ, MESA_SHADER_CACHE_DISABLE="true", RUDA_DEVICE="cpu")
    try:
        r = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=300)
        out, err = r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        out, err = e.stdout or "", "timed out after 300 s"
        out = out.decode() if isinstance(out, bytes) else out
    recs = [json.loads(ln) for ln in out.splitlines() if ln.startswith("{")]
    assert recs and recs[-1]["n"] == ISIN_SIZES[-1] and len(recs) == sum(len(c[1]) for c in _cases()), \
        f"worker stopped early:\n{out[-3000:]}\n{err[-3000:]}"
    recs = [r for r in recs if not r.get("skipped")]
    assert recs, "every case needs a dtype this adapter lacks"
    slow = [f"{r['case']} n={r['n']}: {r['compile_s']:.2f} s" for r in recs if r["compile_s"] > LIMIT_S]
    assert not slow, f"compiling took over {LIMIT_S} s: {slow}"
    wrong = [f"{r['case']} n={r['n']}" for r in recs if not r["correct"]]
    assert not wrong, f"results differ from NumPy: {wrong}"
    by_case = {}
    for r in recs:
        by_case.setdefault(r["case"], []).append(r)
    for case, rs in by_case.items():
        first = rs[0]["kernels"]
        assert first, f"{case}: no kernel compiled in a fresh state"
        for r in rs[1:]:
            assert r["kernels"] == first, f"{case}: other kernels at n={r['n']} than at n={rs[0]['n']}"


if __name__ == "__main__":
    _worker()
