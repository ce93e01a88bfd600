"""ruda.data: batches (order, shuffle, shards, prefetch, device), shard folders, import, CLI."""
import gc
import os
import threading

import numpy as np
import pytest

import ruda as xp
import ruda.data as rd
import ruda.data._batches as batches_module
import ruda.data._reader as reader_module
import ruda.data._store as store_module
from ruda.data._cli import main as cli
from conftest import to_numpy
from test_data import SCHEMA, assert_batch, filled, make, needs


def prefetchers():
    return sum(t.name == "ruda.data prefetch" for t in threading.enumerate())


def labels(batches):
    return [to_numpy(b["label"]).tolist() for b in batches]


@pytest.mark.parametrize("prefetch", [0, 2])
def test_sequential_batches(tmp_path, prefetch):
    ds, data = filled(tmp_path, 103)
    out = list(ds.batches(10, prefetch=prefetch))
    assert [len(b["tokens"]) for b in out] == [10] * 10 + [3]
    for j, b in enumerate(out):
        assert_batch(b, data, range(10 * j, min(10 * j + 10, 103)))
    assert labels(ds.batches(10, drop_last=True, prefetch=prefetch)) == \
        [list(range(i, i + 10)) for i in range(0, 100, 10)]


def test_shuffle_is_a_permutation_determined_by_seed(tmp_path):
    ds, data = filled(tmp_path, 97)
    first = sum(labels(ds.batches(8, shuffle=True, seed=5)), [])
    assert sorted(first) == list(range(97)) and first != list(range(97))
    assert sum(labels(ds.batches(8, shuffle=True, seed=5, prefetch=0)), []) == first
    assert first == np.random.default_rng(5).permutation(97).tolist()
    assert sum(labels(ds.batches(8, shuffle=True, seed=6)), []) != first
    for b in ds.batches(16, shuffle=True, seed=5):
        assert_batch(b, data, to_numpy(b["label"]).tolist())


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
def test_shards_are_disjoint_and_complete(tmp_path, shuffle, world):
    ds, _ = filled(tmp_path, 50)
    parts = [sum(labels(ds.batches(4, shuffle=shuffle, seed=3, shard=(r, world))), [])
             for r in range(world)]
    flat = sum(parts, [])
    assert sorted(flat) == list(range(50)) and len(flat) == len(set(flat))
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    counts = {len(list(ds.batches(4, shuffle=shuffle, seed=3, shard=(r, world), drop_last=True)))
              for r in range(world)}
    assert counts == {50 // world // 4}                  # lockstep: same number of full batches


SMALL = {"x": ("float32", (8,)), "y": ("int64", ())}        # 40-byte records
ROW = 37                                                      # records per chunk row


def small(tmp_path, monkeypatch, n):
    """n 40-byte records in chunk rows of ROW records (written in two calls), and the
    NumPy oracle; batches and windows below straddle the rows."""
    monkeypatch.setattr(store_module, "CHUNK_BYTES", 40 * ROW)
    rng = np.random.default_rng(n)
    data = {"x": rng.standard_normal((n, 8)).astype(np.float32),
            "y": rng.integers(-2 ** 62, 2 ** 62, n)}
    ds = rd.Dataset.create(tmp_path / "small.ruda", SMALL)
    ds.extend({k: v[:n // 3] for k, v in data.items()})
    ds.extend({k: v[n // 3:] for k, v in data.items()})
    return ds, data


def epoch(ds, data, device, batch, seed, **kwargs):
    """One shuffled epoch, checked batch by batch against the NumPy records of the order
    numpy.random.default_rng(seed).permutation draws; returns the indices it gave."""
    n = len(data["y"])
    order = np.random.default_rng(seed).permutation(n)
    shard = kwargs.get("shard")
    if shard is not None:
        rank, world = shard
        order = order[rank * n // world:(rank + 1) * n // world]
    got = list(ds.batches(batch, shuffle=True, seed=seed, device=device, **kwargs))
    sizes = [batch] * (len(order) // batch) + ([len(order) % batch] if len(order) % batch else [])
    if kwargs.get("drop_last"):
        sizes = [batch] * (n // (shard[1] if shard else 1) // batch)
    assert [len(b["y"]) for b in got] == sizes
    start = 0
    for b in got:
        idx = order[start:start + len(b["y"])]
        for k, want in data.items():
            assert b[k].device == device and b[k].dtype == want.dtype
            assert to_numpy(b[k]).tobytes() == want[idx].tobytes()
        start += len(idx)
    return order[:start]


@pytest.mark.parametrize("window", [None, 40 * 300, 40 * 20])
def test_shuffled_small_records_every_record_once(tmp_path, monkeypatch, device, window):
    """A window of everything, windows of a few chunk rows, windows smaller than a row."""
    needs(device, "float32", "int64")
    ds, data = small(tmp_path, monkeypatch, 1003)             # 28 rows, last batch of 43
    first = epoch(ds, data, device, 64, seed=3, window=window, prefetch=0)
    assert sorted(first.tolist()) == list(range(1003))
    again = epoch(ds, data, device, 64, seed=3, window=window)          # chunks now verified
    assert again.tolist() == first.tolist()
    other = epoch(ds, data, device, 64, seed=4, window=window)
    assert sorted(other.tolist()) == list(range(1003)) and other.tolist() != first.tolist()


@pytest.mark.parametrize("world", [2, 3, 8])
def test_shuffled_small_record_shards_are_disjoint_and_complete(tmp_path, monkeypatch, device,
                                                                world):
    needs(device, "float32", "int64")
    ds, data = small(tmp_path, monkeypatch, 500)
    parts = [epoch(ds, data, device, 16, seed=9, shard=(r, world), window=40 * 100).tolist()
             for r in range(world)]
    flat = [i for part in parts for i in part]
    assert sorted(flat) == list(range(500)) and len(set(flat)) == 500
    full = [epoch(ds, data, device, 16, seed=9, shard=(r, world), drop_last=True) for r in
            range(world)]
    assert len({len(f) for f in full}) == 1                    # lockstep: same full batches


def test_shuffled_reads_each_chunk_row_once_per_window(tmp_path, monkeypatch):
    """A window of the whole dataset reads every chunk row once; windows needing few records
    of verified rows read them through blob handles instead (forced here by a cost model
    that makes a record cheap)."""
    ds, data = small(tmp_path, monkeypatch, 2000)
    rows = -(-2000 // ROW)
    calls = {"chunk": 0, "record": 0}

    def spy(name):
        real = getattr(store_module.Store, name)

        def counted(self, *args):
            calls[name] += 1
            return real(self, *args)
        monkeypatch.setattr(store_module.Store, name, counted)
    spy("chunk")
    spy("record")
    epoch(ds, data, "cpu", 100, seed=1, prefetch=0)
    assert calls == {"chunk": rows, "record": 0}
    epoch(ds, data, "cpu", 100, seed=2, prefetch=2, window=40 * 100)
    assert calls["record"] > 0
    monkeypatch.setattr(reader_module, "FIELD_US", 0.01)
    calls.update(chunk=0, record=0)
    epoch(ds, data, "cpu", 100, seed=3, window=40 * 500)
    assert calls == {"chunk": 0, "record": 2000}


def chunk_reads(monkeypatch):
    """The list of the chunk rows that Store.chunk reads from now on, in order."""
    calls = []
    real = store_module.Store.chunk

    def counted(self, sid, c, checksum=True):
        calls.append(c)
        return real(self, sid, c, checksum)
    monkeypatch.setattr(store_module.Store, "chunk", counted)
    return calls


def test_shuffled_epochs_reuse_the_rows_the_window_holds(tmp_path, monkeypatch):
    """A window that holds every row whole reads each once; later epochs read none, and
    after an append only the grown last row and the new rows."""
    ds, data = small(tmp_path, monkeypatch, 1000)
    rows = -(-1000 // ROW)
    calls = chunk_reads(monkeypatch)
    epoch(ds, data, "cpu", 64, seed=1, prefetch=0)
    assert sorted(calls) == list(range(rows))
    calls.clear()
    epoch(ds, data, "cpu", 64, seed=2)
    epoch(ds, data, "cpu", 50, seed=3, shard=(1, 2), window=40 * 1000)
    assert calls == []
    for count, new_rows in ((20, [rows - 1]), (40, [rows, rows + 1])):
        more = {"x": np.full((count, 8), count, np.float32), "y": np.arange(count) - count}
        ds.extend(more)            # 20 join the last row (1000 = 27 * 37 + 1); 40 make two rows
        data = {k: np.concatenate((data[k], more[k])) for k in data}
        calls.clear()
        epoch(ds, data, "cpu", 64, seed=count)
        assert sorted(calls) == new_rows
    calls.clear()
    epoch(ds, data, "cpu", 64, seed=5, window=40 * 100)        # too small to hold rows whole
    assert len(calls) > rows
    calls.clear()
    epoch(ds, data, "cpu", 64, seed=6)                         # the room was refilled: read all
    assert sorted(calls) == list(range(rows + 2))
    calls.clear()
    epoch(ds, data, "cpu", 8, seed=7, shard=(1, 3))      # rows hold 3x the share: not held
    assert len(calls) > rows // 2
    calls.clear()
    epoch(ds, data, "cpu", 64, seed=8)
    assert sorted(calls) == list(range(rows + 2))


def test_shuffled_share_held_in_part_of_the_rows(tmp_path, monkeypatch):
    """A share whose records lie in some rows only holds those, packed; values and order
    as the NumPy oracle's, and the next epoch reads only rows it did not touch before."""
    ds, data = small(tmp_path, monkeypatch, 10)                # one row of 10 records
    monkeypatch.setattr(store_module, "CHUNK_BYTES", 40 * 2)
    more = {"x": np.ones((400, 8), np.float32), "y": np.arange(400)}
    ds.extend(more)                                             # then 200 rows of 2
    data = {k: np.concatenate((data[k], more[k])) for k in data}
    calls = chunk_reads(monkeypatch)
    epoch(ds, data, "cpu", 16, seed=1, shard=(0, 4), prefetch=0)
    assert len(calls) == len(set(calls)) < 201                 # some rows, each read once
    calls.clear()
    epoch(ds, data, "cpu", 16, seed=1, shard=(0, 4))
    assert calls == []


@pytest.mark.parametrize("shape, dtype", [((1 << 18, 3), np.float32), ((3,), np.int64)])
def test_window_buffer_memory(shape, dtype):
    a = reader_module._empty(shape, dtype)                      # 3 MiB: its own mapping
    assert a.shape == shape and a.dtype == dtype and a.flags.writeable and a.flags.c_contiguous
    want = np.arange(a.size).reshape(shape).astype(dtype)
    a[...] = want
    assert np.array_equal(a, want)


@pytest.mark.parametrize("prefetch", [0, 2])
def test_shuffled_batches_picked_by_threads(tmp_path, monkeypatch, prefetch):
    """Large batches are picked by threads, three per task here; same order and values,
    and no thread left once the iteration ends or is closed early."""
    monkeypatch.setattr(batches_module, "PICK_THREADS_FROM", 1)
    monkeypatch.setattr(batches_module, "PICK_BYTES", 40 * 64 * 3)
    monkeypatch.setattr(reader_module, "READERS", 2)
    monkeypatch.setattr(batches_module, "GROUP_BYTES", 1)      # prefetch hands over each batch
    ds, data = small(tmp_path, monkeypatch, 1003)
    for window in (None, 40 * 300, 40 * 20):
        epoch(ds, data, "cpu", 64, seed=3, window=window, prefetch=prefetch)
    it = ds.batches(64, shuffle=True, seed=1, prefetch=prefetch)
    next(it)
    assert any(t.name.startswith("ruda.data picker") for t in threading.enumerate())
    it.close()
    assert not any(t.name.startswith("ruda.data") for t in threading.enumerate())


@pytest.mark.parametrize("prefetch", [0, 2])
def test_shuffled_read_errors_reach_the_consumer(tmp_path, monkeypatch, prefetch):
    ds, _ = small(tmp_path, monkeypatch, 1000)
    real = store_module.Store.chunk

    def broken(self, sid, c, checksum=True):
        if c % 2:                   # odd rows: read by a helper thread where there are several
            raise rd.DatasetError(f"boom {c}")
        return real(self, sid, c, checksum)
    monkeypatch.setattr(store_module.Store, "chunk", broken)
    with pytest.raises(rd.DatasetError, match="boom"):
        list(ds.batches(10, shuffle=True, seed=0, prefetch=prefetch))
    assert not any(t.name.startswith("ruda.data") for t in threading.enumerate())


def test_shuffled_variable_records_across_windows(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "CHUNK_BYTES", 300)       # a few records per row
    ds, data = filled(tmp_path, 120)
    for window in (None, 2000, 50):
        got = list(ds.batches(7, shuffle=True, seed=5, window=window))
        order = np.random.default_rng(5).permutation(120)
        assert [len(b["tokens"]) for b in got] == [7] * 17 + [1]
        for j, b in enumerate(got):
            assert_batch(b, data, order[7 * j:7 * j + 7].tolist())


def test_batches_on_device(tmp_path, device):
    needs(device, "uint8", "int64", "int32")
    ds, data = filled(tmp_path, 30)
    for j, b in enumerate(ds.batches(7, device=device)):
        assert b["image"].device == device and b["tokens"][0].device == device
        assert_batch(b, data, range(7 * j, min(7 * j + 7, 30)))


def test_batches_snapshot_and_early_stop(tmp_path, monkeypatch):
    monkeypatch.setattr(batches_module, "GROUP_BYTES", 1)      # hand over batch by batch
    ds, data = filled(tmp_path, 40)
    it = ds.batches(5)
    first = next(it)
    ds.extend({k: v[:3] for k, v in make(3, start=40).items()})
    rest = list(it)
    assert sum(len(b["tokens"]) for b in [first] + rest) == 40      # records present at the call
    it = ds.batches(5)
    next(it)
    assert prefetchers() == 1
    it.close()
    assert prefetchers() == 0
    assert len(list(ds.batches(5))) == 9


def _open_files(path):
    """Descriptors of this process open on ``path`` or its -wal / -shm files."""
    out = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            out += os.readlink(f"/proc/self/fd/{fd}").startswith(str(path))
        except OSError:
            pass
    return out


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("shuffle", [False, True])
def test_close_during_batches_closes_everything(tmp_path, monkeypatch, shuffle):
    """close() while a batches() iterator (and its prefetch thread) is alive: the iterator then
    raises, the thread ends and no connection to the file stays open; access after close
    names the closed dataset."""
    monkeypatch.setattr(batches_module, "GROUP_BYTES", 1)      # hand over batch by batch
    ds, _ = filled(tmp_path, 60)
    path = ds.files[0]
    it = ds.batches(2, shuffle=shuffle, seed=0)
    next(it)
    assert _open_files(path) > 0
    ds.close()
    with pytest.raises(ValueError, match="the dataset was closed while its batches were read"):
        for _ in it:
            pass
    del it
    gc.collect()
    assert prefetchers() == 0 and _open_files(path) == 0
    for access in (lambda: ds[0], lambda: len(ds), lambda: next(ds.batches(2))):
        with pytest.raises(ValueError, match="the dataset is closed"):
            access()


@pytest.mark.parametrize("kwargs, word", [
    ({"batch_size": 0}, "batch_size"), ({"batch_size": 2.0}, "batch_size"),
    ({"batch_size": 2, "shard": (2, 2)}, "shard"), ({"batch_size": 2, "shard": 1}, "shard"),
    ({"batch_size": 2, "prefetch": -1}, "prefetch"), ({"batch_size": 2, "device": "tpu"}, "tpu"),
    ({"batch_size": 2, "shuffle": True, "shard": (0, 2)}, "needs a seed"),
    ({"batch_size": 2, "window": 0}, "window"), ({"batch_size": 2, "window": 1.5}, "window"),
])
def test_bad_batches_arguments(tmp_path, kwargs, word):
    ds, _ = filled(tmp_path, 5)
    with pytest.raises(ValueError, match=word):
        ds.batches(**kwargs)


@pytest.mark.parametrize("kwargs, error", [
    ({"seed": -1}, ValueError), ({"seed": 1.5}, ValueError), ({"seed": "a"}, ValueError),
    ({"shuffle": "no"}, TypeError), ({"drop_last": "no"}, TypeError), ({"shuffle": 1}, TypeError),
])
def test_bad_batches_seed_and_flags(tmp_path, kwargs, error):
    ds, _ = filled(tmp_path, 5)
    word = next(iter(kwargs))
    with pytest.raises(error, match=f"ruda.data.Dataset.batches: expected {word} as "):
        ds.batches(2, **kwargs)
    assert len(list(ds.batches(2, shuffle=np.bool_(True), seed=np.int64(3)))) == 3


def test_reader_errors_reach_the_consumer(tmp_path, monkeypatch):
    ds, _ = filled(tmp_path, 20)
    it = ds.batches(5, prefetch=2)
    from ruda.data._store import Store

    def broken(self, *a, **k):
        raise rd.DatasetError("boom")
    monkeypatch.setattr(Store, "chunk", broken)
    with pytest.raises(rd.DatasetError, match="boom"):
        list(it)


def test_shard_folder_reads_the_union(tmp_path):
    folder = tmp_path / "shards"
    sizes, data = [5, 0, 12], make(17)
    start = 0
    for rank, n in enumerate(sizes):
        ds = rd.Dataset.create(rd.shard_path(folder, rank), SCHEMA)
        ds.extend({k: v[start:start + n] for k, v in data.items()})
        ds.close()
        start += n
    ds = rd.Dataset.open(folder)
    assert len(ds) == 17 and ds.counts() == {"train": 17} and len(ds.files) == 3
    assert_batch(ds[:], data, range(17))
    assert_batch(ds[[16, 0, 5, 4]], data, [16, 0, 5, 4])
    assert int(to_numpy(ds[5]["label"])) == 5
    got = sum(labels(ds.batches(4, shuffle=True, seed=1)), [])
    assert sorted(got) == list(range(17))
    late = rd.Dataset.open(rd.shard_path(folder, 1), "a")
    late.extend({k: v[:2] for k, v in make(2, start=17).items()})
    assert len(ds) == 19                        # shards in file order: the new ones come 6th, 7th
    assert to_numpy(ds[:]["label"]).tolist() == list(range(5)) + [17, 18] + list(range(5, 17))
    with pytest.raises(ValueError, match="shard folder"):
        rd.Dataset.open(folder, "a")


def test_shard_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no shard files"):
        rd.Dataset.open(tmp_path)
    rd.Dataset.create(rd.shard_path(tmp_path, 0), SCHEMA).close()
    rd.Dataset.create(rd.shard_path(tmp_path, 1), {"x": ("int8", ())}).close()
    with pytest.raises(rd.DatasetError, match="shard-00001.ruda.*schema"):
        rd.Dataset.open(tmp_path)
    with pytest.raises(ValueError, match="rank"):
        rd.shard_path(tmp_path, -1)


def test_import_numpy_npy_npz(tmp_path, capsys):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((50, 3)).astype(np.float32), np.arange(50)
    ds = rd.from_numpy(tmp_path / "a.ruda", {"x": x, "y": y}, progress=True)
    assert ds.schema == {"x": (xp.float32, (3,)), "y": (xp.int64, ())}
    np.testing.assert_array_equal(to_numpy(ds[:]["x"]), x)
    assert "100.0%" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    ds = rd.from_npy(tmp_path / "b.ruda", {"x": tmp_path / "x.npy", "y": tmp_path / "y.npy"},
                     progress=False)
    np.testing.assert_array_equal(to_numpy(ds[:]["y"]), y)
    rd.from_npy(tmp_path / "b.ruda", {"x": tmp_path / "x.npy", "y": tmp_path / "y.npy"},
                append=True, split="test")
    assert rd.Dataset.open(tmp_path / "b.ruda").counts() == {"train": 50, "test": 50}
    assert capsys.readouterr().err == ""
    np.savez(tmp_path / "z.npz", x=x, y=y, junk=np.zeros(2))
    ds = rd.from_npz(tmp_path / "c.ruda", tmp_path / "z.npz", fields=["x", "y"])
    np.testing.assert_array_equal(to_numpy(ds[7]["x"]), x[7])
    np.savez(tmp_path / "o.npz", x=np.array([None, 1], dtype=object))
    with pytest.raises(ValueError, match=r"ruda\.data\.from_npz: field 'x' of .*o\.npz.*pickle"):
        rd.from_npz(tmp_path / "d.ruda", tmp_path / "o.npz")
    np.save(tmp_path / "o.npy", np.array([None, 1], dtype=object))
    with pytest.raises(ValueError, match=r"ruda\.data\.from_npy: field 'y' \(.*o\.npy'\): .*objects"):
        rd.from_npy(tmp_path / "d.ruda", {"x": tmp_path / "x.npy", "y": tmp_path / "o.npy"})
    with pytest.raises(ValueError, match="'q' is not in"):
        rd.from_npz(tmp_path / "d.ruda", tmp_path / "z.npz", fields=["q"])
    with pytest.raises(ValueError, match="same number of records"):
        rd.from_numpy(tmp_path / "e.ruda", {"x": x, "y": y[:3]})
    with pytest.raises(ValueError, match="field 'y': expected dtype int32; got int64"):
        rd.from_numpy(tmp_path / "e.ruda", {"x": x, "y": y},
                      schema={"x": ("float32", (3,)), "y": ("int32", ())})
    assert not (tmp_path / "e.ruda").exists()


def test_cli_info_and_verify(tmp_path, capsys):
    ds, _ = filled(tmp_path, 25)
    ds.split("test").extend(make(4))
    ds.close()
    assert cli(["info", str(tmp_path / "d.ruda")]) == 0
    out = capsys.readouterr().out
    for words in ("ruda.data version 1", "image   uint8[3, 4, 4]", "label   int64[]",
                  "tokens  int32[None]", "train: 25 records", "test: 4 records", "KB"):
        assert words in out
    assert cli(["verify", str(tmp_path / "d.ruda")]) == 0
    assert "ok, train: 25 records, test: 4 records" in capsys.readouterr().out
    (tmp_path / "bad.ruda").write_bytes(b"not a dataset" * 100)
    assert cli(["info", str(tmp_path / "bad.ruda")]) == 1
    assert "not a ruda dataset" in capsys.readouterr().err
    assert cli(["info", str(tmp_path / "none.ruda")]) == 1
    assert cli([]) == 2
