"""WGSL float64 ``pow`` for positive finite bases, in double-double arithmetic.

exp(y log x) in plain f64 loses the digits of y log x (|y log x| up to 745 carries an absolute
error of up to 2^-43): 3.0 ** 2 was 8.999999999999998.  Here log x is a double-double (to about
2^-63: the series tail is plain f64), y log x an exact product plus the low part, and exp takes
the double-double argument.  Results are within 1 ulp (0.52 at most on 800 bases near 1 with
|y| < 1000, on lavapipe and on NVIDIA's driver), and exact where representable (x ** 2, 2.0 ** k).

Error-free transforms that survive the shader compilers.  Mesa folds inexact float algebra
(``(a + b) - a`` to ``b``) and lavapipe's f64 ``fma`` is not fused (``fma(a, b, -a*b)`` was 0).
NVIDIA's compiler rewrites too: it proved a zero derived from the base (its sign bit after
``abs``) zero, then turned the residual ``f - (f / d) * d`` into 0 (380 ulp), and it contracts
``a * b + c`` into an fma wherever it can.  So products are Dekker's, from halves split by a bit
mask (exact partial products, which no compiler can fold or fuse wrongly), and every product,
every two-sum input and the residual pass through ``pw_hide``: an OR with a zero the compiler
cannot know (the element count shifted right by 31, from the kernel's metadata), which no
algebraic rule sees through.  Never hide a value twice with the same zero: OR is idempotent, so
the second hide folds away (``pw_fast(pw_hide(1.0, z), q, z)`` gave 0); a two-sum's inputs take
``z << 1`` and its error term ``z``.
"""
from fractions import Fraction

from ruda.runtime.wgsl_math32 import fact, horner

_LN2_HI, _LN2_LO = "6.93147180369123816490e-01lf", "1.90821492927058770002e-10lf"
_C3_HI = 2.0 / 3.0
_C3_LO = float(Fraction(2, 3) - Fraction(_C3_HI))
# 2 atanh(s) = 2 s + 2 s^3 / 3 + s^5 R(s^2): R's terms 2 / (2 i + 5); |s| < 0.172, so 11 terms
_LOG_TAIL = horner("zh", [2.0 / (2 * i + 5) for i in range(11)], "lf")
# exp(r) - 1 - r - r^2 / 2 = r^3 P(r): P's terms 1 / (i + 3)!; |r| < 0.347, so 13 terms
_EXP_TAIL = horner("rh", [1.0 / fact(i + 3) for i in range(13)], "lf")

POW_HELPERS = {
    "pw_dd": ((), """fn pw_hide(v: f64, z: u64) -> f64 { return bitcast<f64>(bitcast<u64>(v) | z); }
fn pw_split(v: f64) -> f64 { return bitcast<f64>(bitcast<u64>(v) & 0xfffffffff8000000lu); }
// a * b = .x + .y (the last partial product rounds: 2^-106 of the product); .x hidden, so that
// no later sum is contracted with it into an fma that would count its rounding twice
fn pw_mul(a: f64, b: f64, z: u64) -> vec2<f64> {
  let p = pw_hide(a * b, z);
  let ah = pw_split(a); let al = a - ah; let bh = pw_split(b); let bl = b - bh;
  return vec2<f64>(p, ((ah * bh - p) + ah * bl + al * bh) + al * bl);
}
// a + b = .x + .y exactly, for |a| >= |b| (fast two-sum), z an opaque zero
fn pw_fast(a0: f64, b0: f64, z: u64) -> vec2<f64> {
  let a = pw_hide(a0, z << 1u); let b = pw_hide(b0, z << 1u); let s = a + b;
  return vec2<f64>(s, b - (s - pw_hide(a, z)));
}
// a + b = .x + .y exactly (Knuth's two-sum)
fn pw_sum(a0: f64, b0: f64, z: u64) -> vec2<f64> {
  let a = pw_hide(a0, z << 1u); let b = pw_hide(b0, z << 1u); let s = a + b;
  let bv = s - pw_hide(a, z); let av = s - pw_hide(bv, z);
  return vec2<f64>(s, (a - av) + (b - bv));
}"""),
    "pow_pos_f64": (("pw_dd", "logsplit_f64", "scalbn_f64", "inf_f64", "isinf_f64"), f"""fn pow_pos_f64(x0: f64, y: f64, z: u64) -> f64 {{
  // x0 ** y for finite x0 > 0, x0 != 1 and y != 0, NaN-free; z: a zero no compiler can know
  if (isinf_f64(y)) {{ if ((x0 > 1.0lf) == (y > 0.0lf)) {{ return inf_f64(); }} return 0.0lf; }}
  let me = logsplit_f64(x0);
  let m = me.x; let e = i32(me.y);
  // log m = 2 atanh(s), s = f / (2 + f) = sh + sl from 2 + f = d.x + d.y and the remainder
  let f = m - 1.0lf;
  let d = pw_fast(2.0lf, f, z);
  let sh = pw_hide(f / d.x, z);
  let q = pw_mul(sh, d.x, z);
  let sl = ((pw_hide(f - q.x, z) - q.y) - sh * d.y) / d.x;
  let s2 = pw_mul(sh, sh, z); let s2l = s2.y + 2.0lf * sh * sl;
  let s3 = pw_mul(sh, s2.x, z); let s3l = s3.y + (sh * s2l + sl * s2.x);
  let t3 = pw_mul({_C3_HI!r}lf, s3.x, z); let t3l = t3.y + ({_C3_HI!r}lf * s3l + {_C3_LO!r}lf * s3.x);
  let zh = s2.x;
  let lm = pw_fast(2.0lf * sh, t3.x, z);
  let lml = lm.y + ((2.0lf * sl + t3l) + s3.x * zh * {_LOG_TAIL});
  // log x = e ln2 + log m = lg.x + lg.y: e LN2_HI is exact
  let fe = f64(e);
  let pl = pw_mul(fe, {_LN2_LO}, z);
  let hh = pw_sum(fe * {_LN2_HI}, lm.x, z);
  let lg = pw_fast(hh.x, hh.y + (pl.x + (pl.y + lml)), z);
  // t = y log x = th + tl
  let tp = pw_mul(y, lg.x, z);
  let th = tp.x;
  if (th > 709.79lf) {{ return inf_f64(); }}
  if (th < -745.2lf) {{ return 0.0lf; }}
  let tl = tp.y + y * lg.y;
  // exp t = 2^k exp r, r = t - k ln2 = r.x + r.y (th - k LN2_HI is exact: a factor 2 apart or k = 0)
  let k = round(th * 1.44269504088896338700e+00lf);
  let kl = pw_mul(k, {_LN2_LO}, z);
  let r1 = pw_sum(th - k * {_LN2_HI}, -kl.x, z);
  let r = pw_fast(r1.x, r1.y + (tl - kl.y), z);
  // exp r = 1 + q, q = r + r^2 / 2 + r^3 P(r), summed so that 1 + q rounds once
  let rh = r.x;
  let p2 = pw_mul(rh, rh, z);
  let h2 = 0.5lf * p2.x;
  let qq = pw_fast(rh, h2, z);
  let ql = qq.y + (r.y + ((0.5lf * p2.y + r.y * (rh + h2)) + rh * p2.x * {_EXP_TAIL}));
  let one = pw_fast(1.0lf, qq.x, z);
  return scalbn_f64(one.x + (one.y + ql), i32(k));
}}"""),
}
