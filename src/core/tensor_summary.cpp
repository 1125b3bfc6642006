#include "core/half.hpp"
#include "core/value_text.hpp"
#include <cmath>
#include <kiln/tensor_summary.hpp>
#include <limits>
#include <ostream>

namespace kiln::debug {

namespace {

// Calls visit(double) for every value, in C order, converting once per dtype rather than per value.
template <class T, class Visit, class ToDouble>
void visit_as(const Tensor& tensor, const Visit& visit, const ToDouble& to_double) {
  const T* data = static_cast<const T*>(tensor.raw_data());
  for (int64_t i = 0, n = tensor.numel(); i < n; ++i)
    visit(to_double(data[i]));
}

template <class Visit> void visit_values(const Tensor& tensor, const Visit& visit) {
  const auto widen = [](auto x) { return double(x); };
  switch (tensor.dtype()) {
  case DType::f32: return visit_as<float>(tensor, visit, widen);
  case DType::f64: return visit_as<double>(tensor, visit, widen);
  case DType::f16: return visit_as<uint16_t>(tensor, visit, [](uint16_t h) { return double(f16_to_float(h)); });
  case DType::bf16: return visit_as<uint16_t>(tensor, visit, [](uint16_t h) { return double(bf16_to_float(h)); });
  case DType::i8: return visit_as<int8_t>(tensor, visit, widen);
  case DType::i32: return visit_as<int32_t>(tensor, visit, widen);
  case DType::i64: return visit_as<int64_t>(tensor, visit, widen);
  case DType::u8: return visit_as<uint8_t>(tensor, visit, widen);
  case DType::boolean: return visit_as<bool>(tensor, visit, widen);
  }
}

void require_values(const Tensor& tensor) {
  if (!tensor.defined()) throw Error(ErrorKind::spec, "debug::summary: the tensor is undefined");
  if (tensor.is_symbolic())
    throw Error(ErrorKind::spec, "debug::summary: the tensor is symbolic (" + tensor.layout().to_string() +
                                     ", a value of the graph being traced) and has no values; summarise "
                                     "what the compiled call returns");
}

std::string count_text(int64_t count, const char* what) { return std::to_string(count) + " " + what; }

} // namespace

TensorSummary summary(const Tensor& tensor) {
  require_values(tensor);
  TensorSummary s;
  s.dims = tensor.dims();
  s.dtype = tensor.dtype();
  s.numel = tensor.numel();
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double m2 = 0; // Welford: the sum of squared deviations from the running mean
  visit_values(tensor, [&](double x) {
    if (s.first_values.size() < kSummaryValues) s.first_values.push_back(x);
    if (std::isnan(x)) return void(++s.nan);
    if (std::isinf(x)) return void(++(x > 0 ? s.pos_inf : s.neg_inf));
    ++s.finite;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    const double delta = x - s.mean;
    s.mean += delta / double(s.finite);
    m2 += delta * (x - s.mean);
  });
  if (s.finite == 0)
    s.min = s.max = s.mean = s.std = std::numeric_limits<double>::quiet_NaN();
  else
    s.std = std::sqrt(m2 / double(s.finite));
  return s;
}

std::string to_string(const TensorSummary& s) {
  std::string text = std::string(dtype_name(s.dtype)) + " " + shape_to_string(shape_from_dims(s.dims)) + ": ";
  if (s.numel == 0) return text + "empty";
  if (s.finite == 0)
    text += "no finite values";
  else
    text += "min " + value_text(s.min, s.dtype) + " max " + value_text(s.max, s.dtype) + " mean " +
            float_text(s.mean, 3) + " std " + float_text(s.std, 3);
  if (dtype_is_float(s.dtype))
    text +=
        "; " + count_text(s.nan, "NaN") + ", " + count_text(s.pos_inf, "+inf") + ", " + count_text(s.neg_inf, "-inf");
  text += "; [";
  for (size_t i = 0; i < s.first_values.size(); ++i)
    text += (i ? ", " : "") + value_text(s.first_values[i], s.dtype);
  return text + (int64_t(s.first_values.size()) < s.numel ? ", ...]" : "]");
}

std::ostream& operator<<(std::ostream& out, const TensorSummary& summary) { return out << to_string(summary); }

} // namespace kiln::debug
