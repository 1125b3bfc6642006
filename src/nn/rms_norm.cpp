#include "nn/init.hpp"
#include <kiln/nn.hpp>
#include <limits>

namespace kiln::nn {

namespace {

// torch.finfo(dtype).eps, RMSNorm's eps when none is given.
double machine_epsilon(DType dtype) {
  switch (dtype) {
  case DType::f64: return std::numeric_limits<double>::epsilon();
  case DType::f16: return 0x1p-10;
  case DType::bf16: return 0x1p-7;
  case DType::f32:
  case DType::i8:
  case DType::i32:
  case DType::i64:
  case DType::u8:
  case DType::boolean: return std::numeric_limits<float>::epsilon();
  }
  return std::numeric_limits<float>::epsilon();
}

} // namespace

RMSNorm::RMSNorm(int64_t normalized_shape, std::optional<double> eps, bool elementwise_affine) : eps_(eps) {
  detail::require_positive("RMSNorm", "normalized_shape", normalized_shape);
  if (elementwise_affine) register_parameter("weight", Tensor::ones({normalized_shape}));
}

Tensor RMSNorm::forward(const Tensor& input) {
  return F::rms_norm(input, optional_weight_for(input, "weight"), eps_.value_or(machine_epsilon(input.dtype())));
}

} // namespace kiln::nn
