"""DLPack 1.0 across devices: export to the host on request, import from any host producer.

An array on a device exports a capsule of a host copy when the consumer names the host
(``dl_device=(kDLCPU, 0)``, as ``np.from_dlpack(x, device="cpu")`` does), and refuses
``copy=False`` there; ``__dlpack_device__`` keeps naming the array's own device; a request for a
device ruda cannot reach raises BufferError naming it; ``np.asarray`` still refuses device
arrays.  ``ruda.from_dlpack(obj, device=...)`` takes any host producer to any device.
(Same-device DLPack and the standard's copy rules: tests/test_array_object.py.)
"""
import contextlib
import types

import numpy as np
import pytest

import _fake_cupy
import ruda as xp
from conftest import to_numpy
from strategies import rand, supported

KDL_CPU = (1, 0)
OWN = {"cpu": 1, "cuda": 2, "wgpu": 15}     # kDLCPU, kDLCUDA, kDLWebGPU


class _Legacy:
    """Asks ``x`` for a host export without ``max_version``: a legacy (unversioned) capsule."""

    def __init__(self, x):
        self.x = x

    def __dlpack_device__(self):
        return KDL_CPU

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(dl_device=KDL_CPU)


def test_export_to_the_host_on_request(device):
    rng = np.random.default_rng(101)
    for dt in supported(device):
        a = rand(rng, (3, 4), dt)
        x = xp.asarray(a, device=device)
        for h in (np.from_dlpack(x, device="cpu"), np.from_dlpack(x, device="cpu", copy=True),
                  np.from_dlpack(_Legacy(x))):
            assert h.dtype == dt and h.shape == (3, 4)
            np.testing.assert_array_equal(h, a)
        assert x.__dlpack_device__() == (OWN[device.kind], device.index)
        if device.kind != "cpu":     # a host copy: writing the device array leaves it alone
            h = np.from_dlpack(x, device="cpu")
            assert h.flags.writeable   # a versioned capsule, not flagged read-only
            x[0, 0] = x[0, 1]
            np.testing.assert_array_equal(h, a)
    y = xp.asarray(rand(rng, (4, 5), supported(device, "real floating")[0]), device=device)
    h = np.from_dlpack(y[1:, ::2], device="cpu")     # a strided view exports its own values
    np.testing.assert_array_equal(h, to_numpy(y)[1:, ::2])
    np.testing.assert_array_equal(np.from_dlpack(y[2, 3], device="cpu"), to_numpy(y)[2, 3])


def _capsule_flags(capsule):
    """The ``flags`` of a versioned DLPack capsule (DLManagedTensorVersioned: version, two
    pointers, then the uint64 flags)."""
    import ctypes
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return ctypes.c_uint64.from_address(get(capsule, b"dltensor_versioned") + 24).value


def test_host_export_flags_its_copy(device):
    """The standard: a versioned capsule made by copying sets DLPACK_FLAG_BITMASK_IS_COPIED (2);
    a cpu array's in-place export does not."""
    x = xp.asarray([1.0, 2.0, 3.0], device=device)
    copied = _capsule_flags(x.__dlpack__(max_version=(1, 0), dl_device=KDL_CPU)) & 2
    assert copied == (0 if device.kind == "cpu" else 2)
    assert _capsule_flags(x.__dlpack__(max_version=(1, 0), dl_device=KDL_CPU, copy=True)) & 2


def test_copy_false_to_the_host_refused_on_devices(device):
    x = xp.asarray([1.0, 2.0, 3.0], device=device)
    if device.kind == "cpu":
        h = np.from_dlpack(x, device="cpu", copy=False)
        x[0] = 9.0
        assert h[0] == 9.0                     # the host array's own memory
        return
    with pytest.raises(BufferError, match=rf"copy=False.*dl_device=\(1, 0\).*'{device.kind}:{device.index}'.*needs a copy"):
        x.__dlpack__(dl_device=KDL_CPU, copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        np.from_dlpack(x, device="cpu", copy=False)


def test_in_place_export_and_numpy_stay_as_they_were(device):
    x = xp.asarray([1.0, 2.0], device=device)
    np.from_dlpack(x, device="cpu")
    if device.kind == "wgpu":     # no pointer to hand out: only the host copy exists
        with pytest.raises(BufferError, match=r"in place.*dl_device=\(1, 0\)"):
            np.from_dlpack(x)
    if device.kind != "cpu":      # DLPack naming the host is the only implicit way there
        with pytest.raises(TypeError, match=rf"needs a host array.*'{device}'.*to_device"):
            np.asarray(x)


@pytest.mark.parametrize("dl_device, name", [((4, 0), "kDLOpenCL"), ((10, 0), "kDLROCM"),
                                             ((8, 0), "kDLMetal"), ((99, 0), "DLPack device type 99"),
                                             ((1, 1), "kDLCPU")])
def test_unreachable_dl_device_named(device, dl_device, name):
    x = xp.asarray([1.0], device=device)
    for copy in (None, True):
        with pytest.raises(BufferError, match=rf"dl_device=\({dl_device[0]}, {dl_device[1]}\) \({name}\) "
                                              rf"cannot be reached from an array on '{device}"):
            x.__dlpack__(dl_device=dl_device, copy=copy)
    other = (2, 0) if device.kind != "cuda" else (15, 0)
    with pytest.raises(BufferError, match="cannot be reached"):
        x.__dlpack__(dl_device=other)


def test_bad_dlpack_arguments(device):
    x = xp.asarray([1.0], device=device)
    with pytest.raises(TypeError, match=r"__dlpack__: dl_device must be a \(device_type, device_id\) pair"):
        x.__dlpack__(dl_device="cpu")
    with pytest.raises(TypeError, match="__dlpack__: copy must be True, False or None; got 1"):
        x.__dlpack__(dl_device=KDL_CPU, copy=1)
    with pytest.raises(TypeError, match="ruda.from_dlpack: copy must be True, False or None"):
        xp.from_dlpack(np.zeros(2), copy="yes")
    with pytest.raises(TypeError, match=r"ruda.from_dlpack: x must support DLPack.*got list"):
        xp.from_dlpack([1.0])


def test_array_api_strict_from_dlpack(device):
    """array_api_strict 2.6's from_dlpack calls ``np.from_dlpack(x)``: it does not pass its
    ``device`` on to the producer, so it asks a device array for an in-place export: wgpu refuses
    it (BufferError naming the host copy), cuda's CUDA capsule is refused by NumPy; no data moves
    unasked."""
    xs = pytest.importorskip("array_api_strict")
    a = rand(np.random.default_rng(5), (2, 3), supported(device, "real floating")[0])
    x = xp.asarray(a, device=device)
    if device.kind == "cpu":
        y = xs.from_dlpack(x, device=xs.Device("CPU_DEVICE"))
        np.testing.assert_array_equal(np.asarray(y), a)
        return
    if device.kind == "wgpu":
        refusal = pytest.raises(BufferError, match=r"in place.*dl_device=\(1, 0\)")
    else:       # ruda hands out its CUDA memory in place; NumPy refuses a device capsule
        refusal = pytest.raises((BufferError, RuntimeError), match="[Uu]nsupported device|in place")
    with refusal:
        xs.from_dlpack(x, device=xs.Device("CPU_DEVICE"))
    y = xs.asarray(np.from_dlpack(x, device="cpu"))    # naming the host works
    np.testing.assert_array_equal(np.asarray(y), a)


def test_torch_from_dlpack(device):
    torch = pytest.importorskip("torch")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = xp.asarray(a, device=device)
    if device.kind == "cpu":
        t = torch.from_dlpack(x)
        x[0, 0] = 7.0
        assert t[0, 0].item() == 7.0           # shared memory
        return
    if device.kind == "cuda":
        if not torch.cuda.is_available():
            pytest.skip("this torch build has no CUDA")
        np.testing.assert_array_equal(torch.from_dlpack(x).cpu().numpy(), a)
    if device.kind == "wgpu":
        # torch imports on the producer's device and then moves (it forwards dl_device only when
        # the devices match), and it cannot hold kDLWebGPU memory: the refusal must say how to
        # get a host copy, and that way must work.
        with pytest.raises(BufferError, match=r"cannot be exported in place.*dl_device=\(1, 0\)"):
            torch.from_dlpack(x, device="cpu")
        t = torch.from_dlpack(np.from_dlpack(x, device="cpu"))
        assert t.dtype == torch.float32
        np.testing.assert_array_equal(t.numpy(), a)


def test_asarray_of_torch_with_copy_false_shares_or_refuses(device):
    """asarray(tensor, copy=False) shares a CPU tensor's memory (torch's __array__ takes no
    copy argument, so it goes through DLPack); onto another device it needs a copy: ValueError."""
    torch = pytest.importorskip("torch")
    t = torch.arange(6.0).reshape(2, 3).T
    if device.kind != "cpu":
        with pytest.raises(ValueError, match=r"ruda\.asarray: .*copy"):
            xp.asarray(t, device=device, copy=False)
        return
    x = xp.asarray(t, device=device, copy=False)
    t[0, 1] = 9.0
    assert x.dtype == xp.float32 and to_numpy(x).tolist() == t.tolist()
    with pytest.raises(ValueError, match=r"ruda\.asarray: .*copy"):
        xp.asarray(t, dtype=xp.float64, device=device, copy=False)


# --- import: ruda.from_dlpack ----------------------------------------------------------------
def test_bfloat16_over_dlpack_is_refused_with_a_way_out(device):
    """NumPy's DLPack (and CuPy's) has no bfloat16: exporting or importing one raises
    BufferError naming the way out (float32, or the uint16 bits), never a NumPy internal."""
    torch = pytest.importorskip("torch")
    if getattr(xp, "bfloat16", None) is None or not device.backend.supports(xp.bfloat16):
        pytest.skip("no bfloat16 here")
    if device.kind == "cuda":
        pytest.skip("CuPy exchanges bfloat16 over DLPack (tests/test_cuda_bf16.py)")
    x = xp.asarray([1.5, -2.0], dtype=xp.bfloat16, device=device)
    with pytest.raises(BufferError, match=r"ruda: __dlpack__: bfloat16 .*x\.astype\(ruda\.float32\)"):
        torch.from_dlpack(x)
    t = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    with pytest.raises(BufferError, match=r"ruda\.from_dlpack: x's dtype \(torch\.bfloat16\) "
                                          r"does not travel over DLPack here"):
        xp.from_dlpack(t, device=device)
    with pytest.raises(TypeError, match=r"ruda\.asarray: NumPy cannot convert this Tensor .*"
                                        r"BFloat16.*float32"):
        xp.asarray(t, device=device)
    back = torch.from_dlpack(xp.astype(x, xp.float32).to_device("cpu"))
    assert back.dtype == torch.float32 and back.tolist() == [1.5, -2.0]


def test_from_dlpack_of_host_producers(device):
    xs = pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(7)
    for dt in supported(device):
        a = rand(rng, (3, 2), dt)
        for producer in (a, xs.asarray(a)):
            y = xp.from_dlpack(producer, device=device)
            assert y.device == device and y.dtype == dt
            np.testing.assert_array_equal(to_numpy(y), a)
    if device.kind != "cpu":
        with pytest.raises(ValueError, match=rf"copy=False, but x is on DLPack device \(1, 0\) \(kDLCPU\) "
                                             rf"and device='{device}'"):
            xp.from_dlpack(np.zeros(3), device=device, copy=False)
        with pytest.raises(ValueError, match=rf"ruda\.from_dlpack: copy=False, but the array is on "
                                             rf"'cpu' and device='{device}'"):   # a ruda producer
            xp.from_dlpack(xp.zeros(3, device="cpu"), device=device, copy=False)


class _Foreign:
    """A producer on a device ruda cannot hold (Metal) that exports host copies on request."""

    def __init__(self, a, host_export=True):
        self.a, self.host_export, self.asked = a, host_export, []

    def __dlpack_device__(self):
        return (8, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked.append(dl_device)
        if dl_device is None or not self.host_export:
            raise BufferError("this producer exports host copies only")
        return self.a.copy().__dlpack__(max_version=max_version)


def test_from_dlpack_of_an_unreachable_device(device):
    a = np.arange(5.0)
    f = _Foreign(a)
    y = xp.from_dlpack(f, device=device)
    assert f.asked == [KDL_CPU] and y.device == device
    np.testing.assert_array_equal(to_numpy(y), a)
    with pytest.raises(BufferError, match=r"x is on DLPack device \(8, 0\) \(kDLMetal\), which ruda "
                                          r"cannot hold; pass device='cpu'"):
        xp.from_dlpack(f)
    with pytest.raises(BufferError, match=r"kDLMetal.*gave no host copy"):
        xp.from_dlpack(_Foreign(a, host_export=False), device=device)


# --- the cuda backend's export logic, on a stand-in for CuPy arrays (no GPU needed) ---------
class _CupyLike(np.ndarray):
    """NumPy posing as a CuPy array on cuda:0: ``get`` copies to the host, ``__dlpack__``
    records what the backend asked of CuPy."""
    asked = []

    def __dlpack_device__(self):
        return (2, 0)

    def get(self):
        return np.array(self)

    def __dlpack__(self, **kw):
        type(self).asked.append((self, kw))
        return "capsule"


@pytest.fixture
def cuda_backend(monkeypatch):
    C = pytest.importorskip("ruda.backends.cuda")
    fake_cupy = _fake_cupy.install(monkeypatch)      # its arrays: the recording stand-in
    monkeypatch.setattr(fake_cupy, "array", lambda a, dtype=None, copy=True:
                        np.array(a, dtype=dtype).view(_CupyLike))
    monkeypatch.setattr(C, "cupy", fake_cupy)
    monkeypatch.setattr(C, "_bf16", types.SimpleNamespace(BF16=None), raising=False)
    b = object.__new__(C.CudaBackend)
    b.index, b._cp_device = 0, contextlib.nullcontext()
    _CupyLike.asked = []
    return b


def test_cuda_export_logic_without_a_gpu(cuda_backend):
    b = cuda_backend
    a = np.arange(6.0).reshape(2, 3).view(_CupyLike)
    h = np.from_dlpack(types.SimpleNamespace(         # the host copy: to_host (a.get()), exported
        __dlpack_device__=lambda: KDL_CPU,
        __dlpack__=lambda **kw: b.to_dlpack(a, max_version=kw.get("max_version"), dl_device=KDL_CPU)))
    np.testing.assert_array_equal(h, np.arange(6.0).reshape(2, 3))
    a[0, 0] = 50.0
    assert h[0, 0] == 0.0 and _CupyLike.asked == []   # a copy, and CuPy's export was not asked
    with pytest.raises(BufferError, match=r"copy=False, but dl_device=\(1, 0\).*'cuda:0' \(kDLCUDA\)"):
        b.to_dlpack(a, dl_device=KDL_CPU, copy=False)
    with pytest.raises(BufferError, match=r"dl_device=\(2, 1\) \(kDLCUDA\) cannot be reached.*'cuda:0'"):
        b.to_dlpack(a, dl_device=(2, 1))
    assert b.to_dlpack(a, stream=7, max_version=(1, 0), dl_device=(2, 0)) == "capsule"
    assert _CupyLike.asked[-1] == (a, {"stream": 7, "max_version": (1, 0)})   # in place: CuPy's own
    b.to_dlpack(a, stream=None, copy=True)           # copy=True on the GPU: a fresh array exported
    exported, kw = _CupyLike.asked[-1]
    assert exported is not a and kw == {"stream": None}
    np.testing.assert_array_equal(exported, a)
