import numpy as np


def empty_pinned(shape, dtype=float):
    return np.empty(shape, dtype)
