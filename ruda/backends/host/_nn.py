"""Fused nn kernels on the host (the names in ``ruda.backends.NN_KERNELS``; None where absent)."""
softmax = layer_norm = rms_norm = swiglu = None
from ruda.backends.host._nn_attention import apply_rope, sdpa, top_k  # noqa: E402,F401
