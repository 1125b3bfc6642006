#pragma once
#include "core/half.hpp"
#include <cmath>
#include <cstdint>
#include <kiln/dtype.hpp>
#include <limits>
#include <type_traits>

namespace kiln::interp {

// How a kernel sees one dtype: Storage is what lies in memory, Compute what arithmetic uses.
// f16 and bf16 are stored as 16 bits and computed in f32; bool is one byte computed as bool.
template <DType D> struct Element;

template <DType D, class T> struct PlainElement {
  static constexpr DType dtype = D;
  using Storage = T;
  using Compute = T;
  static T load(T v) { return v; }
  static T store(T v) { return v; }
};

template <> struct Element<DType::f32> : PlainElement<DType::f32, float> {};
template <> struct Element<DType::f64> : PlainElement<DType::f64, double> {};
template <> struct Element<DType::i8> : PlainElement<DType::i8, int8_t> {};
template <> struct Element<DType::i32> : PlainElement<DType::i32, int32_t> {};
template <> struct Element<DType::i64> : PlainElement<DType::i64, int64_t> {};
template <> struct Element<DType::u8> : PlainElement<DType::u8, uint8_t> {};

template <> struct Element<DType::f16> {
  static constexpr DType dtype = DType::f16;
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return f16_to_float(v); }
  static uint16_t store(float v) { return float_to_f16(v); }
};

template <> struct Element<DType::bf16> {
  static constexpr DType dtype = DType::bf16;
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return bf16_to_float(v); }
  static uint16_t store(float v) { return float_to_bf16(v); }
};

template <> struct Element<DType::boolean> {
  static constexpr DType dtype = DType::boolean;
  using Storage = uint8_t;
  using Compute = bool;
  static bool load(uint8_t v) { return v != 0; }
  static uint8_t store(bool v) { return uint8_t(v); }
};

template <class T> bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// The conversion rule of `cast`: float -> integer truncates toward zero and saturates at the
// integer's range (NaN -> 0, so no input is undefined behaviour); anything -> bool is `!= 0`;
// integer -> integer wraps (C++20 modular conversion); everything else is static_cast.
template <class To, class From> To convert_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return To(0);
    if (v <= From(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= From(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return To(v);
  } else {
    return static_cast<To>(v);
  }
}

// Converts a double attribute (full, arange, pad values) into element E's storage.
template <class E> typename E::Storage storage_from_double(double v) {
  return E::store(convert_value<typename E::Compute>(v));
}

// Signed integer arithmetic wraps around (as numpy does) instead of being undefined on overflow.
template <class T> T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else
    return a + b;
}
template <class T> T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b));
  else
    return a - b;
}
template <class T> T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
  else
    return a * b;
}
template <class T> T wrapping_neg(T a) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
  else
    return -a;
}

// max/min that propagate NaN from either side (numpy maximum/minimum, torch max).
template <class T> T nan_max(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return a < b ? b : a;
}
template <class T> T nan_min(T a, T b) {
  if (is_nan(a)) return a;
  if (is_nan(b)) return b;
  return b < a ? b : a;
}

} // namespace kiln::interp
