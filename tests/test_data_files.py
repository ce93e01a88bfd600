"""ruda.data: files that are not datasets, tampered, corrupted or truncated give DatasetError."""
import contextlib
import os
import shutil
import sqlite3
import subprocess

import numpy as np
import pytest

import ruda.data as rd
from ruda.data._cli import main as cli
from ruda.data._store import _meta_check
from conftest import to_numpy
from test_data import filled


def pristine(tmp_path, n=300):
    ds, data = filled(tmp_path, n, name="pristine.ruda")
    ds.close()
    return tmp_path / "pristine.ruda", data


def read_everything(path, data):
    """Read every record by every path; True if all equal the oracle (else an error raises)."""
    ds = rd.Dataset.open(path)
    try:
        n = len(data["label"])
        if len(ds) != n:
            return False
        got = [ds[:], ds[np.arange(n)[::-1].copy()]] + list(ds.batches(64, shuffle=True, seed=0))
        got += [{k: [v] if k == "tokens" else v[None] for k, v in ds[i].items()} for i in range(n)]
        order = [np.arange(n), np.arange(n)[::-1]] + \
            np.array_split(np.random.default_rng(0).permutation(n), range(64, n, 64)) + \
            [np.array([i]) for i in range(n)]
        for batch, idx in zip(got, order):
            if not (np.array_equal(to_numpy(batch["image"]), data["image"][idx]) and
                    np.array_equal(to_numpy(batch["label"]), data["label"][idx])):
                return False
            if not all(np.array_equal(to_numpy(t), data["tokens"][i])
                       for t, i in zip(batch["tokens"], idx)):
                return False
        ds.verify()
        return True
    finally:
        ds.close()


def test_not_a_dataset(tmp_path):
    (tmp_path / "noise").write_bytes(np.random.default_rng(0).bytes(70000))
    (tmp_path / "empty").write_bytes(b"")
    with sqlite3.connect(tmp_path / "other.db") as c:
        c.execute("CREATE TABLE meta(key, value)")
    for name in ("noise", "empty", "other.db"):
        with pytest.raises(rd.DatasetError, match="not a ruda dataset"):
            rd.Dataset.open(tmp_path / name)
    with sqlite3.connect(tmp_path / "other.db") as c:
        c.execute("PRAGMA application_id=1920295009")
    with pytest.raises(rd.DatasetError, match="not a ruda dataset"):
        rd.Dataset.open(tmp_path / "other.db")


def tampered(tmp_path, sql, *args):
    path, data = pristine(tmp_path)
    with sqlite3.connect(path) as c:
        c.execute(sql, args)
    c.close()
    return path, data


@pytest.mark.parametrize("sql, args, words", [
    ("UPDATE meta SET value='2' WHERE key='version'", (), "format version '2'"),
    ("UPDATE meta SET value='[' WHERE key='schema'", (), "meta table fails its checksum"),
    ("DELETE FROM meta WHERE key='format'", (), "not a ruda dataset .format tag None"),
    ("DELETE FROM meta WHERE key='check'", (), "meta table fails its checksum"),
    ("UPDATE splits SET count=count+1", (), "holds 300 records; its count says 301"),
    ("DELETE FROM c1 WHERE chunk=0", (), "corrupted"),
    ("UPDATE c1 SET n=n+1 WHERE chunk=0", (), "holds 301 records; its count says 300"),
    ("UPDATE c1 SET n=n-1 WHERE chunk=0", (), "holds 299 records; its count says 300"),
    ("UPDATE c1 SET chunk=5 WHERE chunk=0", (), "missing or malformed chunk rows"),
    ("UPDATE c1 SET f0=zeroblob(length(f0)) WHERE chunk=0", (), "fails its checksum"),
    ("UPDATE c1 SET f0=substr(f0, 1, 10) WHERE chunk=0", (), "fails its checksum"),
    ("UPDATE c1 SET crc=x'00' WHERE chunk=0", (), "fails its checksum"),
    ("UPDATE c1 SET f0='text' WHERE chunk=0", (), "corrupted"),
    ("UPDATE c1 SET n='7' WHERE chunk=0", (), "corrupted"),
    ("DROP TABLE c1", (), "no such table"),
])
def test_tampered_files(tmp_path, sql, args, words):
    path, data = tampered(tmp_path, sql, *args)
    with pytest.raises(rd.DatasetError, match=words):
        read_everything(path, data)


def test_newer_version_is_refused(tmp_path):
    path, _ = pristine(tmp_path)
    with sqlite3.connect(path) as c:
        meta = dict(c.execute("SELECT key, value FROM meta"))
        meta["version"] = "2"
        c.execute("UPDATE meta SET value=? WHERE key='version'", ("2",))
        c.execute("UPDATE meta SET value=? WHERE key='check'", (_meta_check(meta),))
    c.close()
    with pytest.raises(rd.DatasetError, match="format version '2'; this ruda reads version 1"):
        rd.Dataset.open(path)


def test_single_record_reads_check_their_chunk(tmp_path):
    path, data = tampered(tmp_path, "UPDATE c1 SET f0=zeroblob(length(f0)) WHERE chunk=0")
    ds = rd.Dataset.open(path)
    with pytest.raises(rd.DatasetError, match="checksum"):
        ds[3]
    with pytest.raises(rd.DatasetError, match="checksum"):
        list(ds.batches(10, shuffle=True, seed=0))


def test_byte_flips_give_an_error_or_the_right_values(tmp_path):
    """Flip one byte at a time, at up to 12 nonzero places per page: every read is right or
    raises DatasetError."""
    path, data = pristine(tmp_path)
    assert read_everything(path, data)
    raw = path.read_bytes()
    places = np.flatnonzero(np.frombuffer(raw, np.uint8))
    rng = np.random.default_rng(7)
    outcomes = {"error": 0, "right": 0}
    pages = [places[places // 65536 == p] for p in range(len(raw) // 65536)]
    for offset in np.concatenate([rng.choice(p, min(12, len(p)), replace=False) for p in pages]):
        bad = bytearray(raw)
        bad[offset] ^= 0xFF
        victim = tmp_path / f"flip{offset}.ruda"
        victim.write_bytes(bytes(bad))
        try:
            assert read_everything(victim, data), f"wrong values with byte {offset} flipped"
            outcomes["right"] += 1
        except rd.DatasetError:
            outcomes["error"] += 1
        except ValueError as e:       # a flipped split name: the split is reported missing
            assert "no split 'train'" in str(e)
            outcomes["error"] += 1
    assert outcomes["error"] >= 40, outcomes


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.8, 0.99])
def test_truncated_files(tmp_path, keep):
    path, data = pristine(tmp_path, 3000)
    raw = path.read_bytes()
    victim = tmp_path / "cut.ruda"
    victim.write_bytes(raw[:int(len(raw) * keep)])
    with pytest.raises(rd.DatasetError):
        read_everything(victim, data)


def test_wal_left_by_a_writer_is_recovered(tmp_path):
    """A writer that never closed leaves a -wal file: readers see every committed record."""
    ds, data = filled(tmp_path, 120)
    shutil.copy(tmp_path / "d.ruda", tmp_path / "copy.ruda")
    shutil.copy(tmp_path / "d.ruda-wal", tmp_path / "copy.ruda-wal")
    assert read_everything(tmp_path / "copy.ruda", data)


@contextlib.contextmanager
def read_only_copy(tmp_path, *files):
    """A read-only folder holding copies of ``files``: chmod 0555, or for root (whom that
    does not stop) a tmpfs remounted read-only; skipped where neither is possible."""
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = os.geteuid() == 0
    if mounted and subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(folder)],
                                  capture_output=True).returncode:
        pytest.skip("root without permission to mount a read-only tmpfs")
    try:
        for f in files:
            shutil.copy(f, folder / f.name)
        if mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        else:
            folder.chmod(0o555)
        yield folder
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        else:
            folder.chmod(0o755)


def test_read_only_folder_reads_in_mode_r(tmp_path, capsys):
    """WAL files need a -shm file beside them: a read-only folder is read as immutable."""
    path, data = pristine(tmp_path, 120)
    with read_only_copy(tmp_path, path) as folder:
        ro = folder / path.name
        assert read_everything(ro, data)
        with pytest.raises(PermissionError, match="mode 'r'"):
            rd.Dataset.open(ro, "a")
        with pytest.raises(PermissionError, match="ruda.data.Dataset.create.*read-only"):
            rd.Dataset.create(folder / "new.ruda", {"x": ("int8", ())})
        assert cli(["info", str(ro)]) == 0 and "train: 120 records" in capsys.readouterr().out
        assert sorted(p.name for p in folder.iterdir()) == [path.name]


def test_read_only_folder_with_commits_in_the_wal(tmp_path):
    """Immutable reads ignore a -wal file: one that holds commits is refused, not skipped."""
    ds, _ = filled(tmp_path, 20)
    with read_only_copy(tmp_path, tmp_path / "d.ruda", tmp_path / "d.ruda-wal") as folder:
        with pytest.raises(rd.DatasetError, match="-wal"):
            rd.Dataset.open(folder / "d.ruda")
    ds.close()
