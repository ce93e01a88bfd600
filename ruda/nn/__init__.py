"""ruda.nn: torch.nn.functional-like functions on ruda arrays, on every device."""
from ruda.nn._activations import (elu, gelu, glu, hardsigmoid, hardswish, leaky_relu, log_softmax,
                                  logsumexp, relu, relu6, sigmoid, silu, softmax, softplus, swiglu)
from ruda.nn._conv import (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, fold,
                           unfold)
from ruda.nn._layers import (add_linear, dropout, embedding, erf, linear, linear_swiglu, normalize,
                             one_hot, pad, rms_norm_linear)
from ruda.nn._norms import add_rms_norm, batch_norm, group_norm, layer_norm, rms_norm
from ruda.nn._attention import scaled_dot_product_attention
from ruda.nn._cache import KVCache
from ruda.nn._rope import apply_rope, rope_frequencies
from ruda.nn._sampling import filter_logits, sample, top_k
from ruda.nn._pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d,
                           adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d,
                           avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d)
from ruda.nn._interpolate import interpolate
from ruda.nn._quantized import QuantizedWeight

__all__ = [
    "add_linear", "add_rms_norm", "batch_norm", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
    "dropout", "fold", "unfold", "elu", "embedding", "erf", "gelu", "glu", "group_norm",
    "hardsigmoid", "hardswish", "layer_norm", "leaky_relu", "linear", "linear_swiglu", "log_softmax", "logsumexp",
    "normalize", "one_hot", "pad", "relu", "relu6", "rms_norm", "rms_norm_linear", "sigmoid", "silu", "softmax",
    "softplus", "swiglu",
    "KVCache", "apply_rope", "filter_logits", "rope_frequencies", "sample",
    "scaled_dot_product_attention", "top_k",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "interpolate", "max_pool1d", "max_pool2d",
    "max_pool3d",
    "QuantizedWeight",
]

# a PyTorch keyword (softmax(x, dim=-1)) gets the array API's spelling in its TypeError
from ruda import _hints  # noqa: E402

_hints.install_public(__all__, globals())
