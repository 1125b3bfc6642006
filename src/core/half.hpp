#pragma once
#include <bit>
#include <cstdint>
#include <cstring>

namespace kiln {

// IEEE binary16 and bfloat16 storage conversions (round to nearest even).
inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }
inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40); // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0) {
    if (man == 0) return std::bit_cast<float>(sign);
    float v = float(man) * (1.0f / 16777216.0f); // subnormal: man * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_f16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;        // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;       // overflow to inf (incl. inf)
  if (abs < 0x38800000u) {                             // subnormal or zero in f16
    float v = std::bit_cast<float>(abs) * 16777216.0f; // scale to units of 2^-24
    uint32_t m = uint32_t(v);
    float rem = v - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return sign | uint16_t(m);
  }
  uint32_t mant = abs & 0x7fffffu, exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | uint16_t(h);
}

} // namespace kiln
