"""ruda.runtime: IR, metadata packing, WGSL rendering, program cache (no device needed but for
one IR kernel run on wgpu)."""
import struct

import numpy as np
import pytest

from ruda.runtime import ir, packing
from ruda.runtime.cache import ProgramCache
from ruda.runtime.wgsl import WGSLRenderer, literal


def _add_kernel(nd=2, dt="f32"):
    a, b = ir.load(0, dt), ir.load(1, dt)
    return ir.Kernel("add", (ir.Arg("a", dt, nd), ir.Arg("b", dt, nd), ir.Arg("o", dt, nd, True)), (dt,), nd,
                     ir.Map((ir.Store(2, ir.Strided(), ir.op("mul", ir.op("add", a, b), ir.Param(0, dt))),)))


def test_kernels_are_hashable_cache_keys():
    assert _add_kernel() == _add_kernel()
    assert hash(_add_kernel()) == hash(_add_kernel())
    assert _add_kernel(2) != _add_kernel(3)


def test_op_result_dtypes():
    x = ir.load(0, "c64")
    assert ir.op("abs", x).dtype == "f32"
    assert ir.op("lt", ir.load(0, "i8"), ir.load(1, "i8")).dtype == "bool"
    with pytest.raises(ValueError, match="unknown op"):
        ir.op("frobnicate", x)


def test_packing_layout_and_values():
    k = _add_kernel(2, "f64")
    lay = packing.layout(k)
    words = packing.pack(k, (3, 4), [(5, (4, 1)), (0, (0, 1)), (0, (4, 1))], (2.5,))
    assert words[0] == 12 and list(words[1:3]) == [3, 4]
    assert words[lay.arg_at[0]] == 5 and list(words[lay.arg_at[0] + 1:lay.arg_at[0] + 3]) == [4, 1]
    lo, hi = words[lay.param_at[0]], words[lay.param_at[0] + 1]
    assert struct.unpack("<d", struct.pack("<2I", lo, hi))[0] == 2.5
    neg = packing.pack(k, (3, 4), [(0, (-4, 1)), (0, (0, 1)), (0, (4, 1))], (1.0,))
    assert neg[lay.arg_at[0] + 1].view(np.int32) == -4


def test_reduce_and_scan_extras():
    v = ir.load(0, "f32")
    red = ir.Kernel("s", (ir.Arg("x", "f32", 2), ir.Arg("o", "f32", 1, True)), (), 2, ir.Reduce("sum", v, 1, 1))
    w = packing.pack(red, (3, 7), [(0, (7, 1)), (0, (1,))])
    lay = packing.layout(red)
    assert w[0] == 3 and w[lay.extra_at["red_n"]] == 7 and w[lay.extra_at["nsplit"]] == 1
    sc = ir.Kernel("c", (ir.Arg("x", "f32", 2), ir.Arg("o", "f32", 2, True)), (), 2, ir.Scan("add", v, 1))
    assert packing.pack(sc, (3, 7), [(0, (7, 1)), (0, (7, 1))])[packing.layout(sc).extra_at["scan_n"]] == 7


def test_wgsl_render_declares_features_and_bindings():
    r = WGSLRenderer(f16=True, f64=True, int64=True)
    src = r.render(_add_kernel(2, "f64")).source
    assert "var<uniform> rmeta" in src and "@binding(3) var<storage, read_write> a2: array<f64>" in src
    assert "@binding(1) var<storage, read> a0" in src
    assert "enable f16;" in r.render(_add_kernel(1, "f16")).source
    small = r.render(_add_kernel(1, "i8")).source
    assert "<< 24u) >> 24u" in small           # i8 values re-wrapped after arithmetic
    assert not WGSLRenderer().supports("f64") and WGSLRenderer(f64=True).supports("c128")


def test_wgsl_literals():
    assert literal(-2**31, "i32") == "i32(-2147483647 - 1)"
    assert literal(3, "u64") == "3lu"
    assert literal(float("inf"), "f32") == "inf_f32()"
    assert literal(0.5, "f64") == "0.5lf"
    assert literal(300, "i8") == "44i"


def test_every_op_renders_for_its_types():
    r = WGSLRenderer(f64=True, int64=True)
    for name, (arity, _) in ir.OPS.items():
        for dt in ("f32", "f64", "i32", "u8", "i64", "c64", "bool"):
            args = [ir.load(i, dt) for i in range(arity)]
            try:
                e = ir.op(name, *args)
            except ValueError:
                continue
            k = ir.Kernel(name, tuple(ir.Arg(f"x{i}", dt, 1) for i in range(arity)) +
                          (ir.Arg("o", e.dtype, 1, True),), (), 1, ir.Map((ir.Store(arity, ir.Strided(), e),)))
            try:
                src = r.render(k).source
            except ValueError as err:       # RenderError: op undefined for the type (e.g. shl on f32)
                assert "not defined" in str(err)
                continue
            assert "fn main" in src


def test_program_cache_two_levels():
    compiled = []
    cache = ProgramCache(WGSLRenderer(), lambda prog: compiled.append(prog.source) or len(compiled))
    p1, c1 = cache.get(_add_kernel())
    p2, c2 = cache.get(_add_kernel())
    assert p1 is p2 and c1 == c2 and len(compiled) == 1 and cache.hits == 1
    renamed = ir.Kernel("other", *[getattr(_add_kernel(), f) for f in ("args", "params", "ndim", "body")])
    cache.get(renamed)                       # a distinct IR kernel with the same source: no recompile
    assert len(compiled) == 1


def _finishing_sum(dt):
    v = ir.cast(ir.load(0, "f32"), dt)
    args = (ir.Arg("x", "f32", 1), ir.Arg("part", dt, 0, True), ir.Arg("out", dt, 0, True),
            ir.Arg("count", "u32", 0, True))
    return ir.Kernel("s", args, (), 1, ir.Reduce("sum", v, 1, 0, None, True, (2, 3)),
                     (("vec4", (True, False, False, False)),))


def test_finishing_reduction_renders_its_synchronization():
    """A one-pass (finish) reduction: partials and counter bound as atomics, a device-scope
    storageBarrier before the count and after it, the counter zeroed by the last workgroup;
    64-bit accumulators are refused (no 64-bit atomics), and so is the CUDA C renderer."""
    src = WGSLRenderer(f64=True, subgroup=True).render(_finishing_sum("f32")).source
    assert "var<storage, read_write> a1: array<atomic<u32>>" in src
    assert "var<storage, read_write> a3: array<atomic<u32>>" in src
    assert "var<storage, read_write> a2: array<f32>" in src
    tail = src[src.index("atomicAdd(&a3[0], 1u)"):]
    assert src.index("storageBarrier();") < src.index("atomicAdd(&a3[0], 1u)")
    assert "workgroupUniformLoad(&wl)" in tail and "storageBarrier();" in tail
    assert "atomicStore(&a3[0], 0u);" in tail and "atomicLoad(&a1[" in tail
    assert "atomicStore(&a1[" in src[:src.index("atomicAdd")]
    with pytest.raises(ValueError, match="32-bit accumulator"):
        WGSLRenderer(f64=True).render(_finishing_sum("f64"))
    from ruda.runtime import cuda_c
    with pytest.raises(cuda_c.RenderError, match="single-pass"):
        cuda_c.CudaCRenderer().render(_finishing_sum("f32"))


def _iterate_kernel():
    """out0 = x ** e (an Iterate multiplying e times); out1 = x * m (m + 1) / 2 (an Iterate over
    j < m adding an inner Iterate's (j + 1) * x), the inner one reusing out0's Vars."""
    x, e, m = ir.load(0, "f32"), ir.load(1, "i32"), ir.load(2, "i32")
    k, acc, j, tot = ir.Var("k"), ir.Var("acc", "f32"), ir.Var("j"), ir.Var("tot", "f32")
    zero = ir.const(0, "i32")
    power = ir.iterate(k, zero, e, acc, ir.const(1.0, "f32"), ir.op("mul", acc, x))
    inner = ir.iterate(k, zero, ir.op("add", j, ir.const(1, "i32")), acc, ir.const(0.0, "f32"),
                       ir.op("add", acc, x))
    tri = ir.iterate(j, zero, m, tot, ir.const(0.0, "f32"), ir.op("add", tot, inner))
    args = (ir.Arg("x", "f32", 1), ir.Arg("e", "i32", 1), ir.Arg("m", "i32", 1),
            ir.Arg("o0", "f32", 1, True), ir.Arg("o1", "f32", 1, True))
    return ir.Kernel("iter", args, (), 1, ir.Map((ir.Store(3, ir.Strided(), power),
                                                  ir.Store(4, ir.Strided(), tri))))


def test_iterate_renders_loops_with_fresh_names_and_hoisted_invariants():
    src = WGSLRenderer().render(_iterate_kernel()).source
    body = src[src.index("fn main"):]
    heads = [ln.strip() for ln in body.splitlines() if ln.strip().startswith("for (var t")]
    assert len(heads) == 3, body
    names = [h.split()[2].rstrip(":") for h in heads]
    assert len(set(names)) == 3                     # Vars reused by two loops get fresh names
    assert "k" not in names and "j" not in names
    loads_x = [ln for ln in body.splitlines() if "= a0[" in ln]
    assert len(loads_x) == 1 and body.index(loads_x[0]) < body.index(heads[0])   # hoisted, shared
    # a nested loop rebinding an enclosing loop's Var is refused, naming the renderer and Var
    j, tot = ir.Var("j"), ir.Var("tot", "f32")
    x = ir.load(0, "f32")
    inner = ir.iterate(j, ir.const(0, "i32"), ir.const(3, "i32"), tot, x, ir.op("add", tot, x))
    outer = ir.iterate(j, ir.const(0, "i32"), ir.const(3, "i32"), tot, x, ir.op("add", tot, inner))
    k = ir.Kernel("shadow", (ir.Arg("x", "f32", 1), ir.Arg("o", "f32", 1, True)), (), 1,
                  ir.Map((ir.Store(1, ir.Strided(), outer),)))
    with pytest.raises(ValueError, match=r"wgsl: loop variable 'j' of 'shadow' is already bound"):
        WGSLRenderer().render(k)
    with pytest.raises(ValueError, match=r"ir.iterate: acc \(i32\), init \(f32\)"):
        ir.iterate(j, ir.const(0, "i32"), ir.const(3, "i32"), ir.Var("a"), x, x)


def test_iterate_runs_on_wgpu(wgpu_device):
    import ruda as xp
    b = wgpu_device.backend
    rng = np.random.default_rng(3)
    n = 1000
    x = rng.integers(-3, 4, n).astype(np.float32)
    e = rng.integers(-2, 8, n).astype(np.int32)          # a loop with stop <= start runs 0 times
    m = rng.integers(-1, 40, n).astype(np.int32)
    ins = [xp.asarray(a, device=wgpu_device)._data for a in (x, e, m)]
    outs = [b._new((n,), np.float32) for _ in range(2)]
    b._launch(_iterate_kernel(), ins + outs, [a.strides for a in ins + outs], (n,))
    o0, o1 = (b.to_host(o) for o in outs)
    np.testing.assert_array_equal(o0, np.where(e > 0, x.astype(np.float64) ** np.maximum(e, 0), 1))
    np.testing.assert_array_equal(o1, np.where(m > 0, x * m * (m + 1) / 2, 0))
