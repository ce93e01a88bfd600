"""Where each cuda backend op goes when bfloat16 is involved (:func:`guard`, ``ROUTES``).

CuPy's own bfloat16 loops are never used (:mod:`ruda.backends.cuda._bf16` says why): every
backend op that receives a bfloat16 operand (or ``dtype=bfloat16``) goes to one of four routes:

``bits``  data movement on a ``uint16`` view of the same memory (indexing, manipulation,
          ``where``, ``tril``/``triu``, ``meshgrid``, ``linalg.diagonal``, ``fft.fftshift``):
          exact, whatever the values.
``f32``   ml_dtypes' semantics (add/subtract/multiply/divide of one shape or with a 0-d
          operand in one fused kernel, the same result): bfloat16 operands are widened (exactly) to float32, the
          backend's own float32 op runs, and float32 results are rounded back to bfloat16
          (round to nearest even; NaN becomes the quiet NaN of its sign, as ml_dtypes does).
          Elementwise functions therefore give the host's bfloat16 results (within the float32
          libm's last-bit differences, which rounding to bfloat16 almost always hides), except
          that float32 ops CuPy compiles flush subnormals (``-ftz=true``), and bfloat16 shares
          float32's exponent range: results below 1.2e-38 may be 0 on cuda.
          Reductions (sum, prod, mean, std, var, cumulative_*, vecdot) accumulate in float32 or
          wider and round once; the host (NumPy over ml_dtypes) rounds after every step, so long
          reductions can differ -- cuda's result is the more accurate one.  An explicit
          non-bfloat16 ``dtype=`` (``sum(x, dtype=float32)``) keeps the float32 result.
``own``   ``astype`` (NVRTC kernels, bit-exact with ml_dtypes 0.7 for every value: float64 and
          64-bit integers rounded once, NaN to the quiet NaN of its sign, out-of-range or
          non-finite values to integers 0), ``nextafter`` (on bit patterns), creation (``empty``, ``full``,
          ``eye``: bit patterns; ``arange``: ml_dtypes' fill rule; ``linspace``: float64, then
          rounded once), ``matmul``/``tensordot`` (cuBLAS ``cublasGemmEx`` /
          ``cublasGemmStridedBatchedEx`` with ``CUDA_R_16BF`` operands and result and
          ``CUBLAS_COMPUTE_32F``), ``vecdot`` (float32 products and sum, rounded once).
``raise`` ``NotImplementedError`` naming the function: the linalg decompositions and solvers,
          complex FFTs, bitwise and logical functions.  Cast to float32 first.
"""
from ruda.backends import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, OPS
from ruda.backends.cuda import _bf16
from ruda.backends.cuda._bf16 import (
    BF16, F32, U16, arange, as_bf16, astype, empty, eye, from_f32, full, linspace, matmul,
    nextafter, tensordot, to_f32, vecdot,
)

FUSED = ("add", "subtract", "multiply", "divide")


def _fused(name, general):
    """Binary op ``name`` in one kernel for operands of one shape or a 0-d one (one float32 op
    rounded once: the float32 route's result, subnormals included); ``general`` otherwise."""
    kernel = f"ruda_bf16_{name}"

    def run(x1, x2):
        if x1.shape == x2.shape:
            shape, sx, sy = x1.shape, 1, 1
        elif not x2.ndim:
            shape, sx, sy = x1.shape, 1, 0
        elif not x1.ndim:
            shape, sx, sy = x2.shape, 0, 1
        else:
            return general(x1, x2)
        out = _bf16.cp.empty(shape, U16)
        return as_bf16(_bf16._launch(kernel, _bf16._contiguous_bits(x1), _bf16._contiguous_bits(x2), out,
                                     extra=(sx, sy)))
    run.__name__ = name
    return run


_BITS = frozenset({
    "getitem", "setitem", "take", "take_along_axis", "broadcast_to", "concat", "expand_dims",
    "flip", "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile",
    "unstack", "where", "tril", "triu", "meshgrid", "linalg_diagonal", "fft_fftshift",
    "fft_ifftshift",
})
_OWN = {"astype": astype, "empty": empty, "full": full, "eye": eye, "arange": arange,
        "linspace": linspace, "nextafter": nextafter, "matmul": matmul, "tensordot": tensordot, "vecdot": vecdot}
_RAISE = frozenset({
    "bitwise_invert", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "logical_not", "logical_and", "logical_or", "logical_xor", "imag",
    "linalg_cholesky", "linalg_det", "linalg_eig", "linalg_eigh", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv", "linalg_matrix_rank", "linalg_pinv", "linalg_qr",
    "linalg_slogdet", "linalg_solve", "linalg_svd", "linalg_svdvals",
    "fft_fft", "fft_ifft", "fft_fftn", "fft_ifftn", "fft_irfft", "fft_irfftn", "fft_hfft",
    "fft_fftfreq", "fft_rfftfreq",
})
# everything else in OPS: through float32 (elementwise, clip, statistics, searching, sorting,
# sets, all/any/diff, linalg cross/outer/trace/vector_norm/matrix_norm/matrix_power,
# fft rfft/rfftn/ihfft)
ROUTES = {name: "own" if name in _OWN else "bits" if name in _BITS else "raise" if name in _RAISE
          else "f32" for name in OPS}


def _map(obj, fn):
    c = obj.__class__
    if c is _bf16._ndarray:
        return fn(obj)
    if c is tuple or c is list:
        return c(_map(o, fn) for o in obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return c(*[_map(o, fn) for o in obj])
    return obj


def _involves(obj):
    """Whether obj is (or a list/tuple holds) a bfloat16 array, or is the bfloat16 dtype."""
    c = obj.__class__
    if c is _bf16._ndarray:
        return obj.dtype is BF16
    if c is tuple or c is list:
        for o in obj:
            if _involves(o):
                return True
        return False
    return obj is BF16


def _up(a):
    return to_f32(a) if a.dtype is BF16 else a


def _down(a):
    return from_f32(a) if a.dtype == F32 else a


def _bits_in(a):
    return a.view(U16) if a.dtype is BF16 else a


def _bits_out(a):
    return a.view(BF16) if a.dtype == U16 else a


def _pretty(name):
    for p in ("linalg_", "fft_"):
        if name.startswith(p):
            return p[:-1] + "." + name[len(p):]
    return name


def _route(name, impl):
    """The function that runs op ``name`` when bfloat16 is involved."""
    kind = ROUTES[name]
    if kind == "own":
        return _OWN[name]
    if kind == "bits":
        def run(*args, **kwargs):
            out = impl(*_map(args, _bits_in), **{k: _map(v, _bits_in) for k, v in kwargs.items()})
            return _map(out, _bits_out)
    elif kind == "f32":
        def run(*args, **kwargs):
            back = True
            if "dtype" in kwargs:
                dt = kwargs["dtype"]
                if dt is BF16:
                    kwargs["dtype"] = F32
                elif dt is not None:
                    back = False        # an explicit wider dtype keeps its result
            out = impl(*_map(args, _up), **{k: _map(v, _up) for k, v in kwargs.items()})
            return _map(out, _down) if back else out
        if name in FUSED:
            return _fused(name, run)
    else:
        def run(*args, **kwargs):
            raise NotImplementedError(
                f"ruda: '{_pretty(name)}' is not implemented on device 'cuda' for bfloat16; "
                f"cast to float32 first (ruda.astype(x, ruda.float32))")
    run.__name__ = name
    return run


# ops whose bfloat16-ness is not that of their first argument: a dtype parameter, a list of
# arrays, or where's condition
_SCAN = frozenset({"sum", "prod", "cumulative_sum", "cumulative_prod", "linalg_trace", "astype",
                   "arange", "empty", "eye", "full", "linspace", "fft_fftfreq", "fft_rfftfreq",
                   "concat", "stack", "meshgrid", "where"})


def guard(name, impl):
    """``impl`` (the backend's op) with bfloat16 operands sent to their route.

    The frontend casts the operands of an op to one dtype, so most ops are judged by their first
    argument (one attribute load and an identity test on the non-bfloat16 path); the ops in
    ``_SCAN`` scan all arguments for bfloat16 arrays or ``dtype=bfloat16``.
    """
    if BF16 is None or name not in ROUTES:
        return impl
    route = _route(name, impl)
    if name in ELEMENTWISE_UNARY:
        def op(x):
            if x.dtype is BF16:
                return route(x)
            return impl(x)
    elif name in ELEMENTWISE_BINARY:
        def op(x1, x2):
            if x1.dtype is BF16 or x2.dtype is BF16:
                return route(x1, x2)
            return impl(x1, x2)
    elif name in _SCAN:
        def op(*args, **kwargs):
            if _involves(args) or (kwargs and _involves(tuple(kwargs.values()))):
                return route(*args, **kwargs)
            return impl(*args, **kwargs)
    else:
        def op(x, *args, **kwargs):
            if x.__class__ is _bf16._ndarray and x.dtype is BF16:
                return route(x, *args, **kwargs)
            return impl(x, *args, **kwargs)
    op.__name__ = name
    op.__wrapped__ = impl
    return op
