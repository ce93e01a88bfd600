"""The CUDA C renderer of the kernel IR (ruda.runtime.cuda_c).

Rendering is tested everywhere; compiling and running (against NumPy on fresh random
inputs) where a cuda device exists.
"""
import numpy as np
import pytest

from ruda._devices import unavailable
from ruda.backends.host._ops import floor_divide as standard_floor_divide
from ruda.runtime import cuda_c, ir

CUDA_REASON = unavailable("cuda")
needs_cuda = pytest.mark.skipif(CUDA_REASON is not None, reason=f"no cuda device: {CUDA_REASON}")

NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f32": np.float32,
      "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
REAL = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"]


def unary_kernel(name, dt, ndim=1):
    x = ir.load(0, dt)
    v = ir.op(name, x)
    return ir.Kernel(f"u_{name}_{dt}", (ir.Arg("x", dt, ndim), ir.Arg("out", v.dtype, ndim, True)), (),
                     ndim, ir.Map((ir.Store(1, ir.Strided(), v),)))


def binary_kernel(name, dt, ndim=1):
    v = ir.op(name, ir.load(0, dt), ir.load(1, dt))
    return ir.Kernel(f"b_{name}_{dt}", (ir.Arg("x", dt, ndim), ir.Arg("y", dt, ndim),
                                        ir.Arg("out", v.dtype, ndim, True)), (),
                     ndim, ir.Map((ir.Store(2, ir.Strided(), v),)))


def cast_kernel(src, dst):
    return ir.Kernel(f"cast_{src}_{dst}", (ir.Arg("x", src, 1), ir.Arg("out", dst, 1, True)), (), 1,
                     ir.Map((ir.Store(1, ir.Strided(), ir.cast(ir.load(0, src), dst)),)))


# ----------------------------------------------------------------- rendering (everywhere)
def test_every_op_renders_or_says_why():
    must = {dt: set(FLOAT_UNARY) | set(FLOAT_BINARY) | {"real", "imag", "conj"} for dt in ("f32", "f64")}
    for dt in REAL[:8]:
        must[dt] = set(INT_BINARY) | {"neg", "abs", "square", "invert", "sign", "shl", "shr", "pow", "div",
                                      "ne", "le", "gt", "ge", "isnan", "isinf", "isfinite", "signbit"}
    for dt in ("c64", "c128"):
        must[dt] = {"add", "sub", "mul", "div", "neg", "conj", "real", "imag", "abs", "eq", "ne", "exp", "log",
                    "sqrt", "square", "reciprocal", "isnan", "isinf", "isfinite"}
    must["bool"] = {"and", "or", "xor", "not", "eq", "ne"}
    rendered = 0
    for name, (arity, _) in ir.OPS.items():
        if name == "complex":
            continue
        for dt in NP:
            k = unary_kernel(name, dt) if arity == 1 else binary_kernel(name, dt)
            try:
                p = cuda_c.CudaCRenderer().render(k)
            except cuda_c.RenderError as e:
                assert name in str(e) and dt in str(e), str(e)
                assert name not in must[dt], f"{name} on {dt} must render: {e}"
                continue
            assert p.name in p.source and p.kind == "map"
            rendered += 1
    assert rendered > 400


def test_literals_are_exact():
    assert cuda_c.literal(-0.0, "f64") == "__longlong_as_double((long long)0x8000000000000000ULL)"
    assert cuda_c.literal(1.5, "f32") == "__uint_as_float(0x3fc00000u)"
    assert cuda_c.literal(-129, "i8") == "((signed char)127)"        # wraps like NumPy
    assert cuda_c.literal(-2**63, "i64") == "(-9223372036854775807LL - 1LL)"
    assert cuda_c.literal(2**64 - 1, "u64") == "18446744073709551615ULL"


def test_f16_is_refused_with_a_reason():
    with pytest.raises(cuda_c.RenderError, match="f16"):
        cuda_c.CudaCRenderer().render(unary_kernel("neg", "f16"))


# ----------------------------------------------------------------- running (cuda)
if CUDA_REASON is None:
    import cupy
    from ruda.backends.cuda import _ir


def rand(rng, dt, shape):
    t = np.dtype(NP[dt])
    if t.kind == "b":
        return rng.random(shape) < 0.5
    if t.kind in "iu":
        info = np.iinfo(t)
        return rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True).astype(t)
    if t.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(t)
    return (rng.standard_normal(shape) * 3).astype(t)


def run_map(kernel, shape, *host):
    arrays = [cupy.asarray(h) for h in host]
    out_dt = kernel.args[-1].dtype
    out = cupy.empty(shape, NP[out_dt])
    _ir.launch(kernel, shape, arrays + [out])
    return cupy.asnumpy(out)


def multi_kernel(name, in_dts, exprs):
    """One Map kernel computing every ``exprs[key]`` (built from loads of the inputs) into its own output:
    one compile for many ops."""
    ins = tuple(ir.Arg(f"x{i}", dt, 1) for i, dt in enumerate(in_dts))
    keys = list(exprs)
    outs = tuple(ir.Arg(f"o_{k}", exprs[k].dtype, 1, True) for k in keys)
    stores = tuple(ir.Store(len(ins) + j, ir.Strided(), exprs[k]) for j, k in enumerate(keys))
    return ir.Kernel(name, ins + outs, (), 1, ir.Map(stores)), keys


def run_multi(name, host_inputs, exprs):
    k, keys = multi_kernel(name, [{v: k for k, v in NP.items()}[h.dtype.type] for h in host_inputs], exprs)
    n = host_inputs[0].shape[0]
    outs = [cupy.empty(n, NP[a.dtype]) for a in k.args[len(host_inputs):]]
    _ir.launch(k, (n,), [cupy.asarray(h) for h in host_inputs] + outs)
    return {key: cupy.asnumpy(o) for key, o in zip(keys, outs)}


FLOAT_UNARY = {"neg": np.negative, "abs": np.abs, "square": np.square, "reciprocal": np.reciprocal,
               "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
               "sqrt": np.sqrt, "exp": np.exp, "expm1": np.expm1, "log": np.log, "log1p": np.log1p,
               "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan,
               "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
               "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
               "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}
# floordiv: NumPy's, with the standard's results for one infinite operand (the host's, as every device)
FLOAT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                "floordiv": standard_floor_divide, "mod": np.remainder, "pow": np.power, "max": np.maximum,
                "min": np.minimum, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
                "nextafter": np.nextafter, "logaddexp": np.logaddexp, "eq": np.equal, "ne": np.not_equal,
                "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}
INT_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide,
              "mod": np.remainder, "max": np.maximum, "min": np.minimum, "and": np.bitwise_and,
              "or": np.bitwise_or, "xor": np.bitwise_xor, "lt": np.less, "eq": np.equal}
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, np.nan, 1e-40, 3.0, 7.5])


@needs_cuda
@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_float_ops_match_numpy(rng, dt):
    s = SPECIALS.astype(NP[dt])
    x = np.concatenate([rand(rng, dt, (400,)), np.repeat(s, s.size)])
    y = np.concatenate([rand(rng, dt, (400,)), np.tile(s, s.size)])
    lx, ly = ir.load(0, dt), ir.load(1, dt)
    exprs = {f"u_{n}": ir.op(n, lx) for n in FLOAT_UNARY}
    exprs.update({f"b_{n}": ir.op(n, lx, ly) for n in FLOAT_BINARY})
    got = run_multi(f"float_{dt}", [x, y], exprs)
    tol = 2e-5 if dt == "f32" else 1e-12
    with np.errstate(all="ignore"):
        for key, ref in [(f"u_{n}", lambda f=f: f(x)) for n, f in FLOAT_UNARY.items()] + \
                        [(f"b_{n}", lambda f=f: f(x, y)) for n, f in FLOAT_BINARY.items()]:
            want = ref()
            rtol = tol * 50 if key == "u_tan" else tol      # ill-conditioned near its poles
            np.testing.assert_allclose(got[key], want, rtol=rtol, atol=tol / 10, equal_nan=True,
                                       err_msg=f"{key} {dt}")
            if key[2:] in ("floordiv", "mod", "copysign", "add", "mul"):
                ok = np.isnan(want) | (np.signbit(got[key]) == np.signbit(want))
                assert ok.all(), f"{key} {dt}: sign of zero differs at {np.flatnonzero(~ok)[:5]}"


@needs_cuda
@pytest.mark.parametrize("dt", REAL[:8])
def test_integer_ops_wrap_like_numpy(rng, dt):
    info = np.iinfo(NP[dt])
    bits = info.bits
    x = rng.integers(info.min, info.max, size=600, endpoint=True, dtype=NP[dt])
    y = rng.integers(info.min, info.max, size=600, endpoint=True, dtype=NP[dt])
    y[:50] = 0
    y[50:60] = -1 if info.min < 0 else 1
    x[60:70] = info.min
    sh = rng.integers(0, bits + 3, size=600).astype(NP[dt])
    small = rng.integers(0, 6, size=600).astype(NP[dt])
    lx, ly, lsh, lsm = (ir.load(i, dt) for i in range(4))
    unary = {"neg": np.negative, "abs": np.abs, "square": np.square, "invert": np.invert, "sign": np.sign}
    exprs = {f"b_{n}": ir.op(n, lx, ly) for n in INT_BINARY}
    exprs.update({f"u_{n}": ir.op(n, lx) for n in unary})
    exprs["shl"] = ir.op("shl", lx, lsh)
    exprs["pow"] = ir.op("pow", lx, lsm)
    got = run_multi(f"int_{dt}", [x, y, sh, small], exprs)
    with np.errstate(all="ignore"):
        for name, ref in INT_BINARY.items():
            want = ref(x, y)
            if name in ("floordiv", "mod"):   # NumPy: division by zero gives 0
                want = np.where(y == 0, 0, want)
            np.testing.assert_array_equal(got[f"b_{name}"], want, err_msg=f"{name} {dt}")
        for name, ref in unary.items():
            np.testing.assert_array_equal(got[f"u_{name}"], ref(x), err_msg=f"{name} {dt}")
        np.testing.assert_array_equal(got["shl"], np.where(sh >= bits, 0, np.left_shift(x, np.minimum(sh, bits - 1))))
        np.testing.assert_array_equal(got["pow"], np.power(x, small))


@needs_cuda
def test_casts_and_complex(rng):
    f = np.concatenate([rand(rng, "f64", (300,)), [-0.0, 0.0, 2.9, -2.9, 127.5]])
    dsts = ("i8", "i32", "i64", "bool", "f32", "c128")
    got = run_multi("casts", [f], {d: ir.cast(ir.load(0, "f64"), d) for d in dsts})
    for d in dsts:
        np.testing.assert_array_equal(got[d], f.astype(NP[d]), err_msg=d)
    fa = np.abs(f)                           # float -> unsigned of a negative value is undefined in C
    got = run_multi("ucasts", [fa], {d: ir.cast(ir.load(0, "f64"), d) for d in ("u8", "u16", "u32", "u64")})
    for d in ("u8", "u16", "u32", "u64"):
        np.testing.assert_array_equal(got[d], fa.astype(NP[d]), err_msg=d)
    b = rng.random(50) < 0.5
    got = run_multi("bool_casts", [b], {d: ir.cast(ir.load(0, "bool"), d) for d in ("f32", "c64", "i16")})
    for d in ("f32", "c64", "i16"):
        np.testing.assert_array_equal(got[d], b.astype(NP[d]))
    for dt in ("c64", "c128"):
        x, y = rand(rng, dt, (300,)), rand(rng, dt, (300,))
        tol = 1e-5 if dt == "c64" else 1e-13
        lx, ly = ir.load(0, dt), ir.load(1, dt)
        binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}
        unary = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs, "conj": np.conj,
                 "real": np.real, "imag": np.imag, "square": np.square, "reciprocal": np.reciprocal}
        exprs = {f"b_{n}": ir.op(n, lx, ly) for n in binary}
        exprs.update({f"u_{n}": ir.op(n, lx) for n in unary})
        got = run_multi(f"complex_{dt}", [x, y], exprs)
        for n, ref in binary.items():
            np.testing.assert_allclose(got[f"b_{n}"], ref(x, y), rtol=tol, err_msg=f"{n} {dt}")
        for n, ref in unary.items():
            np.testing.assert_allclose(got[f"u_{n}"], ref(x), rtol=tol, err_msg=f"{n} {dt}")


@needs_cuda
def test_broadcast_views_params_and_select(rng):
    # out[i, j] = where(x[i, j] > p0, x[i, j] * y[j], p1) with y broadcast over rows, x a transposed view
    x = ir.load(0, "f32")
    y = ir.load(1, "f32")
    v = ir.select(ir.op("gt", x, ir.Param(0, "f32")), ir.op("mul", x, y), ir.Param(1, "f32"))
    k = ir.Kernel("bcast", (ir.Arg("x", "f32", 2), ir.Arg("y", "f32", 2), ir.Arg("out", "f32", 2, True)),
                  ("f32", "f32"), 2, ir.Map((ir.Store(2, ir.Strided(), v),)))
    hx = rand(rng, "f32", (37, 29))
    hy = rand(rng, "f32", (37,))
    cx = cupy.asarray(hx).T                          # (29, 37), strides (1, 29)
    cy = cupy.broadcast_to(cupy.asarray(hy), (29, 37))   # stride 0 over rows
    out = cupy.empty((29, 37), np.float32)
    _ir.launch(k, (29, 37), [cx, cy, out], params=(0.25, -7.0))
    want = np.where(hx.T > np.float32(0.25), hx.T * hy, np.float32(-7.0))
    np.testing.assert_array_equal(cupy.asnumpy(out), want)


def reduce_kernel(op, dt, out_dt, split=False, with_index=False):
    args = [ir.Arg("x", dt, 2), ir.Arg("out", out_dt, 0 if split else 1, True)]
    if with_index:
        args.append(ir.Arg("idx", "i64", 0 if split else 1, True))
    return ir.Kernel(f"red_{op}_{dt}_{split}", tuple(args), (), 2,
                     ir.Reduce(op, ir.load(0, dt), 1, 1, 2 if with_index else None, split))


@needs_cuda
@pytest.mark.parametrize("dt", ["f32", "i64", "u8"])
def test_reductions_match_numpy(rng, dt):
    h = rand(rng, dt, (13, 3001))
    c = cupy.asarray(h)
    for op, ref in {"sum": np.sum, "min": np.min}.items():
        out = cupy.empty(13, NP[dt])
        _ir.launch(reduce_kernel(op, dt, dt), h.shape, [c, out])
        want = ref(h, axis=1).astype(NP[dt]) if op != "sum" else h.sum(axis=1, dtype=NP[dt])
        got = cupy.asnumpy(out)
        if op == "sum" and dt == "f32":
            # A float32 sum is accurate relative to sum|x|, not to the result (a row summing to
            # -0.16 from 3001 terms of size ~3 cancels): NumPy's pairwise order and the kernel's
            # tree order each err by at most about depth * eps32 * sum|x|, depth ~ 20 here.
            bound = 2e-6 * np.abs(h.astype(np.float64)).sum(axis=1)
            err = np.abs(got.astype(np.float64) - want)
            assert (err <= bound).all(), f"sum f32: |error| {err} above 2e-6 * sum|x| = {bound}"
        else:   # integer sums (wrapping alike) and minima are exact
            np.testing.assert_array_equal(got, want, err_msg=f"{op} {dt}")
    # split: 4 partials per row, combined on the host here
    out = cupy.empty(13 * 4, NP[dt])
    _ir.launch(reduce_kernel("max", dt, dt, split=True), h.shape, [c, out],
               extras={"nsplit": 4, "chunk": -(-3001 // 4)})
    np.testing.assert_array_equal(cupy.asnumpy(out).reshape(13, 4).max(axis=1), h.max(axis=1))


@needs_cuda
def test_argmax_first_nan_and_first_extreme(rng):
    h = rand(rng, "f64", (7, 1000))
    h[1, 500] = h[1, 700] = 1e9
    h[2, 300] = np.nan
    h[2, 900] = np.nan
    c = cupy.asarray(h)
    for op, ref in (("argmax", np.argmax), ("argmin", np.argmin)):
        val, idx = cupy.empty(7, np.float64), cupy.empty(7, np.int64)
        _ir.launch(reduce_kernel(op, "f64", "f64", with_index=True), h.shape, [c, val, idx])
        np.testing.assert_array_equal(cupy.asnumpy(idx), ref(h, axis=1), err_msg=op)


@needs_cuda
@pytest.mark.parametrize("exclusive", [False, True])
def test_scan_matches_numpy(rng, exclusive):
    h = rand(rng, "i32", (5, 1000))
    k = ir.Kernel(f"scan_{exclusive}", (ir.Arg("x", "i32", 2), ir.Arg("out", "i64", 2, True)), (), 2,
                  ir.Scan("add", ir.cast(ir.load(0, "i32"), "i64"), 1, exclusive))
    out = cupy.empty((5, 1000), np.int64)
    _ir.launch(k, h.shape, [cupy.asarray(h), out])
    want = np.cumsum(h, axis=1, dtype=np.int64)
    if exclusive:
        want = np.concatenate([np.zeros((5, 1), np.int64), want[:, :-1]], axis=1)
    np.testing.assert_array_equal(cupy.asnumpy(out), want)


@needs_cuda
def test_fold_matmul(rng):
    kv = ir.Var("k")
    a = ir.Load(0, ir.Strided((ir.Coord(0), kv)), "f64")
    b = ir.Load(1, ir.Strided((kv, ir.Coord(1))), "f64")
    dot = ir.Fold("add", kv, ir.const(0, "i32"), ir.Size(2), ir.op("mul", a, b), ir.const(0.0, "f64"), "f64")
    # iteration space (M, N, K): the Map stores over (i, j); K is only a size (coordinate 2 unused)
    k = ir.Kernel("mm", (ir.Arg("a", "f64", 2), ir.Arg("b", "f64", 2), ir.Arg("out", "f64", 3, True)), (), 3,
                  ir.Map((ir.Store(2, ir.Strided(), dot, when=ir.op("eq", ir.Coord(2), ir.const(0, "i32"))),)))
    ha, hb = rand(rng, "f64", (17, 23)), rand(rng, "f64", (23, 11))
    out = cupy.zeros((17, 11, 1), np.float64)
    ob = out.reshape(17, 11, 1)
    # give out a third (broadcast) dimension of size 23 with stride 0: stored once per (i, j) via `when`
    view = cupy.lib.stride_tricks.as_strided(ob, (17, 11, 23), (ob.strides[0], ob.strides[1], 0))
    _ir.launch(k, (17, 11, 23), [cupy.asarray(ha), cupy.asarray(hb), view])
    np.testing.assert_allclose(cupy.asnumpy(out)[:, :, 0], ha @ hb, rtol=1e-12)


# ----------------------------------------------------------------- host emulation (any machine with g++)
# The Map kernels are plain C++ apart from a few CUDA built-ins; with the shim below and one
# "thread" (blockIdx = threadIdx = 0, gridDim = blockDim = 1) the grid-stride loop visits every
# point, so the renderer's semantics (wrapping, floordiv/mod, casts, shifts, NaN rules) are checked
# against NumPy without a GPU.
_SHIM = r"""
#include <cmath>
#include <cstring>
using namespace std;
struct rdim3 { unsigned x, y, z; };
static const rdim3 blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __launch_bounds__(x)
#define __align__(n) alignas(n)
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline double __longlong_as_double(long long u) { double f; memcpy(&f, &u, 8); return f; }
"""


def _gxx():
    import shutil
    return shutil.which("g++")


class HostModule:
    """Rendered Map kernels compiled for the host into one shared library."""

    def __init__(self, kernels, tmp_path):
        import ctypes
        import subprocess
        progs = [cuda_c.CudaCRenderer().render(k) for k in kernels]
        files = []
        for i, p in enumerate(progs):      # one translation unit per program (helpers are inline)
            f = tmp_path / f"k{i}.cpp"
            f.write_text(_SHIM + p.source)
            files.append(str(f))
        lib = tmp_path / "kernels.so"
        r = subprocess.run([_gxx(), "-O0", "-std=c++17", "-shared", "-fPIC", "-o", str(lib)] + files,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:4000]
        self.lib = ctypes.CDLL(str(lib))
        self.progs = {p.kernel: p for p in progs}

    def run(self, kernel, shape, arrays, params=()):
        import ctypes
        views = [(0, tuple(s // a.itemsize for s in a.strides) if arg.ndim else ())
                 for a, arg in zip(arrays, kernel.args)]
        from ruda.runtime import packing
        words = packing.pack(kernel, shape, views, params)
        fn = getattr(self.lib, self.progs[kernel].name)
        fn.restype = None
        fn(ctypes.c_void_p(words.ctypes.data), *[ctypes.c_void_p(a.ctypes.data) for a in arrays])


def _host_multi(mod, kernel, host_inputs):
    n = host_inputs[0].shape[0]
    outs = [np.empty(n, NP[a.dtype]) for a in kernel.args[len(host_inputs):]]
    mod.run(kernel, (n,), list(host_inputs) + outs)
    return outs


@pytest.mark.skipif(_gxx() is None, reason="no g++ to compile the rendered kernels for the host")
def test_rendered_map_kernels_on_the_host(tmp_path, rng):
    kernels, checks = [], []
    for dt in ("f32", "f64"):
        s = SPECIALS.astype(NP[dt])
        x = np.concatenate([rand(rng, dt, (300,)), np.repeat(s, s.size)])
        y = np.concatenate([rand(rng, dt, (300,)), np.tile(s, s.size)])
        lx, ly = ir.load(0, dt), ir.load(1, dt)
        exprs = {f"u_{n}": ir.op(n, lx) for n in FLOAT_UNARY}
        exprs.update({f"b_{n}": ir.op(n, lx, ly) for n in FLOAT_BINARY})
        k, keys = multi_kernel(f"hf_{dt}", [dt, dt], exprs)
        refs = [(lambda f=f, x=x: f(x)) for f in FLOAT_UNARY.values()] + \
               [(lambda f=f, x=x, y=y: f(x, y)) for f in FLOAT_BINARY.values()]
        kernels.append(k)
        checks.append((k, [x, y], keys, refs, 2e-5 if dt == "f32" else 1e-12))
    for dt in REAL[:8]:
        info = np.iinfo(NP[dt])
        x = rng.integers(info.min, info.max, size=400, endpoint=True, dtype=NP[dt])
        y = rng.integers(info.min, info.max, size=400, endpoint=True, dtype=NP[dt])
        y[:30] = 0
        y[30:40] = -1 if info.min < 0 else 1
        x[40:50] = info.min
        sh = rng.integers(-info.bits - 3 if info.min < 0 else 0, info.bits + 3, size=400).astype(NP[dt])
        sm = rng.integers(0, 6, size=400).astype(NP[dt])
        lx, ly, lsh, lsm = (ir.load(i, dt) for i in range(4))
        exprs = {f"b_{n}": ir.op(n, lx, ly) for n in INT_BINARY}
        exprs.update({"neg": ir.op("neg", lx), "abs": ir.op("abs", lx), "invert": ir.op("invert", lx),
                      "sign": ir.op("sign", lx), "square": ir.op("square", lx),
                      "shl": ir.op("shl", lx, lsh), "shr": ir.op("shr", lx, lsh), "pow": ir.op("pow", lx, lsm)})
        k, keys = multi_kernel(f"hi_{dt}", [dt] * 4, exprs)
        refs = [(lambda f=f, x=x, y=y: np.where(y == 0, 0, f(x, y)) if f in (np.floor_divide, np.remainder)
                 else f(x, y)) for f in INT_BINARY.values()]
        refs += [lambda x=x: np.negative(x), lambda x=x: np.abs(x), lambda x=x: np.invert(x),
                 lambda x=x: np.sign(x), lambda x=x: np.square(x),
                 lambda x=x, sh=sh: np.left_shift(x, sh),      # NumPy: 0 / sign fill past the width or < 0
                 lambda x=x, sh=sh: np.right_shift(x, sh), lambda x=x, sm=sm: np.power(x, sm)]
        kernels.append(k)
        checks.append((k, [x, y, sh, sm], keys, refs, 0))
    f = np.concatenate([rand(rng, "f64", (200,)), [-0.0, 0.0, 2.9, -2.9, 127.5]])
    k, keys = multi_kernel("hcasts", ["f64"], {d: ir.cast(ir.load(0, "f64"), d)
                                               for d in ("i8", "i32", "i64", "bool", "f32", "c128", "c64")})
    kernels.append(k)
    checks.append((k, [f], keys, [lambda d=d: f.astype(NP[d]) for d in keys], 0))
    for dt in ("c64", "c128"):
        x, y = rand(rng, dt, (200,)), rand(rng, dt, (200,))
        lx, ly = ir.load(0, dt), ir.load(1, dt)
        binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "eq": np.equal}
        unary = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs, "conj": np.conj,
                 "real": np.real, "imag": np.imag, "square": np.square, "reciprocal": np.reciprocal}
        exprs = {f"b_{n}": ir.op(n, lx, ly) for n in binary}
        exprs.update({f"u_{n}": ir.op(n, lx) for n in unary})
        k, keys = multi_kernel(f"hc_{dt}", [dt, dt], exprs)
        refs = [(lambda g=g, x=x, y=y: g(x, y)) for g in binary.values()] + \
               [(lambda g=g, x=x: g(x)) for g in unary.values()]
        kernels.append(k)
        checks.append((k, [x, y], keys, refs, 1e-5 if dt == "c64" else 1e-12))
    mod = HostModule(kernels, tmp_path)
    with np.errstate(all="ignore"):
        for k, inputs, keys, refs, tol in checks:
            outs = _host_multi(mod, k, inputs)
            for key, got, ref in zip(keys, outs, refs):
                want = ref()
                if tol:
                    rtol = tol * 50 if key == "u_tan" else tol
                    np.testing.assert_allclose(got, want, rtol=rtol, atol=tol / 10, equal_nan=True,
                                               err_msg=f"{k.name} {key}")
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{k.name} {key}")
                if key[2:] in ("floordiv", "mod", "copysign", "add", "mul") and np.asarray(want).dtype.kind == "f":
                    ok = np.isnan(want) | (np.signbit(got) == np.signbit(want))
                    assert ok.all(), f"{k.name} {key}: sign of zero differs at {np.flatnonzero(~ok)[:5]}"


@pytest.mark.skipif(_gxx() is None, reason="no g++ to compile the rendered kernels for the host")
def test_rendered_serial_reductions_and_fold_on_the_host(tmp_path, rng):
    """Serial reductions (one thread per output: exact on the host) share identity, combine, argmax
    rules and output indexing with the parallel ones; Fold is a Map."""
    serial = (("serial", True),)
    ks = {}
    for op in ("sum", "max", "min", "prod", "argmax", "argmin"):
        for dt in ("f64", "i32", "u8"):
            args = [ir.Arg("x", dt, 2), ir.Arg("out", dt, 1, True)]
            idx = None
            if op.startswith("arg"):
                args.append(ir.Arg("idx", "i64", 1, True))
                idx = 2
            ks[(op, dt)] = ir.Kernel(f"sr_{op}_{dt}", tuple(args), (), 2,
                                     ir.Reduce(op, ir.load(0, dt), 1, 1, idx), hints=serial)
    kv = ir.Var("k")
    a = ir.Load(0, ir.Strided((ir.Coord(0), kv)), "f64")
    b = ir.Load(1, ir.Strided((kv, ir.Coord(1))), "f64")
    dot = ir.Fold("add", kv, ir.const(0, "i32"), ir.Size(2), ir.op("mul", a, b), ir.const(0.0, "f64"), "f64")
    mm = ir.Kernel("hmm", (ir.Arg("a", "f64", 2), ir.Arg("b", "f64", 2), ir.Arg("out", "f64", 3, True)), (), 3,
                   ir.Map((ir.Store(2, ir.Strided(), dot, when=ir.op("eq", ir.Coord(2), ir.const(0, "i32"))),)))
    mod = HostModule(list(ks.values()) + [mm], tmp_path)
    refs = {"sum": np.sum, "max": np.max, "min": np.min, "prod": np.prod, "argmax": np.argmax, "argmin": np.argmin}
    for (op, dt), k in ks.items():
        h = rand(rng, dt, (9, 31))
        if dt == "f64":
            h[2, 5] = h[2, 20] = np.nan
            h[3, 7] = h[3, 9] = 1e9
            h[4, 1] = h[4, 3] = -1e9
        out = np.empty(9, NP[dt])
        args = [h, out]
        if op.startswith("arg"):
            args.append(np.empty(9, np.int64))
        mod.run(k, h.shape, args)
        with np.errstate(all="ignore"):
            want = refs[op](h, axis=1)
        if op.startswith("arg"):
            np.testing.assert_array_equal(args[2], want, err_msg=f"{op} {dt}")
        else:
            np.testing.assert_allclose(out, want.astype(NP[dt]), rtol=1e-12, equal_nan=True, err_msg=f"{op} {dt}")
    ha, hb = rand(rng, "f64", (7, 13)), rand(rng, "f64", (13, 5))
    ob = np.zeros((7, 5, 1))
    view = np.lib.stride_tricks.as_strided(ob, (7, 5, 13), (ob.strides[0], ob.strides[1], 0))
    mod.run(mm, (7, 5, 13), [ha, hb, view])
    np.testing.assert_allclose(ob[:, :, 0], ha @ hb, rtol=1e-12)


def _bisect_kernel(dt, right):
    """out = searchsorted(s, v, side) for sorted arg 0 (flat, s.size in param 0): an Iterate over
    param 1 = s.size.bit_length() steps of (param 2 = the largest power of two <= s.size) >> k."""
    pos, k = ir.Var("pos"), ir.Var("k")
    n, steps, top = (ir.Param(i, "i32") for i in range(3))
    v = ir.load(1, dt)
    cand = ir.op("add", pos, ir.op("shr", top, k))
    a = ir.Load(0, ir.Flat(ir.op("sub", ir.op("min", cand, n), ir.const(1, "i32"))), dt)
    ok = ir.op("and", ir.op("le", cand, n), ir.op("le" if right else "lt", a, v))
    found = ir.iterate(k, ir.const(0, "i32"), steps, pos, ir.const(0, "i32"), ir.select(ok, cand, pos))
    return ir.Kernel(f"bisect_{dt}_{right}", (ir.Arg("s", dt, 0), ir.Arg("v", dt, 1), ir.Arg("o", "i64", 1, True)),
                     ("i32", "i32", "i32"), 1, ir.Map((ir.Store(2, ir.Strided(), ir.cast(found, "i64")),)))


def test_iterate_renders_a_loop_carrying_its_value():
    src = cuda_c.CudaCRenderer().render(_bisect_kernel("f64", False)).source
    lines = [ln.strip() for ln in src.splitlines()]
    at = [i for i, ln in enumerate(lines) if ln.startswith("for (int t")]
    assert len(at) == 1, src
    before, after = "\n".join(lines[:at[0]]), "\n".join(lines[at[0]:])
    assert "a1[" in before and "a1[" not in after         # the query: loaded once, before the loop
    assert "a0[" in after                                 # the sorted values: in it
    head = lines[at[0] - 1]
    assert head.startswith("int t") and head.endswith(" = ((int)0);"), head   # the carried value
    assert f"{head.split()[1]} = t" in after              # assigned in the loop, by a fresh name
    assert "pos" not in src and " k " not in src          # the Vars' own names are not used


@pytest.mark.skipif(_gxx() is None, reason="no g++ to compile the rendered kernels for the host")
def test_rendered_iterate_on_the_host(tmp_path, rng):
    """The binary search Iterate, compiled for the host, against np.searchsorted at sizes around
    powers of two (the same kernel for every size)."""
    ks = {(dt, right): _bisect_kernel(dt, right) for dt in ("f64", "i32") for right in (False, True)}
    mod = HostModule(list(ks.values()), tmp_path)
    for n in (1, 2, 3, 7, 8, 9, 1000, 1024, 1025):
        for (dt, right), k in ks.items():
            s = np.sort(rng.integers(-20, 20, n)).astype(NP[dt])
            v = np.concatenate([s, rng.integers(-25, 25, 50).astype(NP[dt])])
            out = np.empty(v.size, np.int64)
            steps = n.bit_length()
            mod.run(k, (v.size,), [s, v, out], (n, steps, 1 << (steps - 1)))
            np.testing.assert_array_equal(out, np.searchsorted(s, v, side="right" if right else "left"),
                                          err_msg=f"{dt} right={right} n={n}")


# ------------------------------------------- the cuda backend's vectorized kernels (ruda.runtime.kernels.fast_cuda)
def test_fast_kernel_sources_render_everywhere():
    from ruda.runtime.kernels import fast_cuda as F
    i8, f32, f64 = np.dtype(np.int8), np.dtype(np.float32), np.dtype(np.float64)
    src = F.source("binary", "add", i8)
    assert "typedef signed char T;" in src and "(T)((unsigned int)x + (unsigned int)y)" in src   # wraps
    assert "x / y" in F.source("binary", "divide", f64) and "typedef double ACC;" in F.source("sum", "sum", f32)
    assert F.source("binary", "add", f32, {"unroll": 8}) != F.source("binary", "add", f32)
    assert F.supports_binary("divide", f32) and not F.supports_binary("divide", np.dtype(np.int32))
    assert not F.supports_binary("add", np.dtype(np.complex64))
    with pytest.raises(ValueError, match=r"fast_cuda\.source: unknown kind 'scan'"):
        F.source("scan", "add", f32)
