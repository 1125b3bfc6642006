#include "core/value_text.hpp"
#include "core/half.hpp"
#include <algorithm>
#include <charconv>
#include <cmath>

namespace kiln {

namespace {

// numpy's "unique" mode with precision 8: the fewest digits that read back as the same value of its
// dtype, so f16 0.1 prints as 0.1, not as the double 0.0999755859375 it holds.
constexpr int kMaxDigits = 8;

double rounded_to(double value, DType dtype) {
  switch (dtype) {
  case DType::f32: return double(float(value));
  case DType::f16: return f16_to_float(float_to_f16(float(value)));
  case DType::bf16: return bf16_to_float(float_to_bf16(float(value)));
  case DType::f64:
  case DType::i8:
  case DType::i32:
  case DType::i64:
  case DType::u8:
  case DType::boolean: return value;
  }
  return value;
}

int fewest_digits(double value, DType dtype) {
  int digits = 1;
  for (; digits < kMaxDigits; ++digits) {
    const std::string text = float_text(value, digits);
    double parsed = 0;
    std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (rounded_to(parsed, dtype) == value) break;
  }
  return digits;
}

// Positional between 1e-4 and 1e16, as numpy prints 1000 rather than 1e+03.
std::string shortest_text(double value, DType dtype) {
  const int digits = fewest_digits(value, dtype);
  const double magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude < 1e-4 || magnitude >= 1e16)) return float_text(value, digits);
  const int exponent = magnitude == 0 ? 0 : int(std::floor(std::log10(magnitude)));
  char text[64];
  const auto [end, ec] =
      std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, std::max(0, digits - 1 - exponent));
  std::string fixed(text, ec == std::errc() ? end : text);
  if (fixed.find('.') == std::string::npos) return fixed;
  while (fixed.back() == '0')
    fixed.pop_back();
  if (fixed.back() == '.') fixed.pop_back();
  return fixed;
}

} // namespace

std::string float_text(double value, int digits) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char text[64];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value, std::chars_format::general, digits);
  return std::string(text, ec == std::errc() ? end : text);
}

std::string value_text(double value, DType dtype) {
  if (!std::isfinite(value)) return float_text(value, kMaxDigits);
  if (dtype_is_float(dtype)) return shortest_text(value, dtype);
  if (dtype == DType::boolean) return value != 0 ? "True" : "False";
  // Every integer dtype but i64 is exact in a double; summaries of i64 are approximate anyway.
  return std::to_string(int64_t(value));
}

} // namespace kiln
