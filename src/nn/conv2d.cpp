#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {

constexpr uint64_t kWeightSeed = 3, kBiasSeed = 4;

void require_pair(const std::string& what, const std::vector<int64_t>& values) {
  if (values.size() != 2)
    throw Error(ErrorKind::spec,
                "Conv2d: " + what + " needs 2 values (height, width), got " + std::to_string(values.size()));
}

} // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size, Conv2dOptions options)
    : conv_{options.stride, options.padding, options.dilation, options.groups} {
  require_pair("kernel_size", kernel_size);
  require_pair("stride", options.stride);
  require_pair("padding", options.padding);
  require_pair("dilation", options.dilation);
  detail::require_grouped_channels("Conv2d", in_channels, out_channels, options.groups);
  const int64_t fan_in = in_channels / options.groups * kernel_size[0] * kernel_size[1];
  register_parameter(
      "weight", detail::uniform_fan_in({out_channels, in_channels / options.groups, kernel_size[0], kernel_size[1]},
                                       fan_in, kWeightSeed));
  if (options.bias) register_parameter("bias", detail::uniform_fan_in({out_channels}, fan_in, kBiasSeed));
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Conv2dOptions options)
    : Conv2d(in_channels, out_channels, {kernel_size, kernel_size}, std::move(options)) {}

Tensor Conv2d::forward(const Tensor& input) {
  return F::conv2d(input, weight_for(input, "weight"), optional_weight_for(input, "bias"), conv_);
}

} // namespace kiln::nn
