"""Kernel source generators (pure code generation; no device access), one module per kind and
language (``<what>_<language>.py``); ruda/runtime/README.md says where each kind lives."""


def as_3d(v, fill):
    """A 1- to 3-tuple as 3 ints, leading axes ``fill``: the convolution generators see every
    convolution as 3-d (1-d and 2-d ones have leading axes of 1)."""
    return (fill,) * (3 - len(v)) + tuple(int(a) for a in v)
