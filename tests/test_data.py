"""ruda.data: round trips, indexing, splits, bad input (oracle: the NumPy arrays written)."""
import os
import pickle
import sqlite3
import threading

import numpy as np
import pytest

import ruda as xp
import ruda.data as rd
import ruda.data._store as store_module
from ruda.data._schema import DTYPES
from conftest import to_numpy

SCHEMA = {"image": ("uint8", (3, 4, 4)), "label": ("int64", ()), "tokens": ("int32", (None,))}


def make(n, seed=0, start=0):
    """n records of SCHEMA: label = index, tokens of length index % 5."""
    rng = np.random.default_rng(seed)
    return {"image": rng.integers(0, 256, (n, 3, 4, 4), dtype=np.uint8),
            "label": np.arange(start, start + n, dtype=np.int64),
            "tokens": [rng.integers(-9, 9, i % 5, dtype=np.int32) for i in range(start, start + n)]}


def filled(tmp_path, n=300, name="d.ruda"):
    data = make(n)
    ds = rd.Dataset.create(tmp_path / name, SCHEMA)
    ds.extend({k: v[:n // 2] for k, v in data.items()})
    ds.extend({k: v[n // 2:] for k, v in data.items()})
    return ds, data


def assert_batch(batch, data, idx):
    assert set(batch) == set(data)
    for k, v in data.items():
        if isinstance(v, list):
            assert len(batch[k]) == len(idx)
            for got, i in zip(batch[k], idx):
                assert got.dtype == v[i].dtype and np.array_equal(to_numpy(got), v[i])
        else:
            assert batch[k].dtype == v.dtype
            np.testing.assert_array_equal(to_numpy(batch[k]), v[np.asarray(idx, np.int64)])


def random_values(rng, dt, shape):
    if dt == xp.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    raw = rng.standard_normal(shape) * 1e3
    if dt.kind == "c":
        raw = raw + 1j * rng.standard_normal(shape)
    out = raw.astype(dt)
    out.reshape(-1)[:1] = np.nan if dt.kind != "c" else complex(np.nan, np.inf)
    return out


@pytest.mark.parametrize("name", list(DTYPES))
def test_round_trip_every_dtype(tmp_path, name):
    dt = DTYPES[name]
    rng = np.random.default_rng(1)
    fixed, scalar = random_values(rng, dt, (7, 2, 3)), random_values(rng, dt, (7,))
    ragged = [random_values(rng, dt, (i, 2)) for i in range(7)]
    schema = {"a": (name, (2, 3)), "s": (dt, ()), "v": (name, (None, 2))}
    ds = rd.Dataset.create(tmp_path / "t.ruda", schema)
    ds.extend({"a": fixed[:4], "s": scalar[:4], "v": ragged[:4]})
    for i in range(4, 7):
        ds.append({"a": fixed[i], "s": scalar[i], "v": ragged[i]})
    ds.close()
    ds = rd.Dataset.open(tmp_path / "t.ruda")
    assert ds.schema == {"a": (dt, (2, 3)), "s": (dt, ()), "v": (dt, (None, 2))}
    for i in range(7):
        rec = ds[i]
        for key, want in (("a", fixed[i]), ("s", scalar[i]), ("v", ragged[i])):
            got = to_numpy(rec[key])
            assert got.dtype == dt and got.shape == want.shape
            assert got.tobytes() == want.tobytes()       # bit-exact, NaN payloads included
    batch = ds[:]
    assert to_numpy(batch["a"]).tobytes() == fixed.tobytes()
    assert to_numpy(batch["s"]).tobytes() == scalar.tobytes()
    assert [to_numpy(v).tobytes() for v in batch["v"]] == [r.tobytes() for r in ragged]


def test_indexing_matches_numpy(tmp_path):
    ds, data = filled(tmp_path)
    n = len(ds)
    assert n == 300
    for i in (0, 1, 149, 150, 299, -1, -300, np.int64(7)):
        rec = ds[i]
        j = int(i) % n
        assert rec["label"].shape == () and int(to_numpy(rec["label"])) == j
        np.testing.assert_array_equal(to_numpy(rec["image"]), data["image"][j])
        np.testing.assert_array_equal(to_numpy(rec["tokens"]), data["tokens"][j])
    for s in (slice(10, 20), slice(140, 160), slice(None), slice(5, 250, 7), slice(-5, None),
              slice(20, 10), slice(299, None, -3)):
        assert_batch(ds[s], data, list(range(n))[s])
    rng = np.random.default_rng(3)
    idx = rng.integers(-n, n, 40)
    for key in (idx, idx.tolist(), xp.asarray(idx), np.array([], np.int64)):
        assert_batch(ds[key], data, (np.asarray(idx if len(key) else []) % n).tolist())
    mask = rng.random(n) < 0.3
    assert_batch(ds[mask], data, np.flatnonzero(mask).tolist())


def needs(device, *names):
    have = xp.__array_namespace_info__().dtypes(device=device)
    missing = [n for n in names if n not in have]
    if missing:
        pytest.skip(f"{device} has no {', '.join(missing)}")


def test_read_device(tmp_path, device):
    needs(device, "uint8", "int64", "int32")
    ds, data = filled(tmp_path, 40)
    with xp.default_device(device):
        rec, batch = ds[3], ds[5:9]
    assert rec["image"].device == device and batch["label"].device == device
    assert all(t.device == device for t in batch["tokens"])
    assert_batch(batch, data, range(5, 9))


def test_write_from_device_arrays(tmp_path, device):
    needs(device, "uint8", "int64", "int32")
    data = make(10)
    ds = rd.Dataset.create(tmp_path / "d.ruda", SCHEMA)
    ds.extend({"image": xp.asarray(data["image"], device=device),
               "label": xp.asarray(data["label"], device=device),
               "tokens": [xp.asarray(t, device=device) for t in data["tokens"]]})
    assert_batch(ds[:], data, range(10))


def test_bad_indices(tmp_path):
    ds, _ = filled(tmp_path, 10)
    for key in (10, -11, [0, 10], np.array([-11]), np.zeros(9, bool)):
        with pytest.raises(IndexError):
            ds[key]
    for key in ("a", 1.5, [0.5], None):
        with pytest.raises(TypeError):
            ds[key]
    with pytest.raises(IndexError, match="1-D"):
        ds[np.zeros((2, 2), np.int64)]
    with pytest.raises(TypeError, match=r"got tuple \(records have one index: a list takes"):
        ds[1, 2]                           # NumPy reads a tuple as one index per axis


def test_zero_d_integer_arrays_index_as_ints(tmp_path):
    """A 0-d integer array (an argmax) indexes one record, as NumPy's a[np.array(3)] does."""
    ds, data = filled(tmp_path, 10)
    scores = xp.asarray([0.5, 2.0, 9.0, 1.0])
    for key, j in ((xp.argmax(scores), 2), (np.array(3), 3), (xp.asarray(-1), 9),
                   (np.array(7, np.uint8), 7), (xp.asarray(np.int32(4)), 4)):
        rec = ds[key]
        assert rec["label"].shape == () and int(to_numpy(rec["label"])) == j
        np.testing.assert_array_equal(to_numpy(rec["image"]), data["image"][j])
        np.testing.assert_array_equal(to_numpy(rec["tokens"]), data["tokens"][j])
    with pytest.raises(IndexError, match="out of range"):
        ds[xp.asarray(10)]
    for key in (np.array(True), xp.asarray(1.0)):      # no index of one record
        with pytest.raises(IndexError, match="1-D"):
            ds[key]


def test_many_appends_merge_into_few_chunks(tmp_path):
    data = make(200)
    ds = rd.Dataset.create(tmp_path / "d.ruda", SCHEMA)
    for i in range(200):
        ds.append({k: v[i] for k, v in data.items()})
        if i % 37 == 0:
            assert_batch(ds[:], data, range(i + 1))
    ds.close()
    with sqlite3.connect(tmp_path / "d.ruda") as conn:
        rows = conn.execute("SELECT count(*) FROM c1").fetchone()[0]
    assert rows < 20
    assert_batch(rd.Dataset.open(tmp_path / "d.ruda")[:], data, range(200))


def test_splits(tmp_path):
    train, data = filled(tmp_path, 20)
    test = train.split("test")
    extra = make(5, seed=9)
    test.extend(extra)
    assert train.splits == ("train", "test") and len(test) == 5 and len(train) == 20
    train.close()
    ds = rd.Dataset.open(tmp_path / "d.ruda", split="test")
    assert ds.split_name == "test" and ds.counts() == {"train": 20, "test": 5}
    assert_batch(ds[:], extra, range(5))
    assert_batch(ds.split("train")[:], data, range(20))
    with pytest.raises(ValueError, match="no split 'valid'"):
        rd.Dataset.open(tmp_path / "d.ruda", split="valid")
    with pytest.raises(ValueError, match="no split 'valid'"):
        ds.split("valid")
    appender = rd.Dataset.open(tmp_path / "d.ruda", "a", split="valid")
    assert len(appender) == 0 and "valid" in appender.splits


def test_views_sharing_a_connection_see_each_others_writes(tmp_path):
    """Split views share one SQLite connection, whose own commits its data_version misses."""
    ds = rd.Dataset.create(tmp_path / "d.ruda", {"i": ("int64", ())})
    view = ds.split("train")
    assert len(view) == 0
    ds.extend({"i": np.arange(10)})
    assert len(ds) == 10 and len(view) == 10 and view.counts() == {"train": 10}
    got = [to_numpy(b["i"]) for b in view.batches(4)]
    np.testing.assert_array_equal(np.concatenate(got), np.arange(10))
    test, test2 = ds.split("test"), ds.split("test")
    assert len(test2) == 0
    test.extend({"i": np.arange(3)})
    test.append({"i": 7})                                   # merged into the tail row
    assert len(test2) == 4 and to_numpy(test2[:]["i"]).tolist() == [0, 1, 2, 7]
    assert int(to_numpy(test2[3]["i"])) == 7 and to_numpy(view[9]["i"]) == 9


def test_variable_field_given_as_one_array(tmp_path):
    ds = rd.Dataset.create(tmp_path / "d.ruda", {"v": ("float32", (None, 3))})
    arr = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    ds.extend({"v": arr})
    ds.append({"v": np.zeros((0, 3), np.float32)})
    got = ds[:]["v"]
    assert [to_numpy(g).shape for g in got] == [(4, 3), (4, 3), (0, 3)]
    np.testing.assert_array_equal(to_numpy(got[1]), arr[1])


def test_python_values_fill_fields(tmp_path):
    ds = rd.Dataset.create(tmp_path / "d.ruda", {"x": ("float32", (2,)), "y": ("uint8", ())})
    ds.append({"x": [1.5, 2.0], "y": 7})
    ds.extend({"x": [[0.0, 1.0]], "y": [255]})
    b = ds[:]
    assert b["x"].dtype == xp.float32 and b["y"].dtype == xp.uint8
    np.testing.assert_array_equal(to_numpy(b["x"]), [[1.5, 2.0], [0.0, 1.0]])
    np.testing.assert_array_equal(to_numpy(b["y"]), [7, 255])


def test_python_floats_that_overflow_the_field_raise(tmp_path):
    ds = rd.Dataset.create(tmp_path / "d.ruda", {"x": ("float32", (2,)), "b": ("bfloat16", ()),
                                                 "c": ("complex64", ())})
    good = {"x": [1.0, 2.0], "b": 1.0, "c": 1j}
    for change in ({"x": [1e300, 1.0]}, {"b": -1e300}, {"c": 1e300j}):
        with pytest.raises(ValueError) as e:
            ds.append({**good, **change})
        for w in ["ruda.data.Dataset.append", repr(next(iter(change))), "does not fit", "1e+300"]:
            assert w in str(e.value)
        with pytest.raises(ValueError, match="ruda.data.Dataset.extend.*does not fit"):
            ds.extend({k: [v] for k, v in {**good, **change}.items()})
    assert len(ds) == 0
    ds.append({"x": [np.inf, np.nan], "b": -np.inf, "c": complex(np.inf, 0)})   # given as such
    ds.append({"x": [3.4e38, -3.4e38], "b": 3.3e38, "c": 3.4e38 + 0j})        # finite, fits
    got = ds[:]
    x, b = to_numpy(got["x"]), to_numpy(got["b"]).astype(np.float64)
    assert got["x"].dtype == xp.float32 and got["b"].dtype == xp.bfloat16
    np.testing.assert_array_equal(x, np.array([[np.inf, np.nan], [3.4e38, -3.4e38]], np.float32))
    assert b[0] == -np.inf and np.isfinite(b[1]) and np.isfinite(x[1]).all()
    np.testing.assert_array_equal(to_numpy(got["c"]), np.array([np.inf, 3.4e38], np.complex64))


def test_python_ints_fill_floating_fields(tmp_path):
    """Python data converts as NumPy's same_kind casting allows (ints and bools into float
    and complex fields, floats into complex ones); arrays still need the field's dtype."""
    schema = {"f": ("float32", (2,)), "b": ("bfloat16", ()), "c": ("complex64", (None,)),
              "d": ("float64", ())}
    ds = rd.Dataset.create(tmp_path / "d.ruda", schema)
    ds.append({"f": [1, 2], "b": 3, "c": [1, 2.5], "d": 2 ** 53 + 1})
    ds.extend({"f": [[True, False]], "b": [-7], "c": [[4]], "d": [False]})
    got = ds[:]
    want = {"f": np.array([[1, 2], [True, False]], np.float32),
            "b": np.array([3, -7], np.float64).astype(xp.bfloat16),
            "c": [np.array([1, 2.5], np.complex64), np.array([4], np.complex64)],
            "d": np.array([2 ** 53 + 1, False], np.float64)}   # 2**53 + 1 rounds, as in NumPy
    for k in ("f", "b", "d"):
        assert got[k].dtype == DTYPES[schema[k][0]]
        np.testing.assert_array_equal(to_numpy(got[k]), want[k])
    for g, w in zip(got["c"], want["c"]):
        assert g.dtype == xp.complex64 and np.array_equal(to_numpy(g), w)
    for value in (np.array([1, 2]), xp.asarray([1, 2]), np.array([1, 2], np.float64)):
        with pytest.raises(ValueError, match="field 'f': expected dtype float32; got"):
            ds.append({"f": value, "b": 1, "c": [1], "d": 1})
    assert len(ds) == 2


def test_big_endian_arrays_fill_fields_of_their_type(tmp_path):
    """NumPy's >f4 is float32 in the other byte order: it fills a float32 field, stored
    little-endian, by every way of writing; a different type stays refused."""
    x = np.arange(6, dtype=">f4").reshape(3, 2) / 3
    y = np.array([-1, 2 ** 40, 3], ">i8")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    files = {"x": tmp_path / "x.npy", "y": tmp_path / "y.npy"}
    schema = {"x": ("float32", (2,)), "y": ("int64", ())}
    for kwargs in ({}, {"schema": schema}):
        ds = rd.from_npy(tmp_path / "a.ruda", files, overwrite=True, **kwargs)
        rd.from_numpy(tmp_path / "a.ruda", {"x": x, "y": y}, append=True)
        assert ds.schema == {"x": (xp.float32, (2,)), "y": (xp.int64, ())}
        got = ds[:]
        assert got["x"].dtype == xp.float32 and got["y"].dtype == xp.int64
        np.testing.assert_array_equal(to_numpy(got["x"]), np.concatenate([x, x]))
        np.testing.assert_array_equal(to_numpy(got["y"]), np.concatenate([y, y]))
    ds = rd.Dataset.create(tmp_path / "b.ruda", {"v": ("complex64", (None,)), "s": ("uint16", ())})
    v = [np.array([1 + 2j, -3j], ">c8"), np.array([], ">c8")]
    ds.extend({"v": v, "s": np.array([1, 65535], ">u2")})
    ds.append({"v": v[0], "s": np.array(258, ">u2")})
    got = ds[:]
    for g, w in zip(got["v"], v + v[:1]):
        assert g.dtype == xp.complex64 and np.array_equal(to_numpy(g), w)
    assert got["s"].dtype == xp.uint16 and to_numpy(got["s"]).tolist() == [1, 65535, 258]
    with pytest.raises(ValueError, match="field 's': expected dtype uint16; got >i2"):
        ds.append({"v": v[0], "s": np.array(1, ">i2")})
    assert len(ds) == 3


BAD_BATCHES = [  # (change to a good batch, words the message must hold)
    (lambda b: b.pop("label"), ["'label'", "missing", "image, label, tokens"]),
    (lambda b: b.update(extra=np.zeros(3)), ["'extra'", "not in the schema"]),
    (lambda b: b.update(label=b["label"].astype(np.int32)), ["'label'", "int64", "int32"]),
    (lambda b: b.update(image=b["image"].astype(np.float32)), ["'image'", "uint8", "float32"]),
    (lambda b: b.update(image=b["image"][:, :2]), ["'image'", "(3, 4, 4)", "(2, 4, 4)"]),
    (lambda b: b.update(label=b["label"][:, None]), ["'label'", "()", "(1,)"]),
    (lambda b: b.update(label=b["label"][:3]), ["same batch length", "label: 3"]),
    (lambda b: b.update(tokens=[np.zeros((2, 2), np.int32)] * 4), ["'tokens'", "(None,)",
                                                                     "(2, 2)"]),
    (lambda b: b.update(tokens=[np.zeros(2, np.int64)] * 4), ["'tokens'", "int32", "int64"]),
    (lambda b: b.update(label=np.int64(3)), ["'label'", "leading batch axis"]),
    (lambda b: b.update(label=[1.5] * 4), ["'label'", "int64", "float64"]),
    (lambda b: b.update(image=[["a"]] * 4), ["'image'", "uint8"]),
]


@pytest.mark.parametrize("change, words", BAD_BATCHES)
def test_bad_batches_raise_and_write_nothing(tmp_path, change, words):
    ds, data = filled(tmp_path, 6)
    batch = {k: v[:4] for k, v in make(4).items()}
    change(batch)
    with pytest.raises(ValueError) as e:
        ds.extend(batch)
    assert "ruda.data.Dataset.extend" in str(e.value)
    for w in words:
        assert w in str(e.value)
    assert len(ds) == 6
    assert_batch(rd.Dataset.open(tmp_path / "d.ruda")[:], data, range(6))


BAD_RECORDS = [
    ({"image": np.zeros((3, 4, 4), np.uint8), "label": 1}, ["'tokens'", "missing"]),
    ({"image": np.zeros((4, 4), np.uint8), "label": 1, "tokens": [1]},
     ["'image'", "(3, 4, 4)", "(4, 4)"]),
    ({"image": np.zeros((3, 4, 4), np.uint8), "label": 2 ** 70, "tokens": [1]},
     ["'label'", "int64"]),
    ({"image": np.zeros((3, 4, 4), np.uint8), "label": 1, "tokens": [300.5]},
     ["'tokens'", "int32", "float64"]),
    ([1, 2], ["a dict"]),
]


@pytest.mark.parametrize("record, words", BAD_RECORDS)
def test_bad_records_raise_and_write_nothing(tmp_path, record, words):
    ds, _ = filled(tmp_path, 6)
    with pytest.raises(ValueError) as e:
        ds.append(record)
    for w in ["ruda.data.Dataset.append"] + words:
        assert w in str(e.value)
    assert len(ds) == 6 and len(rd.Dataset.open(tmp_path / "d.ruda")) == 6


@pytest.mark.parametrize("schema, words", [
    ({}, ["non-empty dict"]),
    ({"x": ("float128", ())}, ["'x'", "float128", "float16, bfloat16"]),
    ({"x": ("int8", (2, -1))}, ["'x'", "(2, -1)"]),
    ({"x": ("int8", 3)}, ["'x'", "shape"]),
    ({"x": "int8"}, ["'x'", "(dtype, shape)"]),
    ({"": ("int8", ())}, ["non-empty strings"]),
    ([("x", ("int8", ()))], ["dict"]),
    ({"x": ("uint8", (10 ** 9 + 1,))}, ["'x'", "1,000,000,001 bytes", "one SQLite row"]),
])
def test_bad_schemas(tmp_path, schema, words):
    with pytest.raises(ValueError) as e:
        rd.Dataset.create(tmp_path / "d.ruda", schema)
    for w in ["ruda.data.Dataset.create"] + words:
        assert w in str(e.value)
    assert not (tmp_path / "d.ruda").exists()


def test_a_record_over_sqlites_length_limit_is_refused_and_nothing_written(tmp_path,
                                                                           monkeypatch):
    """SQLite holds at most SQLITE_LIMIT_LENGTH bytes (1e9) in a value and in a row: a record
    over it is refused naming it, the file stays whole.  The limit is lowered on the
    dataset's connection so that the test writes kilobytes, not a gigabyte."""
    ds, data = filled(tmp_path, 6)
    ds._stores[0].conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 4000)
    batch = make(3, seed=5, start=6)
    batch["tokens"][1] = np.zeros(2000, np.int32)                 # 8,000 bytes
    with pytest.raises(ValueError) as e:
        ds.extend(batch)
    assert not isinstance(e.value, rd.DatasetError)
    for w in ["record 1 of the 3", "field 'tokens': 8,000", "one SQLite row", "nothing was written"]:
        assert w in str(e.value)
    assert len(ds) == 6
    monkeypatch.setattr(store_module, "_row_room", lambda conn, columns: 10 ** 9)
    with pytest.raises(ValueError, match="too big for SQLite .*nothing was written") as e:
        ds.extend(batch)                                            # SQLite's own refusal
    assert not isinstance(e.value, rd.DatasetError) and "corrupt" not in str(e.value)
    assert len(ds) == 6 and ds.verify() == {"train": 6}
    monkeypatch.undo()
    more = make(60, seed=6, start=6)                               # rows cut within the limit
    ds.extend(more)
    ds.close()
    with sqlite3.connect(tmp_path / "d.ruda") as conn:
        assert conn.execute("SELECT max(bytes) FROM c1").fetchone()[0] < 4000
    whole = {k: list(v) + list(more[k]) if k == "tokens" else np.concatenate([v, more[k]])
             for k, v in data.items()}
    assert_batch(rd.Dataset.open(tmp_path / "d.ruda")[:], whole, range(66))


def test_open_and_create_errors(tmp_path):
    ds, _ = filled(tmp_path, 3)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        rd.Dataset.create(tmp_path / "d.ruda", SCHEMA)
    with pytest.raises(FileNotFoundError):
        rd.Dataset.open(tmp_path / "missing.ruda")
    with pytest.raises(ValueError, match="mode"):
        rd.Dataset.open(tmp_path / "d.ruda", "w")
    reader = rd.Dataset.open(tmp_path / "d.ruda")
    with pytest.raises(ValueError, match="mode='a'"):
        reader.append({k: v[0] for k, v in make(1).items()})
    fresh = rd.Dataset.create(tmp_path / "d.ruda", {"x": ("int8", ())}, overwrite=True)
    assert len(fresh) == 0 and fresh.schema == {"x": (xp.int8, ())}
    assert fresh[:]["x"].shape == (0,) and fresh[:]["x"].dtype == xp.int8
    assert list(fresh.batches(4)) == [] and fresh.verify() == {"train": 0}


def test_create_path_errors_leave_no_file(tmp_path, monkeypatch):
    schema = {"x": ("int8", ())}
    missing = tmp_path / "no" / "d.ruda"
    with pytest.raises(FileNotFoundError) as e:
        rd.Dataset.create(missing, schema)
    assert "ruda.data.Dataset.create" in str(e.value) and repr(str(missing.parent)) in str(e.value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="ruda.data.Dataset.create: expected a non-empty path"):
        rd.Dataset.create("", schema)
    with pytest.raises(TypeError, match="ruda.data.Dataset.create: expected path as a str, "
                                        "bytes or os.PathLike; got int"):
        rd.Dataset.create(3, schema)
    with pytest.raises(ValueError, match="ruda.data.Dataset.open: expected a non-empty path"):
        rd.Dataset.open(b"")
    assert list(tmp_path.iterdir()) == []
    ds = rd.Dataset.create(bytes(tmp_path / "b.ruda"), schema)      # bytes as os.fsencode gives
    ds.append({"x": 5})
    ds.close()
    assert [p.name for p in tmp_path.iterdir()] == ["b.ruda"]
    assert to_numpy(rd.Dataset.open(b"b.ruda")[:]["x"]).tolist() == [5]
    assert rd.shard_path(b"shards", 1) == os.path.join("shards", "shard-00001.ruda")


def test_a_failed_create_leaves_no_temporary_file(tmp_path, monkeypatch):
    def fail(*args):
        raise OSError("No space left on device")
    monkeypatch.setattr(store_module.os, "replace", fail)
    with pytest.raises(OSError, match="No space"):
        rd.Dataset.create(tmp_path / "d.ruda", {"x": ("int8", ())})
    assert list(tmp_path.iterdir()) == []


def test_another_thread_gets_a_clear_error(tmp_path):
    ds, data = filled(tmp_path, 5)
    errors = []

    def use():
        for name, call in [("__getitem__", lambda: ds[0]), ("__len__", lambda: len(ds)),
                           ("batches", lambda: ds.batches(2)), ("counts", ds.counts),
                           ("extend", lambda: ds.extend(make(1))), ("close", ds.close)]:
            with pytest.raises(RuntimeError) as e:
                call()
            errors.append((name, str(e.value)))
        errors.append(repr(ds))                                # never raises
    t = threading.Thread(target=use)
    t.start()
    t.join()
    assert len(errors) == 7 and "opened in another thread" in errors[-1]
    for name, message in errors[:-1]:
        assert f"ruda.data.Dataset.{name}" in message and "open it" in message
        assert "in the thread that uses it" in message
    assert_batch(ds[:], data, range(5))                 # still works in its own thread


def test_pickle_reopens_path_mode_and_split(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ds, data = filled(tmp_path, 6)
    test = ds.split("test")
    test.extend(make(2))
    copy = pickle.loads(pickle.dumps(test))
    assert (copy.path, copy.mode, copy.split_name) == (str(tmp_path / "d.ruda"), "a", "test")
    assert_batch(copy[:], make(2), range(2))
    reader = pickle.loads(pickle.dumps(rd.Dataset.open("d.ruda")))
    assert reader.mode == "r" and reader.split_name == "train"
    assert_batch(reader[:], data, range(6))
    copy.close()
    assert "closed" in repr(copy)
    with pytest.raises(ValueError, match="closed"):
        pickle.dumps(copy)


def test_repr_of_a_closed_dataset(tmp_path):
    ds, _ = filled(tmp_path, 3)
    view = ds.split("train")
    assert repr(ds).startswith("Dataset(") and "3 records" in repr(ds)
    ds.close()
    assert "closed" in repr(ds) and "closed" in repr(view)


def test_every_access_after_close_raises(tmp_path):
    """Records cached before close() are not served after it: every access raises."""
    ds, data = filled(tmp_path, 10)
    view = ds.split("train")
    assert_batch(ds[1:3], data, [1, 2])
    assert int(to_numpy(ds[0]["label"])) == 0 and int(to_numpy(view[1]["label"])) == 1
    it = ds.batches(2, prefetch=0)
    next(it)
    ds.close()
    for access in (lambda: ds[0], lambda: ds[np.int64(1)], lambda: view[1], lambda: ds[1:3],
                   lambda: ds[[0, 1]], lambda: len(ds), ds.counts, lambda: ds.splits,
                   ds.verify, lambda: ds.batches(2), lambda: ds.split("test"),
                   lambda: ds.append({k: v[0] for k, v in make(1).items()})):
        with pytest.raises(ValueError, match="the dataset is closed"):
            access()
    with pytest.raises(ValueError, match="closed"):
        next(it)
    ds.close()                                      # closing again is harmless, as for files
    assert ds.schema == rd.Dataset.open(tmp_path / "d.ruda").schema


def test_a_reader_in_the_same_process_sees_new_records(tmp_path):
    ds, data = filled(tmp_path, 10)
    reader = rd.Dataset.open(tmp_path / "d.ruda")
    assert int(to_numpy(reader[9]["label"])) == 9          # holds the tail row open
    more = make(3, seed=4, start=10)
    for i in range(3):                                       # merged into the tail row
        ds.append({k: v[i] for k, v in more.items()})
    rec = reader[12]                                         # past the known end: looks again
    assert int(to_numpy(rec["label"])) == 12
    np.testing.assert_array_equal(to_numpy(rec["tokens"]), more["tokens"][2])
    assert len(reader) == 13 and to_numpy(reader[:]["label"]).tolist() == list(range(13))


def test_variable_records_with_empty_and_long_axes(tmp_path):
    ds = rd.Dataset.create(tmp_path / "d.ruda", {"m": ("int8", (None, None))})
    shapes = [(0, 10 ** 6), (10 ** 6, 0), (3, 2), (0, 0)]
    values = [np.arange(np.prod(s), dtype=np.int8).reshape(s) for s in shapes]
    ds.extend({"m": values})
    for i, v in enumerate(values):
        got = to_numpy(ds[i]["m"])
        assert got.shape == v.shape and np.array_equal(got, v)
    assert [to_numpy(x).shape for x in ds[:]["m"]] == shapes
