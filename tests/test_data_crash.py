"""ruda.data across processes: kill -9 of a writer mid-stream, readers while a writer appends."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

import ruda.data as rd
from conftest import to_numpy

SCHEMA = {"image": ("uint8", (3, 4, 4)), "label": ("int64", ()), "tokens": ("int32", (None,))}

WRITER = """
import sys, time
import numpy as np
import ruda.data as rd
sys.path.insert(0, {tests!r})
from test_data_crash import records
path, how = sys.argv[1], sys.argv[2]
size, pause, stop = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
ds = rd.Dataset.open(path, "a")
n = len(ds)
while n < stop:
    k = size if how == "extend" or n % 2 else 1     # "mixed": odd n extends, even n appends
    batch = records(n, k)
    if k == 1:
        ds.append({{f: v[0] for f, v in batch.items()}})
    else:
        ds.extend(batch)
    n += k
    print(n, flush=True)
    time.sleep(pause)
"""


def records(start, n):
    """Records start..start+n-1, each a function of its index."""
    idx = np.arange(start, start + n)
    image = (idx[:, None] * 7 + np.arange(48)) % 256
    return {"image": image.astype(np.uint8).reshape(n, 3, 4, 4),
            "label": idx.astype(np.int64),
            "tokens": [np.arange(i % 5, dtype=np.int32) + i for i in range(start, start + n)]}


def check(ds, n):
    """The first n records of ds are exactly records(0, n)."""
    want, got = records(0, n), ds[:n]
    np.testing.assert_array_equal(to_numpy(got["label"]), want["label"])
    np.testing.assert_array_equal(to_numpy(got["image"]), want["image"])
    for t, w in zip(got["tokens"], want["tokens"]):
        np.testing.assert_array_equal(to_numpy(t), w)


def writer(path, how, size, pause=0.0, stop=10 ** 9):
    script = WRITER.format(tests=os.path.dirname(__file__))
    return subprocess.Popen([sys.executable, "-c", script, str(path), how, str(size), str(pause),
                             str(stop)], stdout=subprocess.PIPE, text=True)


def test_kill_9_loses_no_committed_record(tmp_path):
    """Appends (merging small rows) and extends, killed at random points, twice."""
    path, size = tmp_path / "d.ruda", 37
    rd.Dataset.create(path, SCHEMA).close()
    rng = np.random.default_rng(0)
    for _ in range(2):                             # kill, reopen, write on, kill again
        proc = writer(path, "mixed", size)
        lines = [proc.stdout.readline() for _ in range(int(rng.integers(20, 200)))]
        os.kill(proc.pid, signal.SIGKILL)
        lines += proc.stdout.readlines()
        proc.wait()
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        printed = max(int(s) for s in lines if s.strip())
        with rd.Dataset.open(path) as ds:
            n = len(ds)
            assert printed <= n <= printed + size     # only the call in flight may be lost
            check(ds, n)
            assert ds.verify() == {"train": n}


def test_readers_see_commits_while_a_writer_appends(tmp_path):
    path = tmp_path / "d.ruda"
    rd.Dataset.create(path, SCHEMA).close()
    reader = rd.Dataset.open(path)
    assert len(reader) == 0
    proc = writer(path, "extend", 20, pause=0.01, stop=600)
    seen, deadline = [], time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            n = len(reader)
            if n and (not seen or n != seen[-1]):
                seen.append(n)
                assert n % 20 == 0                       # whole calls only
                last = reader[n - 1]
                assert int(to_numpy(last["label"])) == n - 1
                np.testing.assert_array_equal(to_numpy(last["image"]),
                                              records(n - 1, 1)["image"][0])
                check(reader, n)
                got = sorted(sum((to_numpy(b["label"]).tolist()
                                  for b in reader.batches(64, shuffle=True, seed=n)), []))
                assert got == list(range(len(got))) and len(got) >= n and len(got) % 20 == 0
            if proc.poll() is not None and n == 600:
                break
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert seen[-1] == 600 and len(seen) >= 3, seen
