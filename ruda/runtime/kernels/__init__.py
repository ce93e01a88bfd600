"""Kernel source generators (pure code generation; no device access).

* :mod:`ruda.runtime.kernels.matmul_wgsl`: tiled WGSL matmul and its tuning candidates.
"""
