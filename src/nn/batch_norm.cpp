#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, bool affine) : eps_(eps) {
  detail::require_positive("BatchNorm2d", "num_features", num_features);
  if (affine) {
    register_parameter("weight", Tensor::ones({num_features}));
    register_parameter("bias", Tensor::zeros({num_features}));
  }
  register_buffer("running_mean", Tensor::zeros({num_features}));
  register_buffer("running_var", Tensor::ones({num_features}));
  ignore_when_loading("num_batches_tracked");
}

Tensor BatchNorm2d::forward(const Tensor& input) {
  if (input.rank() != 4)
    throw Error(ErrorKind::shape, "BatchNorm2d (" + describe() + "): expected an NCHW input of rank 4, got " +
                                      shape_to_string(input.shape()));
  return F::batch_norm(input, weight_for(input, "running_mean"), weight_for(input, "running_var"),
                       optional_weight_for(input, "weight"), optional_weight_for(input, "bias"), eps_);
}

} // namespace kiln::nn
