"""Import from NumPy arrays and .npy/.npz files, in transactions of about 64 MiB."""
import os
import sys
import time

import numpy as np

from ruda.data import _schema
from ruda.data._dataset import Dataset

STEP_BYTES = 64 << 20


def from_numpy(path, arrays, *, schema=None, split="train", append=False, overwrite=False,
               progress=None):
    """A dataset (mode "a") holding ``arrays`` = {field: array with a leading record axis}.

    The schema defaults to each array's dtype and per-record shape.  ``append=True`` adds to
    an existing file's ``split`` instead of creating the file.  ``progress`` shows a bar on
    stderr (default: when stderr is a terminal).
    """
    fn = "ruda.data.from_numpy"
    if not isinstance(arrays, dict) or not arrays:
        raise ValueError(f"{fn}: expected arrays as a non-empty dict {{field: array}}; got "
                         f"{type(arrays).__name__}")
    for name, a in arrays.items():
        if not isinstance(a, np.ndarray) or a.ndim == 0:
            raise ValueError(f"{fn}: field {name!r}: expected a NumPy array with a leading record "
                             f"axis; got {type(a).__name__} {getattr(a, 'shape', '')}")
    _schema.check_batch(fn, _schema.parse(schema or _infer(arrays), fn),
                        {k: a[:0] for k, a in arrays.items()})
    lengths = {k: len(a) for k, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{fn}: expected the same number of records in every array; got "
                         f"{lengths}")
    if append:
        ds = Dataset.open(path, "a", split=split)
    else:
        ds = Dataset.create(path, schema or _infer(arrays), overwrite=overwrite, split=split)
    n = len(next(iter(arrays.values())))
    row = max(1, sum(a[:1].nbytes for a in arrays.values()))
    step = max(1, STEP_BYTES // row)
    bar = _Bar(n * row, sys.stderr.isatty() if progress is None else progress)
    for i in range(0, max(n, 1), step):
        ds.extend({k: np.ascontiguousarray(a[i:i + step]) for k, a in arrays.items()})
        bar.update(min(n, i + step) * row)
    bar.done()
    return ds


def _infer(arrays):
    return {k: (a.dtype, a.shape[1:]) for k, a in arrays.items()}


def from_npy(path, files, **kwargs):
    """Like from_numpy with {field: .npy file}, read through a memory map (never pickle)."""
    arrays = {}
    for k, f in files.items():
        try:
            arrays[k] = np.load(os.fspath(f), mmap_mode="r", allow_pickle=False)
        except ValueError as e:     # object dtypes (pickles), not an .npy file
            raise ValueError(f"ruda.data.from_npy: field {k!r} ({os.fspath(f)!r}): {e}") from None
    return from_numpy(path, arrays, **kwargs)


def from_npz(path, npz_file, *, fields=None, **kwargs):
    """Like from_numpy with the arrays of an .npz file (all, or ``fields``; never pickle)."""
    with np.load(os.fspath(npz_file), allow_pickle=False) as z:
        names = list(z.files) if fields is None else list(fields)
        missing = [f for f in names if f not in z.files]
        if missing:
            raise ValueError(f"ruda.data.from_npz: field {missing[0]!r} is not in {npz_file!r}; "
                             f"it holds {', '.join(z.files)}")
        arrays = {}
        for k in names:
            try:
                arrays[k] = z[k]
            except ValueError as e:     # object dtypes (pickles)
                raise ValueError(f"ruda.data.from_npz: field {k!r} of {npz_file!r}: {e}") from None
    return from_numpy(path, arrays, **kwargs)


class _Bar:
    """A one-line progress bar on stderr."""

    def __init__(self, total, show):
        self.total, self.show, self.start = max(total, 1), show, time.perf_counter()

    def update(self, done):
        if not self.show:
            return
        frac = min(done / self.total, 1.0)
        rate = done / max(time.perf_counter() - self.start, 1e-9) / 1e6
        sys.stderr.write(f"\rruda.data import [{'#' * int(30 * frac):<30}] {100 * frac:5.1f}% "
                         f"{done / 1e6:.0f}/{self.total / 1e6:.0f} MB {rate:.0f} MB/s")
        sys.stderr.flush()

    def done(self):
        if self.show:
            sys.stderr.write("\n")
