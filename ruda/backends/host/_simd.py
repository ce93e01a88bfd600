"""Block dot products of the quantized GEMV written as LLVM vector IR (Numba intrinsics).

Numba's loops reach the host's vectors only through LLVM's vectorizer, which on AVX-512
machines stops at 256 bits (LLVM's ``prefer-vector-width``) and keeps small accumulator
arrays in memory. These intrinsics spell the 16-lane vectors out: LLVM lowers them to one
AVX-512 register each (two AVX2 registers, four NEON ones) with the accumulators in registers.

``q4_dot2(xl, xh, q, d, o, p)``: for rows ``o`` and ``p`` of a Q4 weight (``q`` (out, in/2)
uint8, two nibbles a byte; ``d`` (out, blocks) float32), ``sum_b d[r, b] * (xl_b . lo(q[r])_b +
xh_b . hi(q[r])_b)``, where ``xl``/``xh`` (in/2,) hold the elements of x that meet each
block's low and high nibbles. ``q8_dot2(x, q, d, o, p)``: the same for a Q8_0 weight (``q``
(out, in) int8), ``sum_b d[r, b] * (x_b . q[r]_b)``. Each returns the two sums; the float
operations run in a fixed order (the same result every call).
"""
try:
    import numba as _nb
except ImportError:          # optional: the GEMV that uses these needs Numba too
    _nb = None

_LANES = 16


def _ir_helpers():
    from llvmlite import ir
    from numba.core import cgutils

    f32, i32 = ir.FloatType(), ir.IntType(32)
    vf = ir.VectorType(f32, _LANES)
    vi = ir.VectorType(i32, _LANES)
    vb = ir.VectorType(ir.IntType(8), _LANES)
    undef = ir.Constant(vf, ir.Undefined)

    def load(builder, base, off, vty):
        """``vty`` from element ``off`` of ``base`` (a data pointer), unaligned."""
        return builder.load(builder.bitcast(builder.gep(base, [off]), vty.as_pointer()), align=1)

    def fma(builder, a, b, c):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vf, [vf] * 3),
                                            f"llvm.fma.v{_LANES}f32")
        return builder.call(fn, [a, b, c])

    def broadcast(builder, s):
        v = builder.insert_element(undef, s, ir.Constant(i32, 0))
        return builder.shuffle_vector(v, undef, ir.Constant(vi, [0] * _LANES))

    def hsum(builder, v):
        """The lanes' sum as a halving tree (four adds for 16 lanes)."""
        n = _LANES
        while n > 1:
            h = n // 2
            lo = builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, h), list(range(h))))
            hi = builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, h),
                                                          list(range(h, n))))
            v, n = builder.fadd(lo, hi), h
        return builder.extract_element(v, ir.Constant(i32, 0))

    def weights(builder, qdata, off, q4):
        """The block's two 16-lane float halves of one weight row at byte ``off``: Q4's low
        and high nibbles of 16 bytes, Q8's 32 signed bytes."""
        if q4:
            v = builder.zext(load(builder, qdata, off, vb), vi)
            lo = builder.and_(v, ir.Constant(vi, [15] * _LANES))
            hi = builder.lshr(v, ir.Constant(vi, [4] * _LANES))
            return builder.sitofp(lo, vf), builder.sitofp(hi, vf)
        a = builder.sext(load(builder, qdata, off, vb), vi)
        off2 = builder.add(off, ir.Constant(off.type, _LANES))
        b = builder.sext(load(builder, qdata, off2, vb), vi)
        return builder.sitofp(a, vf), builder.sitofp(b, vf)

    def codegen(q4):
        def gen(context, builder, sig, args):
            xa_t, xb_t, q_t, d_t = sig.args[:4] if q4 else (sig.args[0],) * 2 + sig.args[1:3]
            if q4:
                xa, xb, q, d, o, p = args
            else:
                xa, q, d, o, p = args
                xb = xa
            arr = context.make_array
            xa_d, xb_d = arr(xa_t)(context, builder, xa).data, arr(xb_t)(context, builder, xb).data
            qa, da = arr(q_t)(context, builder, q), arr(d_t)(context, builder, d)
            blocks = builder.extract_value(da.shape, 1)
            row_bytes = builder.extract_value(qa.shape, 1)
            step = ir.Constant(blocks.type, _LANES if q4 else 2 * _LANES)
            rows = [(builder.mul(r, row_bytes), builder.mul(r, blocks)) for r in (o, p)]
            acc = [cgutils.alloca_once_value(builder, ir.Constant(vf, [0.0] * _LANES))
                   for _ in rows]
            with cgutils.for_range(builder, blocks) as loop:
                b = loop.index
                k = builder.mul(b, step)
                xk = builder.add(k, ir.Constant(k.type, 0 if q4 else _LANES))
                x0, x1 = load(builder, xa_d, k, vf), load(builder, xb_d, xk, vf)
                for (q0, d0), a in zip(rows, acc):
                    w0, w1 = weights(builder, qa.data, builder.add(q0, k), q4)
                    t = fma(builder, x1, w1, builder.fmul(x0, w0))
                    scale = builder.load(builder.gep(da.data, [builder.add(d0, b)]))
                    builder.store(fma(builder, broadcast(builder, scale), t, builder.load(a)), a)
            sums = [hsum(builder, builder.load(a)) for a in acc]
            return context.make_tuple(builder, sig.return_type, sums)
        return gen

    return codegen


if _nb is not None:
    from numba.extending import intrinsic as _intrinsic

    _codegen = _ir_helpers()
    _t = _nb.types
    _PAIR = _t.UniTuple(_t.float32, 2)

    def _c(a, dtype, ndim):
        return isinstance(a, _t.Array) and a.dtype == dtype and a.ndim == ndim \
            and a.layout == "C"

    @_intrinsic
    def q4_dot2(typingctx, xl, xh, q, d, o, p):
        if _c(xl, _t.float32, 1) and _c(xh, _t.float32, 1) and _c(q, _t.uint8, 2) \
                and _c(d, _t.float32, 2):
            return _PAIR(xl, xh, q, d, o, p), _codegen(True)

    @_intrinsic
    def q8_dot2(typingctx, x, q, d, o, p):
        if _c(x, _t.float32, 1) and _c(q, _t.int8, 2) and _c(d, _t.float32, 2):
            return _PAIR(x, q, d, o, p), _codegen(False)
else:
    q4_dot2 = q8_dot2 = None
