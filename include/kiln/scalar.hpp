#pragma once
#include <concepts>
#include <cstdint>

namespace kiln {

// A number mixed into tensor arithmetic (`x * 0.5`, `x + 1`): PyTorch's Python scalar. Its kind
// (bool, integer, floating) takes part in dtype promotion, its C++ width does not: `x * 0.5` on an
// i32 tensor is f32, `x + 1` on an f16 tensor stays f16 (dtype_promotion.hpp).
class Scalar {
public:
  enum class Kind { boolean, integer, floating };

  Scalar(bool value) : kind_(Kind::boolean), integer_(value), floating_(value) {} // NOLINT: implicit
  template <std::integral T>
  requires(!std::same_as<T, bool>) Scalar(T value)
      : kind_(Kind::integer), integer_(int64_t(value)), floating_(double(value)) {} // NOLINT
  template <std::floating_point T>
  Scalar(T value) : kind_(Kind::floating), integer_(0), floating_(double(value)) {} // NOLINT

  Kind kind() const { return kind_; }
  double as_double() const { return floating_; }
  int64_t as_integer() const { return integer_; } // integer and bool scalars

private:
  Kind kind_;
  int64_t integer_;
  double floating_;
};

} // namespace kiln
