#include "core/checked_arithmetic.hpp"
#include <kiln/error.hpp>
#include <kiln/layout.hpp>
#include <kiln/shape.hpp>

namespace kiln {

Dim::Dim(int64_t size) : size_(size) {
  // -1 is accepted as "infer this dim" by reshape; layouts reject it.
  if (size < -1) throw Error(ErrorKind::shape, "dimension size " + std::to_string(size) + " is negative");
}

Dim::Dim(const char* name) : Dim(std::string(name ? name : "")) {}

Dim::Dim(std::string name) : name_(std::move(name)) {
  if (!is_valid_symbolic_name(name_))
    throw Error(ErrorKind::spec,
                "invalid symbolic dimension name '" + name_ + "': it must match [A-Za-z_][A-Za-z0-9_]*");
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
