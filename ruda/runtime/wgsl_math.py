"""WGSL helper functions: f64 transcendentals from f64 arithmetic, NumPy-exact integer and
float helpers, complex arithmetic.

Why f64 math is written out: SPIR-V's GLSL.std.450 ``Exp``/``Log``/``Sin``... are defined for
16/32-bit floats only, and drivers (lavapipe, others per wgpu's tracker) return garbage for
f64.  Only +, -, *, /, sqrt, floor/ceil/round/trunc, abs, min/max and bit casts are used here.
Accuracy (tests/test_wgpu.py): a few ULP against NumPy (trigonometric functions: Cody-Waite
reduction with a three-part pi/2, Payne-Hanek in integers above 2^19).  float32 on adapters without f64:
``wgsl_math32`` (its own, integer-reduced trig, exp and logs), merged into ``HELPERS`` here.

Argument reductions are written as explicit ``fma`` chains: NVIDIA's Vulkan compiler rewrote
``(x - k * hi) - k * lo`` so that f64 exp/sinh/cosh/tan lost up to 9 ULP on an H200 (an fma is
one operation it keeps; each step is exact or rounds once, as the two-constant form intends).

Each helper is ``name -> (dependencies, source)``; ``{T}`` is the float type and ``{S}``
the type suffix (``f32``/``f64``), ``{U}`` the same-width unsigned type.
"""
import re

from ruda.runtime.wgsl_math32 import F32_HELPERS, fact, horner, two_over_pi
from ruda.runtime.wgsl_math_pow import POW_HELPERS


_F64_CONSTS = {
    "LN2_HI": "6.93147180369123816490e-01", "LN2_LO": "1.90821492927058770002e-10",
    "INV_LN2": "1.44269504088896338700e+00",
    "PIO2_1": "1.57079632673412561417e+00", "PIO2_1T": "6.07710050650619224932e-11",
    "PIO2_2": "6.07710050630396597660e-11", "PIO2_2T": "2.02226624879595063154e-21",
    "PIO2_3": "2.02226624871116645580e-21", "PIO2_3T": "8.47842766036889956997e-32",
    "INV_PIO2": "6.36619772367581382433e-01",
}


def _taylor_horner(var, coefs):
    """Horner form of sum(coefs[i] * var**i) as WGSL (f64)."""
    return horner(var, coefs, "lf")


# 2/pi in 32-bit words behind 64 zero bits: bit j of 2/pi (weight 2^-j) is table bit 63 + j; 37
# words of 2/pi reach the 192-bit window of float64's largest exponent
_W2PI64 = [0, 0] + [(two_over_pi(32 * 37) >> (32 * (36 - i))) & 0xFFFFFFFF for i in range(37)]
# pi/2 as a 64-bit integer: floor(pi/2 2^63), from 2/pi's bits by long division
_PIO2_64 = (1 << 1090) // two_over_pi(1024) >> 3

_EXP_POLY = _taylor_horner("r", [1.0 / fact(i) for i in range(0, 15)])
_EXPM1_POLY = _taylor_horner("x", [1.0 / fact(i) for i in range(1, 17)])   # expm1(x)/x
_SIN_POLY = _taylor_horner("z", [(-1) ** i / fact(2 * i + 1) for i in range(0, 11)])  # sin(r)/r
_COS_POLY = _taylor_horner("z", [(-1) ** i / fact(2 * i) for i in range(0, 11)])
_LOG_R = _taylor_horner("z", [2.0 / (2 * i + 3) for i in range(0, 12)])  # (2 atanh(s) / s - 2) / z
_ATAN_POLY = _taylor_horner("z", [(-1) ** i / (2 * i + 1) for i in range(0, 30)])  # atan(t)/t

HELPERS = {
    # ---------------------------------------------------------------- special values, bits
    "inf_f32": ((), "fn inf_f32() -> f32 { var b: u32 = 0x7f800000u; return bitcast<f32>(b); }"),
    "nan_f32": ((), "fn nan_f32() -> f32 { var b: u32 = 0x7fc00000u; return bitcast<f32>(b); }"),
    "inf_f64": ((), "fn inf_f64() -> f64 { var b: u64 = 0x7ff0000000000000lu; return bitcast<f64>(b); }"),
    "nan_f64": ((), "fn nan_f64() -> f64 { var b: u64 = 0x7ff8000000000000lu; return bitcast<f64>(b); }"),
    "inf_f16": ((), "fn inf_f16() -> f16 { var b: u32 = 0x7c00u; return f16(unpack2x16float(b).x); }"),
    "nan_f16": ((), "fn nan_f16() -> f16 { var b: u32 = 0x7e00u; return f16(unpack2x16float(b).x); }"),
    "isnan_f16": (("isnan_f32",), "fn isnan_f16(x: f16) -> bool { return isnan_f32(f32(x)); }"),
    "isnan_f32": ((), "fn isnan_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }"),
    "isinf_f32": ((), "fn isinf_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }"),
    "isfin_f32": ((), "fn isfin_f32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u; }"),
    "sbit_f32": ((), "fn sbit_f32(x: f32) -> bool { return (bitcast<u32>(x) >> 31u) == 1u; }"),
    "isnan_f64": ((), "fn isnan_f64(x: f64) -> bool { return (bitcast<u64>(x) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu; }"),
    "isinf_f64": ((), "fn isinf_f64(x: f64) -> bool { return (bitcast<u64>(x) & 0x7ffffffffffffffflu) == 0x7ff0000000000000lu; }"),
    "isfin_f64": ((), "fn isfin_f64(x: f64) -> bool { return (bitcast<u64>(x) & 0x7ffffffffffffffflu) < 0x7ff0000000000000lu; }"),
    "sbit_f64": ((), "fn sbit_f64(x: f64) -> bool { return (bitcast<u64>(x) >> 63u) == 1lu; }"),
    "copysign_f32": ((), "fn copysign_f32(a: f32, b: f32) -> f32 { return bitcast<f32>((bitcast<u32>(a) & 0x7fffffffu) | (bitcast<u32>(b) & 0x80000000u)); }"),
    "copysign_f64": ((), "fn copysign_f64(a: f64, b: f64) -> f64 { return bitcast<f64>((bitcast<u64>(a) & 0x7ffffffffffffffflu) | (bitcast<u64>(b) & 0x8000000000000000lu)); }"),
    "nextafter_f32": (("isnan_f32",), """fn nextafter_f32(a: f32, b: f32) -> f32 {
  if (isnan_f32(a) || isnan_f32(b)) { return a + b; }
  if (a == b) { return b; }
  if (a == 0.0f) { return bitcast<f32>((bitcast<u32>(b) & 0x80000000u) | 1u); }
  let ba = bitcast<u32>(a);
  if ((a < b) == (a > 0.0f)) { return bitcast<f32>(ba + 1u); }
  return bitcast<f32>(ba - 1u);
}"""),
    "nextafter_f64": (("isnan_f64",), """fn nextafter_f64(a: f64, b: f64) -> f64 {
  if (isnan_f64(a) || isnan_f64(b)) { return a + b; }
  if (a == b) { return b; }
  if (a == 0.0lf) { return bitcast<f64>((bitcast<u64>(b) & 0x8000000000000000lu) | 1lu); }
  let ba = bitcast<u64>(a);
  if ((a < b) == (a > 0.0lf)) { return bitcast<f64>(ba + 1lu); }
  return bitcast<f64>(ba - 1lu);
}"""),
    # ---------------------------------------------------------------- f64 elementary functions
    "scalbn_f64": ((), """fn scalbn_f64(x: f64, n: i32) -> f64 {
  var y = x; var k = n;
  if (k > 1023) { y = y * 8.98846567431158e307lf; k = k - 1023; if (k > 1023) { y = y * 8.98846567431158e307lf; k = k - 1023; } k = min(k, 1023); }
  if (k < -1022) { y = y * 2.004168360008973e-292lf; k = k + 969; if (k < -1022) { y = y * 2.004168360008973e-292lf; k = k + 969; } k = max(k, -1022); }
  return y * bitcast<f64>(u64(u32(k + 1023)) << 52u);
}"""),
    "exp_f64": (("scalbn_f64", "inf_f64", "isnan_f64"), f"""fn exp_f64(x: f64) -> f64 {{
  if (isnan_f64(x)) {{ return x; }}
  if (x > 709.782712893384lf) {{ return inf_f64(); }}
  if (x < -745.1332191019412lf) {{ return 0.0lf; }}
  let k = round(x * {_F64_CONSTS['INV_LN2']}lf);
  let r = fma(-k, {_F64_CONSTS['LN2_LO']}lf, fma(-k, {_F64_CONSTS['LN2_HI']}lf, x));
  return scalbn_f64({_EXP_POLY}, i32(k));
}}"""),
    "expm1_f64": (("exp_f64",), f"""fn expm1_f64(x: f64) -> f64 {{
  if (abs(x) < 0.34657359lf) {{ return x * {_EXPM1_POLY}; }}
  if (x < -40.0lf) {{ return -1.0lf; }}
  if (x > 40.0lf) {{ return exp_f64(x); }}
  let k = round(x * {_F64_CONSTS['INV_LN2']}lf);
  let r = fma(-k, {_F64_CONSTS['LN2_LO']}lf, fma(-k, {_F64_CONSTS['LN2_HI']}lf, x));
  let em = r * {_EXPM1_POLY.replace('x', 'r')};
  let p = bitcast<f64>(u64(u32(i32(k) + 1023)) << 52u);
  return (em * p) + (p - 1.0lf);
}}"""),
    "logsplit_f64": ((), """fn logsplit_f64(x0: f64) -> vec2<f64> {
  // (m, e) with x0 = m 2^e and m in (sqrt(2)/2, sqrt(2)], for finite x0 > 0 (subnormals too)
  var x = x0; var e: i32 = 0;
  if (x < 2.2250738585072014e-308lf) { x = x * 18014398509481984.0lf; e = -54; }
  let b = bitcast<u64>(x);
  e = e + i32(u32(b >> 52u) & 0x7ffu) - 1023;
  var m = bitcast<f64>((b & 0x000ffffffffffffflu) | 0x3ff0000000000000lu);
  if (m > 1.4142135623730951lf) { m = m * 0.5lf; e = e + 1; }
  return vec2<f64>(m, f64(e));
}"""),
    "log_f64": (("logsplit_f64", "inf_f64", "nan_f64", "isnan_f64"), f"""fn log_f64(x0: f64) -> f64 {{
  if (isnan_f64(x0)) {{ return x0; }}
  if (x0 < 0.0lf) {{ return nan_f64(); }}
  if (x0 == 0.0lf) {{ return -inf_f64(); }}
  if (x0 == inf_f64()) {{ return x0; }}
  let me = logsplit_f64(x0);
  let m = me.x; let e = i32(me.y);
  let f = m - 1.0lf;
  let hfsq = 0.5lf * f * f;
  let s = f / (2.0lf + f);
  let z = s * s;
  let R = z * {_LOG_R};
  let fe = f64(e);
  return fe * {_F64_CONSTS['LN2_HI']}lf + (f - (hfsq - (s * (hfsq + R) + fe * {_F64_CONSTS['LN2_LO']}lf)));
}}"""),
    "log1p_f64": (("log_f64", "nan_f64", "inf_f64", "isnan_f64"), f"""fn log1p_f64(x: f64) -> f64 {{
  if (isnan_f64(x)) {{ return x; }}
  if (x < -1.0lf) {{ return nan_f64(); }}
  if (x == -1.0lf) {{ return -inf_f64(); }}
  if (abs(x) < 0.2928932188134524lf) {{
    let f = x;
    let hfsq = 0.5lf * f * f;
    let s = f / (2.0lf + f);
    let z = s * s;
    let R = z * {_LOG_R};
    return f - (hfsq - s * (hfsq + R));
  }}
  let u = 1.0lf + x;
  if (u == inf_f64()) {{ return u; }}
  return log_f64(u) + (x - (u - 1.0lf)) / u;
}}"""),
    "log2_f64": (("log_f64", "inf_f64"), """fn log2_f64(x: f64) -> f64 {
  let b = bitcast<u64>(x);
  if (x > 0.0lf && x < inf_f64() && (b & 0x000ffffffffffffflu) == 0lu) { return f64(i32(u32(b >> 52u) & 0x7ffu) - 1023); }
  return log_f64(x) * 1.44269504088896340736lf;
}"""),
    "log10_f64": (("log_f64",), "fn log10_f64(x: f64) -> f64 { return log_f64(x) * 0.434294481903251827651lf; }"),
    "rem_pio2_big": ((), f"""var<private> W2PI64: array<u32, {len(_W2PI64)}> = array<u32, {len(_W2PI64)}>({', '.join(f'{w:#x}u' for w in _W2PI64)});
fn rem_pio2_big(x: f64) -> vec2<f64> {{
  // x = q pi/2 + r, |r| <= pi/4, for finite |x| >= 2^19: returns (r, q mod 4).  Payne-Hanek in
  // integers, as rem_pio2_f32: a float two-sum loses its low part to the shader compilers'
  // re-association ((a + b) - a to b); integer arithmetic is exact under any rewrite
  let b = bitcast<u64>(x) & 0x7ffffffffffffffflu;
  let mant = (b & 0x000ffffffffffffflu) | 0x0010000000000000lu;   // |x| = mant 2^s, s = exponent - 1075
  let off = u32(b >> 52u) - 1013u;                   // table bit of 2/pi's bit s - 1 (weight 4 / (mant 2^s))
  let wi = off >> 5u; let sh = off & 31u;
  // w: the 192 bits of 2/pi from weight 2^-(s-1) on (higher bits add multiples of 4 to x 2/pi);
  // the bits beyond add less than 2^-137 to the fraction
  var w: array<u32, 8>;
  for (var k: u32 = 0u; k < 6u; k = k + 1u) {{
    w[k] = select((W2PI64[wi + k] << sh) | (W2PI64[wi + k + 1u] >> (32u - sh)), W2PI64[wi + k], sh == 0u);
  }}
  // |x| 2/pi mod 4 = (mant w mod 2^192) 2^-190: two integer bits, 190 fraction bits in words
  // f[0] (high) .. f[5], column by column from 32x32 -> 64-bit products (mant = a1 2^32 + a0)
  let a0 = mant & 0xfffffffflu; let a1 = mant >> 32u;
  var f: array<u32, 6>;
  var carry = 0lu;
  for (var c: i32 = 5; c >= 0; c = c - 1) {{
    let p0 = a0 * u64(w[c]); let p1 = a0 * u64(w[c + 1]); let p2 = a1 * u64(w[c + 1]); let p3 = a1 * u64(w[c + 2]);
    let acc = carry + (p0 & 0xfffffffflu) + (p1 >> 32u) + (p2 & 0xfffffffflu) + (p3 >> 32u);
    f[c] = u32(acc & 0xfffffffflu); carry = acc >> 32u;
  }}
  let q = (f[0] + 0x20000000u) >> 30u;                 // nearest quadrant
  f[0] = f[0] - (q << 30u);                            // signed fraction in [-1/2, 1/2) quadrant
  let neg = (f[0] >> 31u) == 1u;
  if (neg) {{
    var cy = 1u;
    for (var c: i32 = 5; c >= 0; c = c - 1) {{ let v = ~f[c] + cy; cy = select(0u, 1u, cy == 1u && v == 0u); f[c] = v; }}
  }}
  // the top 64 bits t = th:tl of the magnitude (= t 2^(-62 - sc)); a double's fraction is
  // above 2^-64, so its leading bit lies in the first three words
  var sc = 0u;
  for (var i: i32 = 0; i < 3 && f[0] == 0u; i = i + 1) {{ f[0] = f[1]; f[1] = f[2]; f[2] = f[3]; f[3] = f[4]; sc = sc + 32u; }}
  let z = countLeadingZeros(f[0]);
  let th = u64(select((f[0] << z) | (f[1] >> (32u - z)), f[0], z == 0u));
  let tl = u64(select((f[1] << z) | (f[2] >> (32u - z)), f[1], z == 0u));
  sc = sc + z;
  // r = t (pi/2 2^63) 2^(-125 - sc): the 128-bit product ph:pl, rounded to 53 bits once
  let ch = {_PIO2_64 >> 32:#x}lu; let cl = {_PIO2_64 & 0xFFFFFFFF:#x}lu;
  let ll = tl * cl; let lh = tl * ch; let hl = th * cl;
  let mid = (ll >> 32u) + (lh & 0xfffffffflu) + (hl & 0xfffffffflu);
  let ph = th * ch + (lh >> 32u) + (hl >> 32u) + (mid >> 32u);
  let pl = (mid << 32u) | (ll & 0xfffffffflu);
  let top = u32(ph >> 63u);                            // 1: 128 bits, else 127
  var m = ph >> (10u + top);
  let rest = ph & ((1024lu << top) - 1lu); let half = 512lu << top;
  if (rest > half || (rest == half && (pl != 0lu || (m & 1lu) == 1lu))) {{ m = m + 1lu; }}
  var r = (f64(u32(m >> 32u)) * 4294967296.0lf + f64(u32(m & 0xfffffffflu)))
          * bitcast<f64>(u64(972u + top - sc) << 52u);  // 2^(-51 + top - sc)
  if (neg) {{ r = -r; }}
  if (x < 0.0lf) {{ return vec2<f64>(-r, f64((4u - q) & 3u)); }}
  return vec2<f64>(r, f64(q));
}}"""),
    "trig_f64": (("nan_f64", "isfin_f64", "rem_pio2_big"), f"""fn trig_f64(x: f64) -> vec3<f64> {{
  // (sin x, cos x, quadrant) via Cody-Waite reduction by pi/2 (Payne-Hanek above 2^19)
  if (!isfin_f64(x)) {{ return vec3<f64>(nan_f64(), nan_f64(), 0.0lf); }}
  var k = round(x * {_F64_CONSTS['INV_PIO2']}lf);
  var rr: f64;
  if (abs(x) < 524288.0lf) {{
    let r = fma(-k, {_F64_CONSTS['PIO2_3']}lf, fma(-k, {_F64_CONSTS['PIO2_2']}lf, fma(-k, {_F64_CONSTS['PIO2_1']}lf, x)));
    rr = fma(-k, {_F64_CONSTS['PIO2_3T']}lf, r);
  }} else {{
    let big = rem_pio2_big(x);
    rr = big.x; k = big.y;
  }}
  let z = rr * rr;
  let s = rr * {_SIN_POLY};
  let c = {_COS_POLY};
  let q = i32(k - 4.0lf * floor(k * 0.25lf));
  if (q == 0) {{ return vec3<f64>(s, c, 0.0lf); }}
  if (q == 1) {{ return vec3<f64>(c, -s, 1.0lf); }}
  if (q == 2) {{ return vec3<f64>(-s, -c, 2.0lf); }}
  return vec3<f64>(-c, s, 3.0lf);
}}"""),
    "sin_f64": (("trig_f64",), "fn sin_f64(x: f64) -> f64 { if (x == 0.0lf) { return x; } return trig_f64(x).x; }"),
    "cos_f64": (("trig_f64",), "fn cos_f64(x: f64) -> f64 { return trig_f64(x).y; }"),
    "tan_f64": (("trig_f64",), "fn tan_f64(x: f64) -> f64 { if (x == 0.0lf) { return x; } let t = trig_f64(x); return t.x / t.y; }"),
    "atan_f64": (("isnan_f64",), f"""fn atan_f64(x: f64) -> f64 {{
  if (isnan_f64(x) || x == 0.0lf) {{ return x; }}
  var a = abs(x);
  var base = 0.0lf;
  var inv = false;
  if (a > 2.4375lf) {{ a = 1.0lf / a; inv = true; }}
  var t = a;
  if (a > 0.4375lf) {{
    if (a < 0.6875lf) {{ base = 4.63647609000806093515e-01lf; t = (2.0lf * a - 1.0lf) / (2.0lf + a); }}
    else if (a < 1.1875lf) {{ base = 7.85398163397448278999e-01lf; t = (a - 1.0lf) / (a + 1.0lf); }}
    else {{ base = 9.82793723247329054082e-01lf; t = (a - 1.5lf) / (1.0lf + 1.5lf * a); }}
  }}
  let z = t * t;
  var r = base + t * {_ATAN_POLY};
  if (inv) {{ r = 1.57079632679489655800lf - r + 6.12323399573676603587e-17lf; }}
  if (x < 0.0lf) {{ return -r; }}
  return r;
}}"""),
    # atan2's finite, nonzero case; the special values are the generic ``atan2`` helper's
    "atan2_core_f64": (("atan_f64", "copysign_f64"), """fn atan2_core_f64(y: f64, x: f64) -> f64 {
  let pi = 3.14159265358979311600lf;
  if (abs(y) > abs(x)) { return copysign_f64(pi * 0.5lf, y) - atan_f64(x / y); }
  var r = atan_f64(y / x);
  if (x < 0.0lf) { if (y >= 0.0lf) { r = r + pi; } else { r = r - pi; } }
  return r;
}"""),
    # f32 through f64 where the adapter has it (the f32 builtin is a few ULP off on some drivers)
    "atan2_via64_f32": (("atan2_f64",), "fn atan2_via64_f32(y: f32, x: f32) -> f32 { return f32(atan2_f64(f64(y), f64(x))); }"),
    "asin_f64": (("atan2_f64",), "fn asin_f64(x: f64) -> f64 { if (abs(x) > 1.0lf) { return (x - x) / (x - x); } return atan2_f64(x, sqrt((1.0lf - x) * (1.0lf + x))); }"),
    "acos_f64": (("atan_f64", "nan_f64", "isnan_f64"), """fn acos_f64(x: f64) -> f64 {
  if (abs(x) > 1.0lf  || isnan_f64(x)) { return nan_f64(); }
  if (x == -1.0lf) { return 3.14159265358979311600lf; }
  return 2.0lf * atan_f64(sqrt((1.0lf - x) / (1.0lf + x)));
}"""),
    "sinh_f64": (("expm1_f64", "exp_f64"), """fn sinh_f64(x: f64) -> f64 {
  if (x == 0.0lf) { return x; }
  let a = abs(x);
  var r: f64;
  if (a < 22.0lf) { let t = expm1_f64(a); r = 0.5lf * (t + t / (t + 1.0lf)); }
  else if (a < 709.0lf) { r = 0.5lf * exp_f64(a); }
  else { let w = exp_f64(0.5lf * a); r = (0.5lf * w) * w; }
  if (x < 0.0lf) { return -r; }
  return r;
}"""),
    "cosh_f64": (("expm1_f64", "exp_f64"), """fn cosh_f64(x: f64) -> f64 {
  let a = abs(x);
  if (a < 0.34657359lf) { let t = expm1_f64(a); let w = 1.0lf + t; return 1.0lf + (t * t) / (w + w); }
  if (a < 22.0lf) { let t = exp_f64(a); return 0.5lf * t + 0.5lf / t; }
  if (a < 709.0lf) { return 0.5lf * exp_f64(a); }
  let w = exp_f64(0.5lf * a); return (0.5lf * w) * w;
}"""),
    "tanh_f64": (("expm1_f64", "isnan_f64"), """fn tanh_f64(x: f64) -> f64 {
  if (isnan_f64(x)) { return x; }
  let a = abs(x);
  var r: f64;
  if (a > 22.0lf) { r = 1.0lf; }
  else if (a >= 1.0lf) { let t = expm1_f64(2.0lf * a); r = 1.0lf - 2.0lf / (t + 2.0lf); }
  else { let t = expm1_f64(-2.0lf * a); r = -t / (t + 2.0lf); }
  if (x < 0.0lf) { return -r; }
  if (x == 0.0lf) { return x; }
  return r;
}"""),
    "asinh_f64": (("log1p_f64", "log_f64", "isfin_f64"), """fn asinh_f64(x: f64) -> f64 {
  if (!isfin_f64(x) || x == 0.0lf) { return x + x * 0.0lf; }
  let a = abs(x);
  var r: f64;
  if (a > 268435456.0lf) { r = log_f64(a) + 6.93147180559945286227e-01lf; }
  else if (a > 2.0lf) { r = log_f64(2.0lf * a + 1.0lf / (sqrt(a * a + 1.0lf) + a)); }
  else { let t = a * a; r = log1p_f64(a + t / (1.0lf + sqrt(1.0lf + t))); }
  if (x < 0.0lf) { return -r; }
  return r;
}"""),
    "acosh_f64": (("log1p_f64", "log_f64", "nan_f64", "isnan_f64"), """fn acosh_f64(x: f64) -> f64 {
  if (x < 1.0lf  || isnan_f64(x)) { return nan_f64(); }
  if (x > 268435456.0lf) { return log_f64(x) + 6.93147180559945286227e-01lf; }
  if (x > 2.0lf) { return log_f64(2.0lf * x - 1.0lf / (x + sqrt(x * x - 1.0lf))); }
  let t = x - 1.0lf;
  return log1p_f64(t + sqrt(2.0lf * t + t * t));
}"""),
    "atanh_f64": (("log1p_f64", "nan_f64", "isnan_f64"), """fn atanh_f64(x: f64) -> f64 {
  if (x == 0.0lf) { return x; }
  let a = abs(x);
  if (a > 1.0lf  || isnan_f64(x)) { return nan_f64(); }
  var r: f64;
  if (a < 0.5lf) { let t = a + a; r = 0.5lf * log1p_f64(t + t * a / (1.0lf - a)); }
  else { r = 0.5lf * log1p_f64((a + a) / (1.0lf - a)); }
  if (x < 0.0lf) { return -r; }
  return r;
}"""),
}


def _f32_twin(name):
    """The f64 helper ``name`` rewritten for f32: for adapters without shader-f64, whose drivers'
    f32 builtins miss special values and digits (lavapipe: atan(NaN) = 0, sinh(1e-30) = 3e-8,
    acosh(1e30) = inf, asin(0.5) 60 ulp off).  Only helpers of plain arithmetic over exp, expm1,
    log, log1p, sqrt and atan qualify (no f64 bit tricks); their f32 deps are the builtins'
    wrappers or the twins."""
    deps, src = HELPERS[name + "_f64"]
    src = re.sub(r"(\d)lf\b", r"\1f", src).replace("f64", "f32")
    return tuple(d.replace("_f64", "_f32") for d in deps), src


for _n in ("atan", "atan2_core", "asin", "acos", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"):
    HELPERS[_n + "_f32"] = _f32_twin(_n)
# float32 without f64: integer-reduced trig, exp/expm1/logs of f32 arithmetic, sinh/cosh with
# float32's thresholds (replacing their twins)
HELPERS.update(F32_HELPERS)
HELPERS.update(POW_HELPERS)

# Generic per-float-type helpers; instantiate with T/S/Z ("f32", "f", "0.0f") via ``generic``.
_GENERIC = {
    "fmod": (("isnan", "isinf", "nan", "copysign"), """fn fmod_{S}(a: {T}, b: {T}) -> {T} {
  // C's fmod, exact at any quotient: binary long division (each r - t is exact: t <= r < 2t)
  if (isnan_{S}(a) || isnan_{S}(b) || isinf_{S}(a) || b == {Z}) { return nan_{S}(); }
  if (isinf_{S}(b)) { return a; }
  var r = abs(a);
  let m = abs(b);
  if (r < m) { return a; }
  var t = m;
  loop { let u = t + t; if (u > r) { break; } t = u; }
  loop {
    if (r >= t) { r = r - t; }
    if (t <= m) { break; }
    t = t * {H};
  }
  return copysign_{S}(r, a);
}"""),
    "divmod": (("fmod", "fdiv", "copysign", "isnan", "isinf"), """fn divmod_{S}(a: {T}, b: {T}) -> vec2<{T}> {
  // NumPy's npy_divmod: (floor_divide, remainder)
  var md = fmod_{S}(a, b);
  if (b == {Z}) { return vec2<{T}>(fdiv_{S}(a, b), md); }
  // the standard's special case (NumPy differs): one infinite operand gives a / b
  let one_inf = (isinf_{S}(a) != isinf_{S}(b)) && !isnan_{S}(a) && !isnan_{S}(b);
  if (isnan_{S}(md)) { return vec2<{T}>(select(md, fdiv_{S}(a, b), one_inf), md); }
  var div = fdiv_{S}(a - md, b);
  if (md != {Z}) {
    if ((b < {Z}) != (md < {Z})) { md = md + b; div = div - {O}; }
  } else { md = copysign_{S}({Z}, b); }
  var fd: {T};
  if (div != {Z}) { fd = floor(div); if (div - fd > {H}) { fd = fd + {O}; } }
  else { fd = copysign_{S}({Z}, fdiv_{S}(a, b)); }
  if (one_inf) { fd = fdiv_{S}(a, b); }
  return vec2<{T}>(fd, md);
}"""),
    "atan2": (("isnan", "sbit", "copysign", "isinf", "atan2_core"), """fn atan2_{S}(y: {T}, x: {T}) -> {T} {
  let pi = {PI};
  if (isnan_{S}(x) || isnan_{S}(y)) { return x + y; }
  if (y == {Z}) {
    if (sbit_{S}(x)) { return copysign_{S}(pi, y); }
    return y;
  }
  if (x == {Z}) { return copysign_{S}(pi * {H}, y); }
  if (isinf_{S}(x)) {
    if (isinf_{S}(y)) { if (x > {Z}) { return copysign_{S}(pi * {H} * {H}, y); } return copysign_{S}(pi * {H} * {H} * 3.0, y); }
    if (x > {Z}) { return copysign_{S}({Z}, y); }
    return copysign_{S}(pi, y);
  }
  if (isinf_{S}(y)) { return copysign_{S}(pi * {H}, y); }
  return atan2_core_{S}(y, x);
}"""),
    "fmax": (("isnan",), "fn fmax_{S}(a: {T}, b: {T}) -> {T} { if (isnan_{S}(a) || a > b) { return a; } return b; }"),
    "fmin": (("isnan",), "fn fmin_{S}(a: {T}, b: {T}) -> {T} { if (isnan_{S}(a) || a < b) { return a; } return b; }"),
    "fsign": (("isnan",), "fn fsign_{S}(a: {T}) -> {T} { if (isnan_{S}(a)) { return a; } if (a > {Z}) { return {O}; } if (a < {Z}) { return -{O}; } return abs(a); }"),
    "hypot": (("isinf", "isnan", "inf", "fdiv"), """fn hypot_{S}(x: {T}, y: {T}) -> {T} {
  let a = abs(x); let b = abs(y);
  if (isinf_{S}(a) || isinf_{S}(b)) { return inf_{S}(); }
  if (isnan_{S}(a) || isnan_{S}(b)) { return a + b; }
  let m = max(a, b); let n = min(a, b);
  if (m == {Z}) { return {Z}; }
  let q = fdiv_{S}(n, m);     // (NVIDIA's plain n / m is 0 for m past 2^126)
  return m * sqrt({O} + q * q);
}"""),
    "logaddexp": (("log1p", "exp", "isnan"), """fn logaddexp_{S}(a: {T}, b: {T}) -> {T} {
  if (a == b) { return a + {LN2}; }
  if (isnan_{S}(a) || isnan_{S}(b)) { return a + b; }
  let d = a - b;
  if (d > {Z}) { return a + log1p_{S}(exp_{S}(-d)); }
  return b + log1p_{S}(exp_{S}(d));
}"""),
    "fpow": (("exp", "log", "isnan", "inf", "nan", "isinf"), """fn fpow_{S}(x: {T}, y: {T}) -> {T} {
  if (y == {Z}) { return {O}; }
  if (x == {O}) { return {O}; }
  // correctly rounded, each special value included (exp(y log x) in f32 was 9.00000095 for 3 ** 2)
  if (y == {O}) { return x; }
  if (y == {O} + {O}) { return x * x; }
  if (y == -{O}) { return {O} / x; }
  if (isnan_{S}(x) || isnan_{S}(y)) { return x + y; }
  let yint = floor(y) == y;
  let yodd = yint && abs(y) < {BIG} && (floor(y * {H}) != y * {H});
  if (x == {Z}) {
    if (y > {Z}) { if (yodd) { return x; } return {Z}; }
    if (yodd) { return {O} / x; }
    return inf_{S}();
  }
  if (isinf_{S}(x) && x < {Z}) {
    if (y > {Z}) { if (yodd) { return x; } return -x; }
    if (yodd) { return -{Z}; } return {Z};
  }
  var ax = x;
  var sgn = {O};
  if (x < {Z}) {
    if (!yint) { return nan_{S}(); }
    ax = -x;
    if (yodd) { sgn = -{O}; }
  }
  if (ax == {O}) { return sgn; }   // (-1) ** +-inf is 1 (the standard; exp(inf * 0) is NaN)
  if (isinf_{S}(ax)) { if (y > {Z}) { return sgn * ax; } return sgn * {Z}; }
  return sgn * exp_{S}(y * log_{S}(ax));
}"""),
}
# float64 pow: fpow's special values around the double-double core (wgsl_math_pow); fpow's
# exp(y log x) stays for float32 computed in f64, where it is ample
_GENERIC["fpow_dd"] = (("pow_pos", "isnan", "inf", "nan", "isinf"), _GENERIC["fpow"][1].replace(
    "fn fpow_{S}(x: {T}, y: {T})", "fn fpow_dd_{S}(x: {T}, y: {T}, z: u64)").replace(
    "exp_{S}(y * log_{S}(ax))", "pow_pos_{S}(ax, y, z)"))
