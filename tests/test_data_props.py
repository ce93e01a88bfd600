"""ruda.data property tests with tiny chunk rows, so that every read crosses many of them."""
import itertools

import numpy as np
from hypothesis import given, strategies as st

import ruda.data as rd
import ruda.data._store as store
from test_data import SCHEMA, assert_batch, make

_names = itertools.count()


def small_chunks(monkeypatch):
    monkeypatch.setattr(store, "CHUNK_BYTES", 300)     # about 4 records of SCHEMA per row
    monkeypatch.setattr(store, "MERGE_BYTES", 150)


writes = st.lists(st.tuples(st.sampled_from(["append", "extend"]), st.integers(0, 25)),
                  min_size=1, max_size=8)


@given(writes=writes, seed=st.integers(0, 2 ** 16))
def test_writes_then_reads_match_the_oracle(tmp_path, monkeypatch, writes, seed):
    small_chunks(monkeypatch)
    total = sum(1 if how == "append" else k for how, k in writes)
    data, rng = make(total, seed), np.random.default_rng(seed)
    path = tmp_path / f"p{next(_names)}.ruda"
    ds, at = rd.Dataset.create(path, SCHEMA), 0
    for how, k in writes:
        if how == "append":
            ds.append({f: v[at] for f, v in data.items()})
            at += 1
        else:
            ds.extend({f: v[at:at + k] for f, v in data.items()})
            at += k
        assert len(ds) == at
    reader = rd.Dataset.open(path)
    assert len(reader) == total
    assert_batch(reader[:], data, range(total))
    if total:
        a, b = sorted(rng.integers(0, total + 1, 2))
        assert_batch(reader[a:b], data, range(a, b))
        idx = rng.integers(0, total, 12)
        assert_batch(reader[idx], data, idx.tolist())
        for i in idx[:4].tolist():
            assert_batch({f: [v] if f == "tokens" else v[None] for f, v in reader[i].items()},
                         data, [i])
    size = int(rng.integers(1, 9))
    for prefetch in (0, 2):
        got = list(reader.batches(size, shuffle=True, seed=seed, prefetch=prefetch))
        order = np.random.default_rng(seed).permutation(total)
        for j, batch in enumerate(got):
            assert_batch(batch, data, order[j * size:(j + 1) * size].tolist())
    assert reader.verify() == {"train": total}
