"""LLVM IR that Numba's loops cannot spell, as Numba intrinsics: ``prefetch`` and the
quantized GEMV's block dot products.

``prefetch(arr, idx)`` asks for the cache line of ``arr``'s flat element ``idx`` ahead of its
use (LLVM's ``prefetch``).

Numba's loops reach the host's vectors only through LLVM's vectorizer, which on AVX-512
machines stops at 256 bits (LLVM's ``prefer-vector-width``) and keeps small accumulator
arrays in memory. These intrinsics spell the 16-lane vectors out: LLVM lowers them to one
AVX-512 register each (two AVX2 registers, four NEON ones) with the accumulators in registers.

``dotsN(xa, xb, r0, q, d, o, p)`` (N = 1, 2, 4): for rows ``o`` and ``p`` of a quantized weight
(``d`` (out, blocks) float32) and rows ``r0 .. r0 + N - 1`` of x, the N sums of row o, then
the N of row p. A Q4 weight (``q`` (out, in/2) uint8, two nibbles a byte): ``sum_b d[w, b] *
(xa_b . lo(q[w])_b + xb_b . hi(q[w])_b)``, where ``xa``/``xb`` (rows, in/2) hold the elements
of x that meet each block's low and high nibbles. A Q8_0 weight (``q`` (out, in) int8):
``sum_b d[w, b] * (xa_b . q[w]_b)`` (``xb`` unread). A block's weights become floats once
for all N rows of x. The float operations run in a fixed order (the same result every call).

Numba's disk cache keys a kernel on its own file: after changing this one, touch
``_nn_quant.py``.
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

    def codegen(q4, nr):
        """Rows o and p of the weight against rows r0 .. r0 + nr - 1 of x: each block's
        weights converted once, then used for every row of x."""
        def gen(context, builder, sig, args):
            xa, xb, r0, q, d, o, p = args
            xa_t, xb_t, _, q_t, d_t = sig.args[:5]
            arr = context.make_array
            xa_a, xb_a = arr(xa_t)(context, builder, xa), arr(xb_t)(context, builder, xb)
            qa, da = arr(q_t)(context, builder, q), arr(d_t)(context, builder, d)
            blocks = builder.extract_value(da.shape, 1)
            row_bytes = builder.extract_value(qa.shape, 1)
            x_len = builder.extract_value(xa_a.shape, 1)
            xrows = [builder.mul(builder.add(r0, ir.Constant(r0.type, i)), x_len)
                     for i in range(nr)]
            step = ir.Constant(blocks.type, _LANES if q4 else 2 * _LANES)
            rows = [(builder.mul(r, row_bytes), builder.mul(r, blocks)) for r in (o, p)]
            zero = ir.Constant(vf, [0.0] * _LANES)
            acc = [[cgutils.alloca_once_value(builder, zero) for _ in range(nr)] for _ in rows]
            with cgutils.for_range(builder, blocks) as loop:
                b = loop.index
                k = builder.mul(b, step)
                xk = builder.add(k, ir.Constant(k.type, 0 if q4 else _LANES))
                w = [weights(builder, qa.data, builder.add(q0, k), q4) for q0, _ in rows]
                scales = [broadcast(builder, builder.load(builder.gep(da.data,
                                                                      [builder.add(d0, b)])))
                          for _, d0 in rows]
                for i, xr in enumerate(xrows):
                    x0 = load(builder, xa_a.data, builder.add(xr, k), vf)
                    x1 = load(builder, xb_a.data, builder.add(xr, xk), vf)
                    for (w0, w1), sc, a in zip(w, scales, acc):
                        t = fma(builder, x1, w1, builder.fmul(x0, w0))
                        builder.store(fma(builder, sc, t, builder.load(a[i])), a[i])
            sums = [hsum(builder, builder.load(a[i])) for a in acc for i in range(nr)]
            return context.make_tuple(builder, sig.return_type, sums)
        return gen

    return codegen


if _nb is not None:
    from llvmlite import binding as _llvm
    from llvmlite import ir as _ir
    from numba.core import cgutils as _cgutils
    from numba.extending import intrinsic as _intrinsic

    # the intrinsic's name mangles the pointer type: typed before LLVM 15, opaque since
    _PREFETCH = "llvm.prefetch.p0" if _llvm.llvm_version_info >= (15,) else "llvm.prefetch.p0i8"

    @_intrinsic
    def prefetch(typingctx, arr, idx):
        """Asks for the cache line of ``arr``'s flat element ``idx`` (C-contiguous) ahead of
        its use: a hint, never a fault, so ``idx`` may point past the end. Streams that a loop
        reads while it computes (quantized weight rows) arrive before the loop needs them."""
        def codegen(context, builder, sig, args):
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            ptr = builder.bitcast(builder.gep(data, [args[1]]), _ir.IntType(8).as_pointer())
            i32 = _ir.IntType(32)
            fn = _cgutils.get_or_insert_function(
                builder.module, _ir.FunctionType(_ir.VoidType(), [ptr.type, i32, i32, i32]),
                _PREFETCH)
            # read, keep in all levels, data
            builder.call(fn, [ptr, _ir.Constant(i32, 0), _ir.Constant(i32, 3), _ir.Constant(i32, 1)])
            return context.get_dummy_value()
        return _nb.types.void(arr, idx), codegen

    _codegen = _ir_helpers()
    _t = _nb.types

    def _c(a, dtype, ndim):
        return isinstance(a, _t.Array) and a.dtype == dtype and a.ndim == ndim \
            and a.layout == "C"

    def _dots(nr):
        def dots(typingctx, xa, xb, r0, q, d, o, p):
            if _c(xa, _t.float32, 2) and _c(xb, _t.float32, 2) and _c(d, _t.float32, 2) \
                    and (_c(q, _t.uint8, 2) or _c(q, _t.int8, 2)):
                return _t.UniTuple(_t.float32, 2 * nr)(xa, xb, r0, q, d, o, p), \
                    _codegen(q.dtype == _t.uint8, nr)
        dots.__name__ = dots.__qualname__ = f"dots{nr}"
        return _intrinsic(dots)

    dots1, dots2, dots4 = _dots(1), _dots(2), _dots(4)
else:
    prefetch = dots1 = dots2 = dots4 = None



