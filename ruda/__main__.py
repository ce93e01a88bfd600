"""Command line: ``python -m ruda info | demo | data ...``."""
import argparse
import sys

import ruda
from ruda import _devices, _dtypes, backends


def info():
    print(f"ruda {ruda.__version__} (array API {ruda.__array_api_version__})")
    for kind in backends.kinds():
        found = _devices._discover(kind)
        if not found:
            print(f"  {kind}: unavailable ({_devices.unavailable(kind)})")
            continue
        for index in found:
            dev = _devices._get(kind, index)
            try:
                b = dev.backend
            except Exception as e:  # noqa: BLE001 - report a device that fails to open, go on
                print(f"  {dev}: failed to open ({type(e).__name__}: {e})")
                continue
            names = ", ".join(_dtypes.name(d) for d in b.dtypes())
            print(f"  {dev}: {b.describe()}")
            print(f"      dtypes: {names}")
            defaults = ", ".join(f"{k}={_dtypes.name(d)}" for k, d in b.default_dtypes().items())
            print(f"      defaults: {defaults}")
            if b.fallbacks:
                print(f"      host fallbacks: {', '.join(sorted(b.fallbacks))}")
    return 0


def demo():
    """The main demonstration: the same NumPy-like script on the default device."""
    xp = ruda
    dev = ruda.__array_namespace_info__().default_device()
    print(f"ruda {ruda.__version__} on device '{dev}'")
    x = xp.linspace(0, 2 * xp.pi, 8)
    print("x            =", x)
    print("sin^2+cos^2  =", xp.sin(x) ** 2 + xp.cos(x) ** 2)
    a = xp.reshape(xp.arange(1, 10, dtype=xp.float64), (3, 3)) + xp.eye(3) * 10
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
