"""Special functions beyond the standard (extensions of the namespace): ``erf``.

``erf`` evaluates Cephes' rational approximations (``ruda.backends.ERF_TABLES``) with namespace
ops, so it runs on every device; where the device's fused ``activation`` kernel exists (the
host's), that kernel computes it in one pass. float16 and bfloat16 are computed in float32 and
rounded once.
"""
from ruda import _dtypes
from ruda import _validation as v
from ruda._array import Array
from ruda._data_type import astype
from ruda._elementwise import abs, clip, exp
from ruda._searching import where
from ruda.backends import ERF_TABLES

_T, _U, _P, _Q = ERF_TABLES
_HALF = frozenset(_dtypes.extension_dtypes)


def _poly(coef, z):
    r = z * coef[0] + coef[1]
    for a in coef[2:]:
        r = r * z + a
    return r


def _erf(y):
    """erf of a float32 or float64 array, in its dtype: |y| < 1: y T(y^2) / U(y^2), else
    +-(1 - erfc) with erfc = exp(-y^2) P(|y|) / Q(|y|) (relative error about 1e-16 in float64)."""
    a = abs(y)
    z = y * y
    zs = where(a < 1.0, z, 0.0)                 # the other branch's values stay finite
    small = y * _poly(_T, zs) / _poly(_U, zs)
    b = clip(a, 1.0, 10.0)                      # past 10, erfc underflows: erf is +-1
    erfc = exp(-z) * _poly(_P, b) / _poly(_Q, b)
    big = where(y < 0, erfc - 1.0, 1.0 - erfc)
    return where(a < 1.0, small, big)


def erf(x: Array, /) -> Array:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise (an extension).

    x must have a real floating dtype; the result has x's dtype and device. ``erf(+-0) = +-0``,
    ``erf(+-inf) = +-1``, ``erf(nan) = nan``. float64 is within a few ulp (Cephes); float32
    within 3 ulp composed, 8 ulp (5e-7 absolute) through the host's fused kernel."""
    if x.__class__ is not Array:
        v.array("erf", "x", x)
    dt = x._data.dtype
    v.category("erf", "x", dt, "real floating-point")
    dev = x._device
    if x._data.ndim and x._data.size:       # (the host kernel returns 0-d input as 1-d)
        kernels = dev.backend.nn
        kernel = None if kernels is None else getattr(kernels, "activation", None)
        if kernel is not None:
            r = kernel(x._data, "erf", 0.0, ERF_TABLES)
            if r is not NotImplemented:
                return Array._new(r, dev)
    if dt in _HALF:
        return astype(_erf(astype(x, _dtypes.float32)), dt)
    return _erf(x)
