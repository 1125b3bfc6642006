#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

LayerNorm::LayerNorm(int64_t normalized_shape, double eps, bool elementwise_affine, bool bias) : eps_(eps) {
  detail::require_positive("LayerNorm", "normalized_shape", normalized_shape);
  if (!elementwise_affine) return;
  register_parameter("weight", Tensor::ones({normalized_shape}));
  if (bias) register_parameter("bias", Tensor::zeros({normalized_shape}));
}

Tensor LayerNorm::forward(const Tensor& input) {
  return F::layer_norm(input, optional_weight_for(input, "weight"), optional_weight_for(input, "bias"), eps_);
}

} // namespace kiln::nn
