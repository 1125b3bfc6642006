#include <cmath>
#include <kiln/tensor.hpp>

namespace kiln {

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  if (!a.defined() || !b.defined() || !a.is_concrete() || !b.is_concrete())
    throw Error(ErrorKind::spec, "allclose: both tensors must be concrete (not undefined or being traced)");
  if (a.dims() != b.dims())
    throw Error(ErrorKind::shape,
                "allclose: shapes " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()) + " differ");
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.item_as_double(i), y = b.item_as_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (equal_nan && std::isnan(x) && std::isnan(y)) continue;
      return false;
    }
    if (x == y) continue;                             // equal infinities too
    if (std::isinf(x) || std::isinf(y)) return false; // an infinity is close only to itself
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y))) return false;
  }
  return true;
}

} // namespace kiln
