"""One wgpu device: adapter discovery and ordering, features and limits, the renderer.

The device's memory, command queue and transfers are :mod:`._alloc`, :mod:`._queue` and
:mod:`._transfers`; the backend holds a :class:`~ruda.backends.wgpu._queue.Queue` of a
:class:`Device` as ``ctx``.
"""
import os

from ruda.backends.wgpu._native import native
from ruda.runtime.wgsl import WGSLRenderer

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")   # silences Mesa's warning on headless hosts

# Optional features ruda uses (wgpu-native spellings), requested when the adapter has them.
WANTED_FEATURES = ("shader-f16", "shader-f64", "shader-int64", "subgroup", "timestamp-query")
_BACKEND_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 1, "OpenGLES": 1}


def _wgpu():
    import wgpu
    return wgpu


_adapters = None


def _is_gl(adapter):
    return adapter.info.get("backend_type", "").startswith("OpenGL")


def _computes(adapter):
    """The adapter can run ruda's kernels: 256-invocation workgroups with 8 storage buffers."""
    lim = adapter.limits
    return (lim.get("max-compute-invocations-per-workgroup", 0) >= 256
            and lim.get("max-storage-buffers-per-shader-stage", 0) >= 8)


def adapters():
    """Usable adapters, high-performance first; one per physical device (native API over GL)."""
    global _adapters
    if _adapters is None:
        wgpu = _wgpu()
        found = list(wgpu.gpu.enumerate_adapters_sync())
        want = os.environ.get("RUDA_WGPU_BACKEND")
        if want:
            kinds = sorted({a.info.get("backend_type", "") for a in found})
            found = [a for a in found if a.info.get("backend_type", "").lower() == want.lower()]
            if not found:
                raise ValueError(f"RUDA_WGPU_BACKEND={want!r} matches no adapter; present: "
                                 f"{', '.join(kinds) or 'none'}")
        # OpenGL adapters only where no native one exists: beside Vulkan/Metal/D3D12 they
        # duplicate a native adapter (under another name) and may lack compute shaders
        # (NVIDIA's GL adapter failed every compute pipeline)
        if any(not _is_gl(a) for a in found):
            found = [a for a in found if not _is_gl(a)]
        found = [a for a in found if _computes(a)]
        rank = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3}
        found.sort(key=lambda a: (rank.get(a.info.get("adapter_type"), 4),
                                  _BACKEND_RANK.get(a.info.get("backend_type"), 2)))
        seen, out = set(), []
        for a in found:
            ident = (a.info.get("device"), a.info.get("vendor_id"), a.info.get("device_id"))
            if ident in seen:
                continue
            seen.add(ident)
            out.append(a)
        _adapters = out
    return _adapters


def _withheld():
    """Features not to request (``RUDA_WGPU_WITHOUT=shader-f64,shader-int64``): a capable
    adapter then stands in for a browser's or OpenGL's, so those paths can be tested."""
    out = {f.strip() for f in os.environ.get("RUDA_WGPU_WITHOUT", "").split(",") if f.strip()}
    unknown = sorted(out - set(WANTED_FEATURES))
    if unknown:
        raise ValueError(f"ruda: RUDA_WGPU_WITHOUT={os.environ['RUDA_WGPU_WITHOUT']!r} names "
                         f"{', '.join(unknown)}; expected features among "
                         f"{', '.join(WANTED_FEATURES)}")
    return out


class Device:
    """A wgpu device opened on ``adapter`` with every wanted feature it has (less the withheld
    ones) and its largest buffer limits."""

    def __init__(self, adapter):
        wgpu = _wgpu()
        self.wgpu = wgpu
        self.adapter = adapter
        have = set(adapter.features) - _withheld()
        if "shader-int64" not in have:   # float64 kernels move bits through u64 (parameters,
            have.discard("shader-f64")   # the f64 math library): no float64 without int64
        self.features = frozenset(f for f in WANTED_FEATURES if f in have)
        lim = adapter.limits
        want_limits = {k: lim[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                           "max-storage-buffers-per-shader-stage",
                                           "max-compute-workgroup-storage-size",
                                           "max-compute-invocations-per-workgroup",
                                           "max-compute-workgroup-size-x") if k in lim}
        self.device = adapter.request_device_sync(required_features=sorted(self.features),
                                                  required_limits=want_limits)
        self.limits = dict(self.device.limits)
        # whole vec4s: NVIDIA reports 2^31 - 1, and pooled buffers (size classes capped at this)
        # must hold a multiple of 16 bytes for the vec4 kernels
        self.max_binding = int(self.limits["max-storage-buffer-binding-size"]) // 16 * 16
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.renderer = WGSLRenderer(f16="shader-f16" in self.features, f64="shader-f64" in self.features,
                                     subgroup="subgroup" in self.features,
                                     int64="shader-int64" in self.features)
        self.nat = native(self.device, adapter.info.get("adapter_type", ""))
