#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln {

// One dimension: a static size (>= 0) or a symbolic name matching [A-Za-z_]\w*.
// The same name in two places means the same size.
class Dim {
public:
  Dim(int64_t size);                    // NOLINT: implicit so {"batch", 2} reads naturally
  Dim(int size) : Dim(int64_t{size}) {} // NOLINT
  Dim(const char* name);                // NOLINT
  Dim(std::string name);                // NOLINT
  static Dim symbolic(std::string name) { return Dim(std::move(name)); }

  bool is_static() const { return name_.empty(); }
  bool is_symbolic() const { return !name_.empty(); }
  int64_t size() const { return size_; } // meaningful when static
  const std::string& name() const { return name_; }
  std::string to_string() const;

  friend bool operator==(const Dim& a, const Dim& b) { return a.size_ == b.size_ && a.name_ == b.name_; }

private:
  int64_t size_ = 0;
  std::string name_;
};

bool is_valid_symbolic_name(const std::string& name);

using Shape = std::vector<Dim>;

// "[batch, 2]"
std::string shape_to_string(const Shape& shape);
bool shape_is_static(const Shape& shape);
// Static sizes of a fully static shape; throws kiln::Error(shape) naming the symbolic dim otherwise.
std::vector<int64_t> static_dims(const Shape& shape);
Shape shape_from_dims(const std::vector<int64_t>& dims);
// The element count; throws kiln::Error(shape) naming the dims when one is negative or the count
// overflows int64.
int64_t numel_of(const std::vector<int64_t>& dims);

} // namespace kiln
