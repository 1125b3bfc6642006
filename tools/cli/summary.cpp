#include "cli/summary.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace kiln::tools {

std::string summarize_tensor(const Tensor& tensor, int first_values) {
  std::ostringstream os;
  os << dtype_name(tensor.dtype()) << ' ' << shape_to_string(tensor.shape());
  const int64_t n = tensor.numel();
  if (n == 0) return os.str();
  double low = std::numeric_limits<double>::infinity(), high = -low, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = tensor.item_as_double(i);
    low = std::min(low, v);
    high = std::max(high, v);
    sum += v;
  }
  os.precision(6);
  os << "  min " << low << "  max " << high << "  mean " << sum / double(n) << "  first [";
  const int64_t shown = std::min<int64_t>(n, first_values);
  for (int64_t i = 0; i < shown; ++i)
    os << (i ? ", " : "") << tensor.item_as_double(i);
  os << (shown < n ? ", ...]" : "]");
  return os.str();
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw Error(ErrorKind::shape, "cannot compare tensors of shapes " + shape_to_string(a.shape()) + " and " +
                                      shape_to_string(b.shape()));
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double diff = std::abs(a.item_as_double(i) - b.item_as_double(i));
    if (std::isnan(diff)) return diff;
    worst = std::max(worst, diff);
  }
  return worst;
}

double median(std::vector<double> values) {
  if (values.empty()) throw Error(ErrorKind::spec, "median of no values");
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

} // namespace kiln::tools
