"""ruda.data: datasets of named tensors in SQLite, read back as ruda arrays on any device.

    ds = ruda.data.Dataset.create("cifar.ruda", {"image": ("uint8", (3, 32, 32)),
                                                 "label": ("int64", ())})
    ds.extend({"image": images, "label": labels})          # one transaction
    for batch in ruda.data.Dataset.open("cifar.ruda").batches(256, shuffle=True, seed=0):
        ...

See ``Dataset`` for durability and concurrency, ``ruda.data._store`` for the file format.
"""
from ruda.data._dataset import Dataset, shard_path  # noqa: F401
from ruda.data._schema import DatasetError  # noqa: F401
from ruda.data._import import from_npy, from_npz, from_numpy  # noqa: F401

__all__ = ["Dataset", "DatasetError", "from_npy", "from_npz", "from_numpy", "shard_path"]
