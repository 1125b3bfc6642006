#pragma once
// Branch-free f32 exp, tanh and sigmoid that GCC vectorises (libm's scalar calls made the
// interpreter's ewchain ten times slower than ONNX Runtime). Like gemm.hpp, free of headers with
// inline functions, because vector_math_avx2.cpp compiles it with -mavx2 -mfma. Cephes' polynomials;
// the ulp bounds against the correctly rounded result are measured in tests/test_interp_ops.cpp
// and listed in docs/interpreter.md. NaN propagates, ±Inf and overflow saturate as in libm.
#include <bit>
#include <cstdint>

namespace kiln::interp::vector_math {

// 2^n for n in [-150, 128], as the product of two normal powers so no step is denormal.
// x * 2^n for n in [-150, 128], as two normal powers so no step is denormal or overflows early.
inline float scale_by_exp2(float x, int32_t n) {
  const int32_t half = n >> 1;
  const float a = std::bit_cast<float>((half + 127) << 23);
  const float b = std::bit_cast<float>((n - half + 127) << 23);
  return x * a * b;
}

inline float exp(float x) {
  constexpr float kHi = 89.0f, kLo = -104.0f; // exp overflows / underflows to 0 beyond these
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  x = x > kHi ? kHi : x;
  x = x < kLo ? kLo : x; // comparisons are false for NaN, which passes through
  const float shifted = x * kLog2e + kRound;
  const float n = shifted - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
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
  const float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
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
  const float e = exp(-std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu));
  const float r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}

inline float silu(float x) { return x * sigmoid(x); }

// 0.5 x (1 + tanh(u)) = x sigmoid(2u): the same value without 1 + tanh(u) cancelling for x << 0.
inline float gelu_tanh(float x) {
  const float inner = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
  return x * sigmoid(2.0f * inner);
}

// The functions above over arrays, in the widest build this CPU runs (AVX2+FMA where compiled in).
enum class MapF32 : uint8_t { exp, tanh, sigmoid, silu, gelu_tanh };
void map_f32(MapF32 fn, const float* x, float* y, int64_t n);

namespace detail {
void map_f32_baseline(MapF32 fn, const float* x, float* y, int64_t n);
void map_f32_avx2(MapF32 fn, const float* x, float* y, int64_t n);
} // namespace detail

} // namespace kiln::interp::vector_math
