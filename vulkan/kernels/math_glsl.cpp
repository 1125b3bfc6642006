// The f32 math of the device's elementwise kernels. exp, tanh, sigmoid, silu, erf and both gelus are
// the interpreter's vector_math.hpp line for line (its non-fused evaluation order: every temporary
// is `precise`, so no FMA is contracted in); log, log1p, expm1, sin, cos and pow follow the JIT's
// math_emitters.cpp, with Dekker's exact product where the JIT uses a fused FMA, because Vulkan
// lets fma() round twice. GLSL's own exp, log, sin and cos are not used: Vulkan allows them errors
// of several ulps (exp) or 2^-11 absolute (sin, cos). Exponents and mantissas are read off the
// bits, so a device that flushes denormals still takes the right branch.
#include "exec/math_coefficients.hpp"
#include "vulkan/kernels/glsl_kernel.hpp"
#include <span>

namespace kiln::vulkan::glsl {

namespace {

// `float NAME(float x)`: the polynomial with coefficients c (highest degree first) by Horner.
std::string horner_function(const std::string& name, std::span<const float> c) {
  std::string s = "float " + name + "(float x) {\n  precise float p = " + float_literal(c[0]) + ";\n";
  for (size_t i = 1; i < c.size(); ++i)
    s += "  p = p * x + " + float_literal(c[i]) + ";\n";
  return s + "  return p;\n}\n";
}

// The interpreter's exp, tanh and sigmoid (Cephes' polynomials), and the shared helpers.
const char* const kExpTanhSigmoid = R"(
// x * 2^n for n in [-150, 128], as two normal powers so no step is denormal or overflows early.
float k_scale(float x, int n) {
  int h = n >> 1;
  precise float y = x * intBitsToFloat((h + 127) << 23) * intBitsToFloat((n - h + 127) << 23);
  return y;
}
// hi + lo = a * b exactly (Dekker's product: no FMA needed). |a|, |b| < 2^100.
void k_two_prod(float a, float b, out float hi, out float lo) {
  precise float p = a * b;
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float err = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  hi = p;
  lo = err;
}
// exp(x + lo) for a correction lo smaller than an ulp of x.
float k_exp(float x, float lo) {
  x = x > 89.0 ? 89.0 : x;
  x = x < -104.0 ? -104.0 : x; // comparisons are false for NaN, which passes through
  precise float shifted = x * 1.44269504088896341 + 12582912.0;
  precise float n = shifted - 12582912.0;
  precise float r = (x - n * 0.693359375) - n * -2.12194440e-4 + lo;
  precise float p = 1.9875691500e-4;
  p = p * r + 1.3981999507e-3;
  p = p * r + 8.3334519073e-3;
  p = p * r + 4.1665795894e-2;
  p = p * r + 1.6666665459e-1;
  p = p * r + 5.0000001201e-1;
  precise float e = p * r * r + r + 1.0;
  return k_scale(e, floatBitsToInt(shifted) - 0x4b400000);
}
float k_tanh(float x) {
  uint sign = floatBitsToUint(x) & 0x80000000u;
  float a = k_abs(x);
  precise float z = a * a;
  precise float p = -5.70498872745e-3;
  p = p * z + 2.06390887954e-2;
  p = p * z - 5.37397155531e-2;
  p = p * z + 1.33314422036e-1;
  p = p * z - 3.33332819422e-1;
  precise float small = p * z * a + a;
  precise float large = 1.0 - 2.0 / (k_exp(2.0 * a, 0.0) + 1.0);
  float result = a < 0.625 ? small : large;
  return uintBitsToFloat(floatBitsToUint(result) | sign);
}
float k_sigmoid(float x) {
  float e = k_exp(-k_abs(x), 0.0);
  precise float r = 1.0 / (1.0 + e);
  precise float s = e * r;
  return x < 0.0 ? s : r;
}
float k_silu(float x) {
  precise float y = x * k_sigmoid(x);
  return y;
}
float k_gelu_tanh(float x) {
  precise float inner = 0.79788456080286535588 * (x + 0.044715 * x * x * x);
  precise float y = x * k_sigmoid(2.0 * inner);
  return y;
}
)";

// The interpreter's erf and gelu(erf).
const char* const kErf = R"(
void k_negated_square(float x, float scale, out float hi, out float lo) {
  float square, error;
  k_two_prod(x, x, square, error);
  hi = -scale * square;
  lo = -scale * error;
}
float k_erfc_large(float t, float hi, float lo) {
  precise float h = 0.5 * t + 1.0;
  precise float y = k_exp(hi, lo) * (k_poly_erfc(1.0 / h) / h);
  return y;
}
float k_erf(float x) {
  float a = k_abs(x);
  float t = a > 10.0 ? 10.0 : a;
  float hi, lo;
  k_negated_square(t, 1.0, hi, lo);
  precise float large = 1.0 - k_erfc_large(t, hi, lo);
  precise float small = k_poly_erf(x * x) * x + x;
  uint sign = floatBitsToUint(x) & 0x80000000u;
  return a < 0.9 ? small : uintBitsToFloat(floatBitsToUint(large) | sign);
}
float k_gelu_erf(float x) {
  float a = k_abs(x);
  float clamped = a > 14.0 ? 14.0 : a;
  float hi, lo;
  k_negated_square(clamped, 0.5, hi, lo);
  float tail = k_erfc_large(clamped * K_INV_SQRT2, hi, lo);
  precise float u = x * K_INV_SQRT2;
  precise float near_zero = k_poly_erf(u * u) * u + u + 1.0;
  precise float two_minus_tail = 2.0 - tail;
  float one_plus_erf = k_abs(u) < 0.9 ? near_zero : (x > 0.0 ? two_minus_tail : tail);
  float factor = x < -14.0 ? -14.0 : x;
  precise float y = 0.5 * factor * one_plus_erf;
  return x == -K_INF ? K_NAN : y;
}
)";

// The JIT's log, log1p, expm1, sin, cos and pow.
const char* const kLogTrig = R"(
// x = 2^e m with m in [sqrt(1/2), sqrt(2)), for finite x > 0, from the bits (subnormals too).
float k_split_exponent(float x, out float e) {
  uint u = floatBitsToUint(x);
  int exponent;
  uint mantissa;
  if (u < 0x00800000u) {
    int top = findMSB(u);
    mantissa = (u << uint(23 - top)) & 0x7fffffu;
    exponent = top - 149;
  } else {
    mantissa = u & 0x7fffffu;
    exponent = int(u >> 23) - 127;
  }
  float m = uintBitsToFloat(mantissa | 0x3f800000u);
  if (m >= uintBitsToFloat(0x3fb504f3u)) { // sqrt(2)
    m *= 0.5;
    exponent += 1;
  }
  e = float(exponent);
  return m;
}
// log(x) = e ln2 + f + f^2 g(f) with f = m - 1 exact.
float k_log(float x) {
  uint u = floatBitsToUint(x);
  if (k_isnan(x)) return x;
  if ((u & 0x7fffffffu) == 0u) return -K_INF;
  if (u > 0x80000000u) return K_NAN;
  if (u == 0x7f800000u) return K_INF;
  float e;
  precise float f = k_split_exponent(x, e) - 1.0;
  precise float r = k_poly_log(f) * f * f + f;
  r = fma(e, K_LN2_LO, r);
  r = fma(e, K_LN2_HI, r);
  return r;
}
// log(u) x / (u - 1) with u = 1 + x rounded (Goldberg): the quotient corrects the rounding of u.
float k_log1p(float x) {
  if (x == K_INF) return x;
  precise float u = x + 1.0;
  precise float d = u - 1.0;
  if (d == 0.0) return x; // tiny x and -0 are their own log1p
  precise float y = k_log(u) * (x / d);
  return y;
}
// 2^n (expm1(r) + 1 - 2^-n) with x = n ln2 + r, the sum rounded once and the scaling exact: no
// cancellation near 0. Below -18 the result is -1 in f32.
float k_expm1(float x) {
  if (x == 0.0) return x;
  float c = x < -18.0 ? -18.0 : x;
  c = c > 89.0 ? 89.0 : c;
  precise float n = roundEven(c * 1.44269504088896341);
  precise float r = (c - n * 0.693359375) - n * -2.12194440e-4;
  precise float t = k_poly_expq(r) * r + 1.0;
  precise float expm1_r = t * r;
  int whole = k_isnan(n) ? 0 : int(n);
  precise float s = k_scale(1.0, -whole) - 1.0;
  precise float v = expm1_r - s;
  return k_scale(v, whole);
}
// |x| = j pi/2 + r, |r| <= pi/4, with pi/2 in three parts and each product exact; j mod 4 picks
// sin(r) or cos(r) and the sign. Beyond 2^24 an exact reduction needs many more bits of pi: NaN,
// as the JIT (docs/tier-differences.md).
float k_sin_cos(float x, bool cosine) {
  float ax = k_abs(x);
  if (!(ax <= 16777216.0)) return K_NAN;
  float p, p_lo;
  k_two_prod(ax, K_TWO_OVER_PI, p, p_lo);
  p_lo = fma(ax, K_TWO_OVER_PI_LO, p_lo);
  float j = roundEven(p);
  precise float d = (p - j) + p_lo;
  if (d > 0.5) j += 1.0;
  if (d < -0.5) j -= 1.0;
  float hi, lo;
  k_two_prod(j, K_HALF_PI_HI, hi, lo);
  precise float r = (ax - hi) - lo;
  k_two_prod(j, K_HALF_PI_MID, hi, lo);
  r = (r - hi) - lo;
  r = r - j * K_HALF_PI_LO;
  precise float z = r * r;
  precise float s = k_poly_sin(z) * z * r + r;
  precise float c = (k_poly_cos(z) * z - 0.5) * z + 1.0;
  uint quadrant = uint(j) + (cosine ? 1u : 0u);
  float y = (quadrant & 1u) != 0u ? c : s;
  uint sign = (quadrant & 2u) != 0u ? 0x80000000u : 0u;
  if (!cosine) sign ^= floatBitsToUint(x) & 0x80000000u;
  return uintBitsToFloat(floatBitsToUint(y) ^ sign);
}
// log|x| as hi + lo to about 2^-30 relative, for finite x != 0: pow needs c log|x| past f32.
void k_log_parts(float ax, out float hi, out float lo) {
  float e;
  precise float f = k_split_exponent(ax, e) - 1.0;
  precise float t = k_poly_log(f) * f * f;
  precise float s_hi = f + t;
  precise float s_lo = (f - s_hi) + t;
  precise float a = e * K_LN2_SHORT;
  precise float h = a + s_hi;
  precise float h_lo = k_abs(a) >= k_abs(s_hi) ? (a - h) + s_hi : (s_hi - h) + a;
  hi = h;
  lo = h_lo + s_lo + e * K_LN2_SHORT_REST;
}
bool k_is_integer(float y) { return floor(y) == y; }
// std::pow's special cases, then exp(y log|x|) with y log|x| carried as two floats.
float k_pow(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (k_isnan(x) || k_isnan(y)) return K_NAN;
  float ax = k_abs(x);
  if (k_abs(y) == K_INF) {
    if (ax == 1.0) return 1.0;
    return (ax > 1.0) == (y > 0.0) ? K_INF : 0.0;
  }
  bool integer = k_is_integer(y);
  bool odd = integer && k_abs(y) < 16777216.0 && !k_is_integer(y * 0.5);
  bool negative = (floatBitsToUint(x) & 0x80000000u) != 0u;
  float magnitude;
  if (ax == 0.0) {
    magnitude = y < 0.0 ? K_INF : 0.0;
  } else if (ax == K_INF) {
    magnitude = y < 0.0 ? 0.0 : K_INF;
  } else {
    if (negative && !integer) return K_NAN;
    float hi, lo;
    k_log_parts(ax, hi, lo);
    precise float product = y * hi;
    if (k_abs(product) > 150.0) {
      magnitude = k_exp(product, 0.0); // overflows to inf or underflows to 0 either way
    } else {
      float p, p_lo;
      k_two_prod(y, hi, p, p_lo);
      p_lo = fma(y, lo, p_lo);
      magnitude = k_exp(p, p_lo);
    }
  }
  return negative && odd ? -magnitude : magnitude;
}
// std::fmod, exactly: the mantissas' long division in integers.
float k_fmod(float a, float b) {
  uint ua = floatBitsToUint(a) & 0x7fffffffu, ub = floatBitsToUint(b) & 0x7fffffffu;
  uint sign = floatBitsToUint(a) & 0x80000000u;
  if (ub == 0u || ua >= 0x7f800000u || ub > 0x7f800000u) return K_NAN;
  if (ua < ub) return a;
  int ea = int(ua >> 23), eb = int(ub >> 23);
  uint ma = ea == 0 ? ua : (ua & 0x7fffffu) | 0x800000u;
  uint mb = eb == 0 ? ub : (ub & 0x7fffffu) | 0x800000u;
  ea = max(ea, 1);
  eb = max(eb, 1);
  // Below 2^24 after each remainder, so 8 more bits at a time fit in 32.
  ma %= mb;
  for (int k = ea - eb; k > 0; k -= 8)
    ma = (ma << uint(min(k, 8))) % mb;
  // |a| mod |b| = ma 2^(eb - 150), exact in f32 (a multiple of b's ulp, below |b|).
  float r = k_scale(float(ma), eb - 150);
  return uintBitsToFloat(floatBitsToUint(r) | sign);
}
)";

std::string constants() {
  std::string s;
  auto define = [&](const char* name, float value) {
    s += std::string("#define ") + name + " " + float_literal(value) + "\n";
  };
  define("K_INV_SQRT2", coeffs::kInvSqrt2);
  define("K_LN2_HI", coeffs::kLn2Hi);
  define("K_LN2_LO", coeffs::kLn2Lo);
  define("K_LN2_SHORT", coeffs::kLn2Short);
  define("K_LN2_SHORT_REST", coeffs::kLn2ShortRest);
  define("K_TWO_OVER_PI", coeffs::kTwoOverPi);
  define("K_TWO_OVER_PI_LO", coeffs::kTwoOverPiLo);
  define("K_HALF_PI_HI", coeffs::kHalfPiHi);
  define("K_HALF_PI_MID", coeffs::kHalfPiMid);
  define("K_HALF_PI_LO", coeffs::kHalfPiLo);
  return s;
}

} // namespace

const std::string& math_library() {
  static const std::string library =
      constants() + horner_function("k_poly_erf", coeffs::kErfP) + horner_function("k_poly_erfc", coeffs::kErfcR) +
      horner_function("k_poly_log", coeffs::kLogG) + horner_function("k_poly_expq", coeffs::kExpQ) +
      horner_function("k_poly_sin", coeffs::kSinP) + horner_function("k_poly_cos", coeffs::kCosP) + kExpTanhSigmoid +
      kErf + kLogTrig;
  return library;
}

} // namespace kiln::vulkan::glsl
