#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : num_groups_(num_groups), eps_(eps) {
  detail::require_positive("GroupNorm", "num_groups", num_groups);
  detail::require_positive("GroupNorm", "num_channels", num_channels);
  if (num_channels % num_groups != 0)
    throw Error(ErrorKind::spec, "GroupNorm: num_channels " + std::to_string(num_channels) +
                                     " must be divisible by num_groups " + std::to_string(num_groups));
  if (!affine) return;
  register_parameter("weight", Tensor::ones({num_channels}));
  register_parameter("bias", Tensor::zeros({num_channels}));
}

Tensor GroupNorm::forward(const Tensor& input) {
  return F::group_norm(input, num_groups_, optional_weight_for(input, "weight"), optional_weight_for(input, "bias"),
                       eps_);
}

InstanceNorm2d::InstanceNorm2d(int64_t num_features, double eps, bool affine) : eps_(eps) {
  detail::require_positive("InstanceNorm2d", "num_features", num_features);
  if (!affine) return;
  register_parameter("weight", Tensor::ones({num_features}));
  register_parameter("bias", Tensor::zeros({num_features}));
}

Tensor InstanceNorm2d::forward(const Tensor& input) {
  if (input.rank() != 4)
    throw Error(ErrorKind::shape,
                "InstanceNorm2d (" + describe() + "): expects an NCHW input, got " + shape_to_string(input.shape()));
  return F::instance_norm(input, optional_weight_for(input, "weight"), optional_weight_for(input, "bias"), eps_);
}

} // namespace kiln::nn
