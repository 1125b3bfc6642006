#pragma once
#include <kiln/error.hpp>
#include <kiln/shape.hpp>
#include <kiln/tensor.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::ir {

// An op attribute value. Printed in MLIR syntax: bool `true`, int `3 : i64`, float `0.5 : f64`,
// string `"x"`, ints `array<i64: 1, 2>`, floats `array<f64: 1.0>`, dims `["batch", 2]`,
// dtype `f32`, tensor `dense<"0x..."> : tensor<2xf32>`.
struct Attr {
  using Ints = std::vector<int64_t>;
  using Floats = std::vector<double>;
  std::variant<bool, int64_t, double, std::string, Ints, Floats, Shape, DType, Tensor> value;

  static Attr of_bool(bool v) { return Attr{v}; }
  static Attr of_int(int64_t v) { return Attr{v}; }
  static Attr of_float(double v) { return Attr{v}; }
  static Attr of_string(std::string v) { return Attr{std::move(v)}; }
  static Attr of_ints(Ints v) { return Attr{std::move(v)}; }
  static Attr of_floats(Floats v) { return Attr{std::move(v)}; }
  static Attr of_shape(Shape v) { return Attr{std::move(v)}; }
  static Attr of_dtype(DType v) { return Attr{v}; }
  static Attr of_tensor(Tensor v) { return Attr{std::move(v)}; }
};

bool attr_equal(const Attr& a, const Attr& b);

// Named attributes, kept sorted by name (MLIR prints them sorted; equality and hashing need it).
class Attrs {
public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, Attr>> items);

  void set(const std::string& name, Attr value);
  bool has(const std::string& name) const { return find(name) != nullptr; }
  const Attr* find(const std::string& name) const;

  // Typed getters: throw kiln::Error(internal) naming the attribute when missing or mistyped.
  bool get_bool(const std::string& name) const;
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const Attr::Ints& get_ints(const std::string& name) const;
  const Attr::Floats& get_floats(const std::string& name) const;
  const Shape& get_shape(const std::string& name) const;
  DType get_dtype(const std::string& name) const;
  const Tensor& get_tensor(const std::string& name) const;

  int64_t get_int_or(const std::string& name, int64_t fallback) const;
  double get_float_or(const std::string& name, double fallback) const;

  const std::vector<std::pair<std::string, Attr>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  friend bool operator==(const Attrs& a, const Attrs& b);

private:
  template <class T> const T& get(const std::string& name, const char* what) const;
  std::vector<std::pair<std::string, Attr>> items_;
};

} // namespace kiln::ir
