"""torchvision's MobileNetV2 (ImageNet, width 1.0) in plain torch.nn, the oracle of
tests/test_mobilenet.py (torchvision cannot be installed beside the CPU torch).

Written from torchvision's documented structure, with its module names, so that its checkpoint
loads with ``strict=True``: ``features.0`` = Conv(3 -> 32, 3x3, stride 2) + BN + ReLU6;
``features.1`` to ``features.17`` inverted residual blocks, each ``.conv`` a Sequential of an
optional 1x1 expansion (Conv + BN + ReLU6, absent when the expansion ratio is 1), a 3x3 depthwise
Conv + BN + ReLU6, then a 1x1 projection Conv and its BN (no activation), with the input added
when the stride is 1 and the channel counts match; ``features.18`` = 1x1 Conv(320 -> 1280) + BN +
ReLU6; global average pooling; ``classifier`` = Dropout(0.2), Linear(1280, 1000).
"""
import torch
from torch import nn

# expansion t, output channels c, repeats n, first stride s (torchvision's table)
CONFIG = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]


def _conv_bn_relu6(cin, cout, k, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=False))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, t):
        super().__init__()
        hidden = int(round(cin * t))
        self.residual = stride == 1 and cin == cout
        layers = [] if t == 1 else [_conv_bn_relu6(cin, hidden, 1)]
        layers += [_conv_bn_relu6(hidden, hidden, 3, stride, groups=hidden),
                   nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.residual else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        feats, cin = [_conv_bn_relu6(3, 32, 3, 2)], 32
        for t, c, n, s in CONFIG:
            for i in range(n):
                feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        feats.append(_conv_bn_relu6(cin, 1280, 1))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def load(path):
    """The model with the checkpoint at ``path`` (every name and shape must match), eval mode."""
    m = MobileNetV2()
    m.load_state_dict(torch.load(path, map_location="cpu", weights_only=True), strict=True)
    return m.eval()
