"""Contestants: ruda on each device, and NumPy, CuPy, PyTorch where installed.

Each contestant turns float32 host data into its own arrays of a named dtype (``put``),
brings results back (``get``) and waits for its device (``sync``).  Whatever is missing
(a library, a GPU, a dtype on a device) is reported as a skip with its reason, never an error.
"""
import importlib

import numpy as np


class Skip(Exception):
    """This contestant cannot run this case (the message says why)."""


def _np_dtype(name):
    if name in ("bfloat16",):
        try:
            import ml_dtypes
        except ImportError:
            raise Skip("bfloat16 needs ml_dtypes") from None
        return np.dtype(ml_dtypes.bfloat16)
    if name == "tf32":
        return np.dtype(np.float32)
    return np.dtype(name)


class Contestant:
    kind = None          # "ruda", "numpy", "cupy", "torch"
    gpu = False

    def __init__(self, name):
        self.name = name

    def sync(self):
        pass

    def describe(self):
        return self.name

    def tf32(self, on):
        """Switch TF32 matmul on/off; raise Skip where there is no such switch."""
        if on:
            raise Skip("no TF32 switch")


class Ruda(Contestant):
    kind = "ruda"

    def __init__(self, dev):
        super().__init__(f"ruda:{dev}")
        import ruda
        self.xp = ruda
        self.dev = dev
        self.backend = dev.backend
        self.gpu = dev.kind != "cpu"
        self.ns = ruda
        self.sync = self.backend.synchronize

    def describe(self):
        try:
            return f"{self.name}: {self.backend.describe()}"
        except Exception:  # noqa: BLE001
            return self.name

    def dtype(self, name):
        if name == "tf32":
            name = "float32"
        dt = getattr(self.xp, name, None)
        if dt is None:
            raise Skip(f"{name} is not a ruda dtype")
        dt = np.dtype(dt)
        if not self.backend.supports(dt):
            raise Skip(f"{name} is not supported on {self.dev}")
        return dt

    def put(self, a, dtype="float32"):
        dt = self.dtype(dtype)
        return self.xp.asarray(np.asarray(a).astype(dt, copy=False), device=self.dev)

    def get(self, x):
        return np.asarray(x.to_device("cpu"))

    def tf32(self, on):
        b = self.backend
        if not hasattr(b, "allow_tf32"):
            if on:
                raise Skip("backend has no allow_tf32 switch")
            return
        b.allow_tf32 = bool(on)


class NumPy(Contestant):
    kind = "numpy"

    def __init__(self):
        super().__init__("numpy")
        self.ns = np

    def describe(self):
        return f"numpy {np.__version__}"

    def put(self, a, dtype="float32"):
        if dtype == "tf32":
            raise Skip("numpy has no TF32")
        return np.asarray(a).astype(_np_dtype(dtype), copy=False)

    def get(self, x):
        return x


class CuPy(Contestant):
    kind = "cupy"
    gpu = True

    def __init__(self):
        super().__init__("cupy")
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise Skip("no CUDA device")
        self.cp = self.ns = cupy
        self._stream_sync = lambda: cupy.cuda.get_current_stream().synchronize()

    def sync(self):
        self._stream_sync()

    def describe(self):
        cp = self.cp
        try:
            name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception:  # noqa: BLE001
            name = "?"
        return f"cupy {cp.__version__} on {name} (CUDA runtime {cp.cuda.runtime.runtimeGetVersion()})"

    def put(self, a, dtype="float32"):
        if dtype == "tf32":
            raise Skip("cupy: TF32 only via CUPY_TF32=1 at import")
        if dtype == "bfloat16":
            raise Skip("cupy has no bfloat16 arrays")
        return self.cp.asarray(np.asarray(a).astype(_np_dtype(dtype), copy=False))

    def get(self, x):
        return self.cp.asnumpy(x)


class Torch(Contestant):
    kind = "torch"
    gpu = True

    def __init__(self):
        super().__init__("torch")
        import torch
        if not torch.cuda.is_available():
            raise Skip("torch without CUDA")
        self.torch = self.ns = torch
        self._sync = torch.cuda.synchronize
        torch.backends.cuda.matmul.allow_tf32 = False      # strict f32 unless a case asks

    def sync(self):
        self._sync()

    def describe(self):
        t = self.torch
        return f"torch {t.__version__} on {t.cuda.get_device_name(0)} (CUDA {t.version.cuda})"

    def put(self, a, dtype="float32"):
        t = self.torch
        x = t.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=np.float32))).to("cuda")
        tdt = {"float32": t.float32, "tf32": t.float32, "float16": t.float16,
               "bfloat16": t.bfloat16, "float64": t.float64}.get(dtype)
        if tdt is None:
            raise Skip(f"torch: dtype {dtype} not in the bench")
        return x.to(tdt)

    def get(self, x):
        return x.cpu().numpy()

    def tf32(self, on):
        self.torch.backends.cuda.matmul.allow_tf32 = bool(on)


class TorchCPU(Contestant):
    """torch on the host: a reference of the ``nn`` group only (ruda.nn vs torch.nn.functional)."""
    kind = "torch"
    gpu = False

    def __init__(self):
        super().__init__("torch:cpu")
        import torch
        self.torch = self.ns = torch

    def describe(self):
        t = self.torch
        return f"torch {t.__version__} on the host ({t.get_num_threads()} threads)"

    def put(self, a, dtype="float32"):
        t = self.torch
        tdt = {"float32": t.float32, "bfloat16": t.bfloat16, "float64": t.float64}.get(dtype)
        if tdt is None:
            raise Skip(f"torch:cpu: dtype {dtype} not in the bench")
        return t.from_numpy(np.ascontiguousarray(np.asarray(a, dtype=np.float32))).to(tdt)

    def get(self, x):
        return x.float().numpy()


def discover(devices=None, refs=None):
    """(contestants, skipped) for the ruda devices named in ``devices`` (None: all available)
    and the references in ``refs`` (None: numpy, cupy, torch)."""
    out, skipped = [], {}
    from ruda import backends
    import ruda
    want = None if devices is None else [d.strip() for d in devices if d.strip()]
    for kind in backends.kinds():
        if want is not None and not any(w == kind or w.split(":")[0] == kind for w in want):
            continue
        try:
            indices = backends.backend_class(kind).discover()
        except Exception as e:  # noqa: BLE001 - an unusable backend is a skip, whatever it raises
            skipped[f"ruda:{kind}"] = f"{type(e).__name__}: {e}"
            continue
        if not indices:
            try:
                why = backends.backend_class(kind).unavailable_reason() or "no device found"
            except Exception as e:  # noqa: BLE001
                why = repr(e)
            skipped[f"ruda:{kind}"] = why
            continue
        for i in indices:
            spec = kind if kind == "cpu" else f"{kind}:{i}"
            if want is not None and spec not in want and kind not in want:
                continue
            try:
                out.append(Ruda(ruda.device(spec)))
            except Exception as e:  # noqa: BLE001
                skipped[f"ruda:{spec}"] = f"{type(e).__name__}: {e}"
    for name, cls in (("numpy", NumPy), ("cupy", CuPy), ("torch", Torch),
                      ("torch:cpu", TorchCPU)):
        if refs is not None and name not in refs and name.split(":")[0] not in refs:
            continue
        try:
            if name != "numpy":
                importlib.import_module(name.split(":")[0])
            out.append(cls())
        except Skip as e:
            skipped[name] = str(e)
        except Exception as e:  # noqa: BLE001 - ImportError, driver errors, ...
            skipped[name] = f"{type(e).__name__}: {e}"[:200]
    return out, skipped
