"""Fused nn kernels on the host (the names in ``ruda.backends.NN_KERNELS``; None where absent)."""
softmax = layer_norm = rms_norm = swiglu = apply_rope = sdpa = top_k = None
