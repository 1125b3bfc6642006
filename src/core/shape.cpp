#include "core/checked_arithmetic.hpp"
#include "core/dim_expr.hpp"
#include <kiln/error.hpp>
#include <kiln/layout.hpp>
#include <kiln/shape.hpp>

namespace kiln {

namespace dim_expr {

Poly poly_of(const Dim& d) {
  if (d.is_static()) return Poly::constant(d.size());
  return d.is_symbol() ? Poly::symbol(d.name()) : Poly::parse(d.name());
}

Dim dim_of(const Poly& p) {
  if (std::optional<int64_t> size = p.constant_value()) {
    if (*size < 0) throw Error(ErrorKind::shape, "dimension size " + std::to_string(*size) + " is negative");
    return Dim(*size);
  }
  Dim d(0);
  d.name_ = p.to_string();
  d.expression_ = !is_valid_symbolic_name(d.name_);
  return d;
}

} // namespace dim_expr

using dim_expr::dim_of;
using dim_expr::poly_of;

Dim operator+(const Dim& a, const Dim& b) { return dim_of(poly_of(a) + poly_of(b)); }
Dim operator-(const Dim& a, const Dim& b) { return dim_of(poly_of(a) - poly_of(b)); }
Dim operator*(const Dim& a, const Dim& b) { return dim_of(poly_of(a) * poly_of(b)); }
Dim operator/(const Dim& a, const Dim& b) {
  if (!b.is_static() || b.size() <= 0)
    throw Error(ErrorKind::shape, "dim " + a.to_string() + " divided by " + b.to_string() +
                                      ": a dim can only be divided by a static size > 0");
  return dim_of(dim_expr::floordiv(poly_of(a), b.size()));
}

Dim::Dim(int64_t size) : size_(size) {
  // -1 is accepted as "infer this dim" by reshape; layouts reject it.
  if (size < -1) throw Error(ErrorKind::shape, "dimension size " + std::to_string(size) + " is negative");
}

Dim::Dim(const char* text) : Dim(std::string(text ? text : "")) {}

Dim::Dim(std::string text) {
  if (is_valid_symbolic_name(text)) {
    name_ = std::move(text);
    return;
  }
  if (text.empty())
    throw Error(ErrorKind::spec, "invalid symbolic dimension name '': it must match [A-Za-z_][A-Za-z0-9_]* or be an "
                                 "expression such as batch*6");
  *this = dim_of(dim_expr::Poly::parse(text));
}

std::string Dim::to_string() const { return is_symbolic() ? name_ : std::to_string(size_); }

bool is_valid_symbolic_name(const std::string& name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].to_string();
  }
  return s + "]";
}

bool shape_is_static(const Shape& shape) {
  for (const Dim& d : shape)
    if (d.is_symbolic()) return false;
  return true;
}

std::vector<int64_t> static_dims(const Shape& shape) {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  for (const Dim& d : shape) {
    if (d.is_symbolic())
      throw Error(ErrorKind::shape, "dimension '" + d.name() + "' of " + shape_to_string(shape) +
                                        " is symbolic where a static size is needed");
    dims.push_back(d.size());
  }
  return dims;
}

Shape shape_from_dims(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

int64_t numel_of(const std::vector<int64_t>& dims) { return checked_numel(dims); }

std::string Device::to_string() const {
  return std::string(kind == DeviceKind::cpu ? "cpu" : "accelerator") + ":" + std::to_string(id);
}

std::string TensorLayout::to_string() const {
  return std::string(dtype_name(dtype)) + " " + shape_to_string(shape) + " on " + device.to_string();
}

} // namespace kiln
