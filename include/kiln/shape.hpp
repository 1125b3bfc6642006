#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln {

class Dim;
namespace dim_expr {
class Poly;
Dim dim_of(const Poly& p);
} // namespace dim_expr

// One dimension: a static size (>= 0), or symbolic: a name matching [A-Za-z_]\w* or an expression
// over names and integers with + - * and / (floor division by a positive integer): `batch*6`,
// `seq-1`, `(seq+1)/2`. Expressions are kept in a canonical form, so equal ones compare equal and
// print alike; one that simplifies to a number is static. The same name in two places means the
// same size.
class Dim {
public:
  Dim(int64_t size);                    // NOLINT: implicit so {"batch", 2} reads naturally
  Dim(int size) : Dim(int64_t{size}) {} // NOLINT
  Dim(const char* text);                // NOLINT: a name or an expression, as Dim(std::string)
  Dim(std::string text);                // NOLINT: throws kiln::Error(spec) naming a malformed one
  static Dim symbolic(std::string name) { return Dim(std::move(name)); }

  bool is_static() const { return name_.empty(); }
  bool is_symbolic() const { return !name_.empty(); }
  // A plain name (batch), not an expression (batch*6).
  bool is_symbol() const { return is_symbolic() && !expression_; }
  int64_t size() const { return size_; } // meaningful when static
  // The name or the canonical expression text, when symbolic.
  const std::string& name() const { return name_; }
  std::string to_string() const;

  friend bool operator==(const Dim& a, const Dim& b) { return a.size_ == b.size_ && a.name_ == b.name_; }

private:
  friend Dim dim_expr::dim_of(const dim_expr::Poly& p);
  int64_t size_ = 0;
  std::string name_;
  bool expression_ = false;
};

// Dim arithmetic, as PyTorch code computes sizes (x.size(1) - 1): the result is static when both
// are, an expression otherwise. Division is floor division by a static size > 0. A static result
// below 0 throws kiln::Error(shape).
Dim operator+(const Dim& a, const Dim& b);
Dim operator-(const Dim& a, const Dim& b);
Dim operator*(const Dim& a, const Dim& b);
Dim operator/(const Dim& a, const Dim& b);

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
