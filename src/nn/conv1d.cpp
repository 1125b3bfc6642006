#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {

constexpr uint64_t kWeightSeed = 3, kBiasSeed = 4;

} // namespace

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv1dOptions options)
    : conv_{options.stride, options.padding, options.dilation, options.groups} {
  detail::require_positive("Conv1d", "kernel_size", kernel_size);
  detail::require_grouped_channels("Conv1d", in_channels, out_channels, options.groups);
  const int64_t fan_in = in_channels / options.groups * kernel_size;
  register_parameter(
      "weight", detail::uniform_fan_in({out_channels, in_channels / options.groups, kernel_size}, fan_in, kWeightSeed));
  if (options.bias) register_parameter("bias", detail::uniform_fan_in({out_channels}, fan_in, kBiasSeed));
}

Tensor Conv1d::forward(const Tensor& input) {
  return F::conv1d(input, weight_for(input, "weight"), optional_weight_for(input, "bias"), conv_);
}

} // namespace kiln::nn
