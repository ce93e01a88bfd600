"""Bench cases of ruda.nn's convolution (group ``conv``): conv2d at ResNet and MobileNetV2 layer
shapes, batch 8, float32.

Contestants: ruda on each device (ruda.nn) against torch on its device (torch.nn.functional:
``torch:cpu`` on the host, ``torch`` on cuda); others have no convolution and are skipped.
The cpu target: each within 1.5x of torch CPU.
"""
import numpy as np

from ruda.bench._case import Case
from ruda.bench._libs import Skip

GROUP = "conv"

# (op label, x shape (N taken from the batch), weight shape, conv2d keywords)
SHAPES = [
    ("conv2d 3x3 64->64", (64, 56, 56), (64, 64, 3, 3), dict(padding=1)),
    ("conv2d 3x3 128->128", (128, 28, 28), (128, 128, 3, 3), dict(padding=1)),
    ("conv2d 3x3 s2 3->32", (3, 224, 224), (32, 3, 3, 3), dict(stride=2, padding=1)),
    ("conv2d 1x1 144->24", (144, 56, 56), (24, 144, 1, 1), {}),
    ("depthwise 3x3 32ch", (32, 112, 112), (32, 1, 3, 3), dict(padding=1, groups=32)),
    ("depthwise 3x3 s2 144ch", (144, 56, 56), (144, 1, 3, 3), dict(stride=2, padding=1,
                                                                    groups=144)),
    ("depthwise 3x3 960ch", (960, 7, 7), (960, 1, 3, 3), dict(padding=1, groups=960)),
]


def _rng():
    return np.random.default_rng(0)


def _make(xs, ws, kw, dt):
    def make(c):
        if c.kind not in ("ruda", "torch"):
            raise Skip(f"{c.kind} has no convolution")
        x = c.put(_rng().standard_normal(xs, dtype=np.float32), dt)
        w = c.put(_rng().standard_normal(ws, dtype=np.float32) * 0.1, dt)
        b = c.put(_rng().standard_normal(ws[0], dtype=np.float32), dt)
        if c.kind == "torch":
            f = c.ns.nn.functional.conv2d
        else:
            import ruda.nn
            f = ruda.nn.conv2d
        return lambda: f(x, w, b, **kw)
    return make


def cases(quick=False, sizes=None):
    n = 1 if quick else 8
    out = []
    for op, xs, ws, kw in SHAPES:
        xs = (n,) + xs
        s = kw.get("stride", 1)
        L = (xs[2] // s) * (xs[3] // s)
        flops = 2 * n * ws[0] * ws[1] * ws[2] * ws[3] * L
        out.append(Case(GROUP, op, "x".join(map(str, xs)), "float32",
                        _make(xs, ws, kw, "float32"), flops=flops, elements=int(np.prod(xs))))
    return out
