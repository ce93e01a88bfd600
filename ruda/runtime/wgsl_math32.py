"""WGSL float32 math for adapters without shader-f64 (browsers, Metal, OpenGL).

With f64 at hand, float32 functions go through the f64 library (``wgsl_math``).  Without it the
drivers' f32 builtins are all there is, and they miss (lavapipe): sin/cos/tan of large arguments
are unrelated to the true values (no real argument reduction), exp/log flush subnormals, and
exp's and log's errors near 0 and 1 reach hundreds of ulp in expm1/tanh.  So these are written
from f32 arithmetic that no compiler can bend:

* sin/cos/tan reduce by pi/2 in **integers** (Payne-Hanek over 32-bit words of 2/pi, 32x32->64
  products from 16-bit halves, the remainder normalized and rounded to f32 once): exact for
  every finite float32, and immune to the float re-association that Mesa applies to
  error-free transforms (see the wgpu README).  The kernels are Taylor polynomials on
  |r| <= pi/4.
* exp/expm1 reduce by the high part of a split ln 2 (exact: its products with k are) and apply
  the low part as a factor, so no compiler can fold the two parts back into one rounded ln 2
  (Mesa's GLSL path does that to an fma chain); 2^k is applied in two steps, so subnormal
  results round once.
* log/log2/log10 split x = 2^e m (subnormals scaled first) and take log m from the atanh series
  in musl's form, e ln 2 added through a split constant.

Within 2 ulp of the correctly rounded result (``tests/test_wgpu_f32_profile.py``).  Each helper is
``name -> (dependencies, source)``, as in ``wgsl_math.HELPERS``.
"""
from fractions import Fraction


def horner(var, coefs, suffix):
    """Horner form of sum(coefs[i] * var**i) as WGSL, literals with ``suffix`` ("f", "lf")."""
    expr = f"{coefs[-1]!r}{suffix}"
    for c in reversed(coefs[:-1]):
        expr = f"({c!r}{suffix} + {var} * {expr})"
    return expr


def fact(n):
    out = 1
    for i in range(2, n + 1):
        out *= i
    return out


def two_over_pi(bits):
    """floor(2/pi * 2^bits) as a Python integer (Machin's formula, 64 guard bits)."""
    work = bits + 64
    one = 1 << work

    def arctan_inv(k):
        total, term, kk, sign, i = 0, one // k, k * k, 1, 1
        while term:
            total += sign * (term // i)
            term //= kk
            sign = -sign
            i += 2
        return total
    pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))             # pi * 2^work
    return ((2 * one * one) // pi) >> 64


# 2/pi as 8 words of 32 bits behind 32 zero bits: bit j of 2/pi (weight 2^-j) is table bit 31 + j
_W2PI = [(two_over_pi(224) >> (32 * (7 - i))) & 0xFFFFFFFF for i in range(8)]
_SIN = horner("z", [(-1) ** (i + 1) / fact(2 * i + 3) for i in range(5)], "f")        # (sin r - r) / r^3
_COS = horner("z", [(-1) ** i / fact(2 * i + 4) for i in range(5)], "f")        # (cos r - 1 + z/2) / z^2
# (tan r - r) / r^3: Taylor's coefficients 2^2n (2^2n - 1) |B_2n| / (2n)!, n >= 2 (|r| <= pi/4)
_TAN = horner("z", [2.0 ** (2 * n) * (2.0 ** (2 * n) - 1) * float(abs(b)) / fact(2 * n) for n, b in
                    zip(range(2, 16), [Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
                                       Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
                                       Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
                                       Fraction(-236364091, 2730), Fraction(8553103, 6),
                                       Fraction(-23749461029, 870), Fraction(8615841276005, 14322)])], "f")
_EXP = horner("r", [1.0 / fact(i) for i in range(2, 9)], "f")                    # (e^r - 1 - r) / r^2
_EXPM1 = horner("x", [1.0 / fact(i) for i in range(2, 14)], "f")                 # (expm1(x) - x) / x^2, |x| < 1
LOG_R = horner("z", [2.0 / (2 * i + 3) for i in range(6)], "f")                  # (2 atanh(s) / s - 2) / z

F32_HELPERS = {
    "mul64_u32": ((), """fn mul64_u32(a: u32, b: u32) -> vec2<u32> {
  // the exact product a * b as (high word, low word), from 16-bit halves
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p01 = a0 * b1; let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), (mid << 16u) | ((a0 * b0) & 0xffffu));
}"""),
    "rem_pio2_f32": (("mul64_u32",), f"""var<private> W2PI: array<u32, 8> = array<u32, 8>({', '.join(f'{w:#x}u' for w in _W2PI)});
fn rem_pio2_f32(x: f32) -> vec3<f32> {{
  // x = q pi/2 + r + e, |r| <= pi/4, for finite |x| >= 0.5 (Payne-Hanek in integers):
  // returns (r, q mod 4, e), e the rest of r beyond its float32 rounding
  let b = bitcast<u32>(x) & 0x7fffffffu;
  let m = (b & 0x7fffffu) | 0x800000u;               // |x| = m 2^s, s = exponent - 150
  let off = (b >> 23u) - 120u;                        // table bit of 2/pi's bit s - 1 (weight 4 / (m 2^s))
  let wi = off >> 5u; let sh = off & 31u;
  // w: the 96 bits of 2/pi from weight 2^-(s-1) on (higher bits add multiples of 4 to x 2/pi)
  let w0 = select((W2PI[wi] << sh) | (W2PI[wi + 1u] >> (32u - sh)), W2PI[wi], sh == 0u);
  let w1 = select((W2PI[wi + 1u] << sh) | (W2PI[wi + 2u] >> (32u - sh)), W2PI[wi + 1u], sh == 0u);
  let w2 = select((W2PI[wi + 2u] << sh) | (W2PI[wi + 3u] >> (32u - sh)), W2PI[wi + 2u], sh == 0u);
  // |x| 2/pi mod 4 = (m w mod 2^96) 2^-94: two integer bits, 94 fraction bits (r0:r1:r2)
  let p2 = mul64_u32(m, w2); let p1 = mul64_u32(m, w1);
  let r2 = p2.y;
  let r1 = p2.x + p1.y;
  var r0 = p1.x + m * w0 + select(0u, 1u, r1 < p1.y);
  let q = (r0 + 0x20000000u) >> 30u;                   // nearest quadrant
  r0 = r0 - (q << 30u);                                // signed fraction in [-1/2, 1/2) quadrant
  let neg = (r0 >> 31u) == 1u;
  var lo = r2; var mid = r1; var hi = r0;
  if (neg) {{
    lo = ~r2 + 1u; let c = select(0u, 1u, lo == 0u);
    mid = ~r1 + c; hi = ~r0 + select(0u, 1u, c == 1u && mid == 0u);
  }}
  // the top 32 bits t of the magnitude (= t 2^(64 - sc) 2^-94), then t pi/2 rounded to 24 bits
  var t: u32; var sc: u32;
  if (hi != 0u) {{ let z = countLeadingZeros(hi); t = (hi << z) | select(mid >> (32u - z), 0u, z == 0u); sc = z; }}
  else {{ let z = countLeadingZeros(mid); t = (mid << z) | select(lo >> (32u - z), 0u, z == 0u); sc = 32u + z; }}
  let p = mul64_u32(t, 0x6487ed51u);                   // pi/2 2^30
  let z2 = countLeadingZeros(p.x);
  let ph = (p.x << z2) | select(p.y >> (32u - z2), 0u, z2 == 0u);
  let pl = p.y << z2;
  var mant = ph >> 8u; let rest = ph & 0xffu;
  let up = rest > 0x80u || (rest == 0x80u && (pl != 0u || (mant & 1u) == 1u));
  if (up) {{ mant = mant + 1u; }}
  var r = f32(mant) * bitcast<f32>((107u - z2 - sc) << 23u);   // 2^(-20 - z2 - sc)
  var e = (f32(i32(rest) - select(0, 256, up)) + f32(pl) * 2.3283064e-10f) * bitcast<f32>((99u - z2 - sc) << 23u);
  if (neg) {{ r = -r; e = -e; }}
  if (x < 0.0f) {{ return vec3<f32>(-r, f32((4u - q) & 3u), -e); }}
  return vec3<f32>(r, f32(q), e);
}}"""),
    "trig_f32": (("rem_pio2_f32", "isfin_f32", "nan_f32"), f"""fn trig_f32(x: f32) -> vec3<f32> {{
  // (sin x, cos x, quadrant)
  if (!isfin_f32(x)) {{ return vec3<f32>(nan_f32(), nan_f32(), 0.0f); }}
  var r = x; var q = 0.0f; var e = 0.0f;
  if (abs(x) > 0.78539816f) {{ let t = rem_pio2_f32(x); r = t.x; q = t.y; e = t.z; }}
  let z = r * r;
  let s0 = r + r * z * {_SIN};
  let c0 = 1.0f - (0.5f * z - z * z * {_COS});
  let s = s0 + e * c0;       // sin(r + e), cos(r + e) to first order in e
  let c = c0 - e * s0;
  if (q == 0.0f) {{ return vec3<f32>(s, c, q); }}
  if (q == 1.0f) {{ return vec3<f32>(c, -s, q); }}
  if (q == 2.0f) {{ return vec3<f32>(-s, -c, q); }}
  return vec3<f32>(-c, s, q);
}}"""),
    "sin_f32": (("trig_f32",), "fn sin_f32(x: f32) -> f32 { if (x == 0.0f) { return x; } return trig_f32(x).x; }"),
    "cos_f32": (("trig_f32",), "fn cos_f32(x: f32) -> f32 { return trig_f32(x).y; }"),
    "tan_f32": (("rem_pio2_f32", "isfin_f32", "nan_f32"), f"""fn tan_f32(x: f32) -> f32 {{
  // its own polynomial (sin / cos would add both errors and the division's)
  if (!isfin_f32(x)) {{ return nan_f32(); }}
  if (x == 0.0f) {{ return x; }}
  var r = x; var q = 0.0f; var e = 0.0f;
  if (abs(x) > 0.78539816f) {{ let t = rem_pio2_f32(x); r = t.x; q = t.y; e = t.z; }}
  let z = r * r;
  let t0 = r + r * z * {_TAN};
  let t = t0 + e * (1.0f + t0 * t0);
  if (q == 1.0f || q == 3.0f) {{ return -1.0f / t; }}
  return t;
}}"""),
    "scalbn_f32": ((), """fn scalbn_f32(x: f32, n: i32) -> f32 {
  // x 2^n for |x| in [0.5, 2], n in [-152, 130]: one rounding (subnormal results included)
  if (n > 127) { return x * 1.7014118e38f * bitcast<f32>(u32(n) << 23u); }
  if (n < -126) { return x * bitcast<f32>(u32(n + 24 + 127) << 23u) * 5.9604645e-8f; }
  return x * bitcast<f32>(u32(n + 127) << 23u);
}"""),
    # x = k ln 2 + r + c: r = x - k ln2_hi is exact (ln2_hi has 15 bits, |k| <= 150), the rest
    # c = k ln2_lo enters as a factor e^-c = 1 - c.  Not as x - k hi - k lo: Mesa's GLSL path
    # splits the fma chain and folds it into x - k (hi + lo), 66 ulp off at x = 72.
    "exps_f32": (("scalbn_f32", "inf_f32", "isnan_f32"), f"""fn exps_f32(x: f32, s: i32) -> f32 {{
  // e^x 2^s (s = -1: sinh/cosh's e^x / 2 without overflowing first)
  if (isnan_f32(x)) {{ return x; }}
  if (x > 90.0f) {{ return inf_f32(); }}
  if (x < -104.0f) {{ return 0.0f; }}
  let k = round(x * 1.44269504f);
  let r = fma(-k, 0.693145751953125f, x);
  let e = 1.0f + (r + r * r * {_EXP});
  return scalbn_f32(e - e * (k * 1.42860677e-6f), i32(k) + s);
}}"""),
    "exp_f32": (("exps_f32",), "fn exp_f32(x: f32) -> f32 { return exps_f32(x, 0); }"),
    "expm1_f32": (("exp_f32",), f"""fn expm1_f32(x: f32) -> f32 {{
  if (x == 0.0f) {{ return x; }}
  if (abs(x) < 1.0f) {{ return x + x * x * {_EXPM1}; }}
  if (x < -18.0f) {{ return -1.0f; }}
  if (x > 80.0f) {{ return exp_f32(x); }}
  let k = round(x * 1.44269504f);
  let r = fma(-k, 0.693145751953125f, x);             // as in exp_f32; c = k ln2_lo
  let e1 = r + r * r * {_EXPM1.replace('x', 'r')};
  let em = e1 - (k * 1.42860677e-6f) * (1.0f + e1);   // expm1(r - c)
  let p = bitcast<f32>(u32(i32(k) + 127) << 23u);     // 2^k, k in [-26, 116]
  return em * p + (p - 1.0f);
}}"""),
    # sinh/cosh as the f64 library's, e^a / 2 scaled inside exp (e^a overflows past 88.7)
    "sinh_f32": (("expm1_f32", "exps_f32"), """fn sinh_f32(x: f32) -> f32 {
  if (x == 0.0f) { return x; }
  let a = abs(x);
  var r: f32;
  if (a < 9.0f) { let t = expm1_f32(a); r = 0.5f * (t + t / (t + 1.0f)); }
  else { r = exps_f32(a, -1); }
  if (x < 0.0f) { return -r; }
  return r;
}"""),
    "cosh_f32": (("expm1_f32", "exp_f32", "exps_f32"), """fn cosh_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a < 0.34657359f) { let t = expm1_f32(a); let w = 1.0f + t; return 1.0f + (t * t) / (w + w); }
  if (a < 9.0f) { let t = exp_f32(a); return 0.5f * t + 0.5f / t; }
  return exps_f32(a, -1);
}"""),
    # ---------------------------------------------------------------- logs
    "logk_f32": ((), f"""fn logk_f32(x0: f32) -> vec2<f32> {{
  // positive finite x = 2^e m, m in [sqrt 1/2, sqrt 2): (e, log m), log m in musl's form
  var x = x0; var e: i32 = 0;
  if (x < 1.17549435e-38f) {{ x = x * 16777216.0f; e = -24; }}
  let b = bitcast<u32>(x);
  e = e + i32(b >> 23u) - 127;
  var m = bitcast<f32>((b & 0x7fffffu) | 0x3f800000u);
  if (m > 1.41421356f) {{ m = m * 0.5f; e = e + 1; }}
  let f = m - 1.0f;
  let hfsq = 0.5f * f * f;
  let s = f / (2.0f + f);
  let z = s * s;
  return vec2<f32>(f32(e), f - (hfsq - s * (hfsq + z * {LOG_R})));
}}"""),
    "logsp_f32": (("isnan_f32", "inf_f32", "nan_f32"), """fn logsp_f32(x: f32) -> f32 {
  // the logs' special values (NaN where x is not one)
  if (isnan_f32(x)) { return x; }
  if (x == 0.0f) { return -inf_f32(); }
  if (x < 0.0f) { return nan_f32(); }
  return x;   // +inf
}"""),
    # e ln 2, e log10(2) through split constants (hi: 16 bits, so e hi is exact for |e| <= 150)
    "log_f32": (("logk_f32", "logsp_f32", "isfin_f32"), """fn log_f32(x: f32) -> f32 {
  if (!(x > 0.0f) || !isfin_f32(x)) { return logsp_f32(x); }
  let k = logk_f32(x);
  return k.x * 0.693145751953125f + (k.y + k.x * 1.42860677e-6f);
}"""),
    "log2_f32": (("logk_f32", "logsp_f32", "isfin_f32"), """fn log2_f32(x: f32) -> f32 {
  if (!(x > 0.0f) || !isfin_f32(x)) { return logsp_f32(x); }
  let k = logk_f32(x);
  return k.x + k.y * 1.44269504f;
}"""),
    "log10_f32": (("logk_f32", "logsp_f32", "isfin_f32"), """fn log10_f32(x: f32) -> f32 {
  if (!(x > 0.0f) || !isfin_f32(x)) { return logsp_f32(x); }
  let k = logk_f32(x);
  return k.x * 0.30102539f + (k.x * 4.6050389e-6f + k.y * 0.43429448f);
}"""),
    "log1p_f32": (("log_f32", "inf_f32", "nan_f32", "isfin_f32"), f"""fn log1p_f32(x: f32) -> f32 {{
  if (x == 0.0f) {{ return x; }}
  if (abs(x) < 0.41f) {{ let s = x / (2.0f + x); let z = s * s; return 2.0f * s + s * z * {LOG_R}; }}
  let u = 1.0f + x;
  if (u > 0.0f && isfin_f32(u)) {{ return log_f32(u) + (x - (u - 1.0f)) / u; }}
  if (u == 0.0f) {{ return -inf_f32(); }}
  if (u > 0.0f) {{ return u; }}
  return nan_f32();
}}"""),
}
