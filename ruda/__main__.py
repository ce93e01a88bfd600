"""Command line: ``python -m ruda info | demo | data ...``."""
import argparse
import sys

import ruda
from ruda import _dtypes, backends


def info():
    """Version, array API version and every device kind: each device found once, with what it is,
    its dtypes and default dtypes and the ops it runs through the host; else why none was found."""
    import platform

    import numpy as np
    print(f"ruda {ruda.__version__} (array API standard {ruda.__array_api_version__}; "
          f"Python {platform.python_version()}, NumPy {np.__version__})")
    try:
        default = ruda.__array_namespace_info__().default_device()
    except ValueError as e:     # RUDA_DEVICE names a device that is not here: say so, go on
        default = f"none ({e})"
    print(f"default device: {default} "
          "(set it with RUDA_DEVICE=..., ruda.set_default_device(...) or `with ruda.default_device(...)`)")
    print()
    width = 8
    devices = ruda.devices()
    for kind in backends.kinds():
        found = [dev for dev in devices if dev.kind == kind]
        if not found:
            print(f"{kind + ':':<{width}} unavailable ({backends.unavailable(kind)})")
            continue
        for dev in found:
            label = f"{dev}:"
            try:
                b = dev.backend
            except Exception as e:  # noqa: BLE001 - report a device that fails to open, go on
                print(f"{label:<{width}} failed to open ({type(e).__name__}: {e})")
                continue
            print(f"{label:<{width}} {_description(dev, b.describe())}")
            pad = " " * (width + 1)
            have = set(b.dtypes())
            std = [_dtypes.name(d) for d in _dtypes.all_dtypes if d in have]
            ext = [_dtypes.name(d) for d in b.dtypes() if d not in _dtypes.all_dtypes]
            print(f"{pad}dtypes: {', '.join(std)}" + (f"; extensions: {', '.join(ext)}" if ext else ""))
            defaults = ", ".join(f"{k} {_dtypes.name(d)}" for k, d in b.default_dtypes().items())
            print(f"{pad}default dtypes: {defaults}")
            if b.fallbacks:
                ops = ", ".join(sorted(_public_op(op) for op in b.fallbacks))
                print(f"{pad}runs through the host: {ops}")
            for note in getattr(b, "notes", list)():
                print(f"{pad}note: {note}")
    print()
    print('An array lives on one device: ruda.asarray(data, device="wgpu"); x.to_device("cpu") '
          "moves it.")
    return 0


def _description(dev, text):
    """A backend's describe() without the device name the line already starts with:
    'wgpu:0 llvmpipe (...)' -> 'llvmpipe (...)', 'cpu (NumPy 2.4)' -> 'NumPy 2.4'."""
    for prefix in (f"{dev.kind}:{dev.index}", dev.kind):
        if text.startswith(prefix + " "):
            text = text[len(prefix) + 1:]
            break
    if text.startswith("(") and text.endswith(")") and _closing(text) == len(text) - 1:
        text = text[1:-1]
    return text


def _closing(text):
    """The index of the parenthesis that closes text[0]."""
    depth = 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return i
    return -1


def _public_op(op):
    """A backend op name as the namespace spells it: linalg_solve -> linalg.solve."""
    for sub in ("linalg_", "fft_"):
        if op.startswith(sub):
            return f"{sub[:-1]}.{op[len(sub):]}"
    return op


def demo():
    """The main demonstration: the same NumPy-like script on the default device."""
    xp = ruda
    dev = ruda.__array_namespace_info__().default_device()
    print(f"ruda {ruda.__version__} on device '{dev}'")
    x = xp.linspace(0, 2 * xp.pi, 8)
    print("x            =", x)
    print("sin^2+cos^2  =", xp.sin(x) ** 2 + xp.cos(x) ** 2)
    f = ruda.__array_namespace_info__().default_dtypes(device=dev)["real floating"]
    a = xp.reshape(xp.arange(1, 10, dtype=f), (3, 3)) + xp.eye(3) * 10   # (no float64 on Metal)
    b = xp.asarray([1.0, 2.0, 3.0])
    sol = xp.linalg.solve(a, b)
    print("solve(a, b)  =", sol, " residual", float(xp.linalg.vector_norm(a @ sol - b)))
    spectrum = xp.abs(xp.fft.rfft(xp.sin(3 * x)))
    print("|rfft|       =", spectrum)
    m = x[x > xp.pi]
    print("x[x > pi]    =", m, " mean", float(xp.mean(m)))
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["data"]:
        from ruda.data._cli import main as data_main
        return data_main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m ruda", description="ruda command line")
    p.add_argument("command", choices=["info", "demo", "data"],
                   help="info: version and devices; demo: the demonstration; data: dataset tools")
    args = p.parse_args(argv)
    return {"info": info, "demo": demo}[args.command]()


if __name__ == "__main__":
    sys.exit(main())
