#include "nn/init.hpp"
#include <algorithm>
#include <kiln/nn.hpp>

namespace kiln::nn {

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine, bool bias)
    : normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (normalized_shape_.empty()) throw Error(ErrorKind::spec, "LayerNorm: normalized_shape needs at least one size");
  for (int64_t size : normalized_shape_)
    detail::require_positive("LayerNorm", "each size of normalized_shape", size);
  if (!elementwise_affine) return;
  register_parameter("weight", Tensor::ones(normalized_shape_));
  if (bias) register_parameter("bias", Tensor::zeros(normalized_shape_));
}

LayerNorm::LayerNorm(int64_t normalized_shape, double eps, bool elementwise_affine, bool bias)
    : LayerNorm(std::vector<int64_t>{normalized_shape}, eps, elementwise_affine, bias) {}

Tensor LayerNorm::forward(const Tensor& input) {
  Tensor weight = optional_weight_for(input, "weight"), bias = optional_weight_for(input, "bias");
  if (normalized_shape_.size() == 1) return F::layer_norm(input, weight, bias, eps_);
  // F::layer_norm normalises one axis: the trailing axes become one, and come back afterwards.
  const Shape& shape = input.shape();
  const size_t kept = shape.size() - std::min(shape.size(), normalized_shape_.size());
  if (Shape(shape.begin() + kept, shape.end()) != shape_from_dims(normalized_shape_))
    throw Error(ErrorKind::shape, "LayerNorm (" + describe() + "): input " + shape_to_string(shape) +
                                      " does not end in normalized_shape " +
                                      shape_to_string(shape_from_dims(normalized_shape_)));
  const int64_t width = numel_of(normalized_shape_);
  Shape flat(shape.begin(), shape.begin() + kept);
  flat.push_back(width);
  if (weight.defined()) weight = weight.reshape({width});
  if (bias.defined()) bias = bias.reshape({width});
  return F::layer_norm(input.reshape(flat), weight, bias, eps_).reshape(shape);
}

} // namespace kiln::nn
