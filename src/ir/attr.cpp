#include "ir/attr.hpp"
#include <algorithm>
#include <cstring>

namespace kiln::ir {

namespace {

bool tensors_equal(const Tensor& a, const Tensor& b) {
  if (a.same_as(b)) return true;
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const char* attr_type_name(const Attr& a) {
  static const char* names[] = {"bool", "int", "float", "string", "ints", "floats", "shape", "dtype", "tensor"};
  return names[a.value.index()];
}

} // namespace

bool attr_equal(const Attr& a, const Attr& b) {
  if (a.value.index() != b.value.index()) return false;
  if (auto* t = std::get_if<Tensor>(&a.value)) return tensors_equal(*t, std::get<Tensor>(b.value));
  if (auto* fs = std::get_if<Attr::Floats>(&a.value)) {
    const auto& other = std::get<Attr::Floats>(b.value);
    return fs->size() == other.size() && std::memcmp(fs->data(), other.data(), fs->size() * sizeof(double)) == 0;
  }
  if (auto* d = std::get_if<double>(&a.value)) {
    double e = std::get<double>(b.value);
    return std::memcmp(d, &e, sizeof e) == 0; // bitwise: NaN attributes compare equal to themselves
  }
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>)
          return false; // handled above
        else
          return x == std::get<T>(b.value);
      },
      a.value);
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, Attr>> items) {
  for (const auto& [name, value] : items)
    set(name, value);
}

void Attrs::set(const std::string& name, Attr value) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
    return;
  }
  items_.insert(it, {name, std::move(value)});
}

const Attr* Attrs::find(const std::string& name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  return it != items_.end() && it->first == name ? &it->second : nullptr;
}

template <class T> const T& Attrs::get(const std::string& name, const char* what) const {
  const Attr* a = find(name);
  if (!a) throw Error(ErrorKind::internal, "missing attribute '" + name + "'");
  const T* v = std::get_if<T>(&a->value);
  if (!v) throw Error(ErrorKind::internal, "attribute '" + name + "' is " + attr_type_name(*a) + ", expected " + what);
  return *v;
}

bool Attrs::get_bool(const std::string& n) const { return get<bool>(n, "bool"); }
int64_t Attrs::get_int(const std::string& n) const { return get<int64_t>(n, "int"); }
double Attrs::get_float(const std::string& n) const { return get<double>(n, "float"); }
const std::string& Attrs::get_string(const std::string& n) const { return get<std::string>(n, "string"); }
const Attr::Ints& Attrs::get_ints(const std::string& n) const { return get<Attr::Ints>(n, "ints"); }
const Attr::Floats& Attrs::get_floats(const std::string& n) const { return get<Attr::Floats>(n, "floats"); }
const Shape& Attrs::get_shape(const std::string& n) const { return get<Shape>(n, "shape"); }
DType Attrs::get_dtype(const std::string& n) const { return get<DType>(n, "dtype"); }
const Tensor& Attrs::get_tensor(const std::string& n) const { return get<Tensor>(n, "tensor"); }

int64_t Attrs::get_int_or(const std::string& name, int64_t fallback) const {
  return has(name) ? get_int(name) : fallback;
}
double Attrs::get_float_or(const std::string& name, double fallback) const {
  return has(name) ? get_float(name) : fallback;
}

bool operator==(const Attrs& a, const Attrs& b) {
  if (a.items_.size() != b.items_.size()) return false;
  for (size_t i = 0; i < a.items_.size(); ++i)
    if (a.items_[i].first != b.items_[i].first || !attr_equal(a.items_[i].second, b.items_[i].second)) return false;
  return true;
}

} // namespace kiln::ir
