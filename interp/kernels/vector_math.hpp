#pragma once
#include <limits>
// Branch-free f32 exp, tanh, sigmoid, erf and their compounds that GCC vectorises (libm's scalar
// calls made the interpreter's ewchain ten times slower than ONNX Runtime). Like gemm.hpp, free of headers with
// inline functions, because vector_math_avx2.cpp compiles it with -mavx2 -mfma. Cephes' polynomials;
// the ulp bounds against the correctly rounded result are measured in tests/test_interp_ops.cpp
// and listed in docs/interpreter.md. NaN propagates, ±Inf and overflow saturate as in libm.
#include "exec/math_coefficients.hpp"
#include <bit>
#include <cstdint>

// The inline functions live in a namespace named after the build that compiles them, so the
// AVX2 copies (vector_math_avx2.cpp defines KILN_VECTOR_MATH_BUILD) never share a symbol with
// the baseline ones: a linker picking the AVX2 copy of an out-of-line instance would run AVX2
// code on any CPU.
#ifndef KILN_VECTOR_MATH_BUILD
#define KILN_VECTOR_MATH_BUILD baseline
#endif

namespace kiln::interp::vector_math {
inline namespace KILN_VECTOR_MATH_BUILD {

// 2^n for n in [-150, 128], as the product of two normal powers so no step is denormal.
// x * 2^n for n in [-150, 128], as two normal powers so no step is denormal or overflows early.
inline float scale_by_exp2(float x, int32_t n) {
  const int32_t half = n >> 1;
  const float a = std::bit_cast<float>((half + 127) << 23);
  const float b = std::bit_cast<float>((n - half + 127) << 23);
  return x * a * b;
}

// |x| by clearing the sign bit (NaN keeps its payload).
inline float abs(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu); }

// exp(x + lo) for a correction lo smaller than an ulp of x, which never gets rounded into x.
inline float exp(float x, float lo = 0.0f) {
  constexpr float kHi = 89.0f, kLo = -104.0f; // exp overflows / underflows to 0 beyond these
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  x = x > kHi ? kHi : x;
  x = x < kLo ? kLo : x; // comparisons are false for NaN, which passes through
  const float shifted = x * kLog2e + kRound;
  const float n = shifted - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo + lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  return scale_by_exp2(e, std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound));
}

inline float tanh(float x) {
  const uint32_t sign = std::bit_cast<uint32_t>(x) & 0x80000000u;
  const float a = abs(x);
  // Small |x|: odd polynomial (no cancellation); otherwise 1 - 2 / (e^2|x| + 1).
  // Both are computed on |x| and the sign put back, so tanh(-0) = -0 and NaN keeps its payload.
  const float z = a * a;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * a + a;
  const float large = 1.0f - 2.0f / (exp(2.0f * a) + 1.0f);
  const float result = a < 0.625f ? small : large;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(result) | sign);
}

// e / (1 + e) with e = exp(-|x|) <= 1: never overflows, and keeps the denormal results libm gives.
inline float sigmoid(float x) {
  const float e = exp(-abs(x));
  const float r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}

inline float silu(float x) { return x * sigmoid(x); }

// 0.5 x (1 + tanh(u)) = x sigmoid(2u): the same value without 1 + tanh(u) cancelling for x << 0.
inline float gelu_tanh(float x) {
  const float inner = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
  return x * sigmoid(2.0f * inner);
}

template <int N> inline float horner(const float (&c)[N], float x) {
  float p = c[0];
  for (int i = 1; i < N; ++i)
    p = p * x + c[i];
  return p;
}

// erfc(t) for t >= 0.9, given -t^2 exactly as hi + lo: exp(-t^2) R(v) / (1 + t/2) with
// v = 1 / (1 + t/2), the form and coefficients of the JIT's erf (docs/jit-elementwise.md).
inline float erfc_large(float t, float hi, float lo) {
  const float h = 0.5f * t + 1.0f;
  return exp(hi, lo) * (horner(coeffs::kErfcR, 1.0f / h) / h);
}

// hi + lo = -scale x^2 exactly (scale a power of two): FMA gives the rounding error of x * x.
// __builtin_fmaf, not std::fma: this header may not instantiate standard-library inlines.
inline void negated_square(float x, float scale, float& hi, float& lo) {
  const float square = x * x;
  hi = -scale * square;
  lo = -scale * __builtin_fmaf(x, x, -square);
}

// |x| < 0.9: x + x P(x^2); otherwise sign(x) (1 - erfc(|x|)). `a > c ? c : a` keeps NaN.
inline float erf(float x) {
  const float a = abs(x);
  const float t = a > 10.0f ? 10.0f : a;
  float hi, lo;
  negated_square(t, 1.0f, hi, lo);
  const float large = 1.0f - erfc_large(t, hi, lo);
  const float small = horner(coeffs::kErfP, x * x) * x + x;
  const uint32_t sign = std::bit_cast<uint32_t>(x) & 0x80000000u;
  return a < 0.9f ? small : std::bit_cast<float>(std::bit_cast<uint32_t>(large) | sign);
}

// 0.5 x (1 + erf(x / sqrt2)). Where |x / sqrt2| >= 0.9, 1 + erf is 2 - erfc (x > 0) or erfc
// itself, taken from x^2 / 2 exactly, so negative x keeps its relative accuracy instead of
// cancelling in 1 + erf. Clamping at |x| = 14 (where the result underflows) keeps -inf * 0 from NaN,
// as in the JIT.
inline float gelu_erf(float x) {
  const float a = abs(x);
  const float clamped = a > 14.0f ? 14.0f : a;
  float hi, lo;
  negated_square(clamped, 0.5f, hi, lo);
  const float tail = erfc_large(clamped * coeffs::kInvSqrt2, hi, lo);
  const float u = x * coeffs::kInvSqrt2;
  const float near_zero = horner(coeffs::kErfP, u * u) * u + u + 1.0f;
  const float one_plus_erf = abs(u) < 0.9f ? near_zero : (x > 0.0f ? 2.0f - tail : tail);
  const float factor = x < -14.0f ? -14.0f : x;
  // -inf * 0 = NaN, as PyTorch's 0.5 x (1 + erf(x / sqrt2)) gives; the clamp would give -0.
  return x == -std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::quiet_NaN()
                                                      : 0.5f * factor * one_plus_erf;
}

} // namespace KILN_VECTOR_MATH_BUILD

// The functions above over arrays, in the widest build this CPU runs (AVX2+FMA where compiled in).
enum class MapF32 : uint8_t { exp, tanh, sigmoid, silu, gelu_tanh, erf, gelu_erf };
void map_f32(MapF32 fn, const float* x, float* y, int64_t n);

namespace detail {
void map_f32_baseline(MapF32 fn, const float* x, float* y, int64_t n);
void map_f32_avx2(MapF32 fn, const float* x, float* y, int64_t n);
} // namespace detail

} // namespace kiln::interp::vector_math
