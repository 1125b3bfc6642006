#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {

constexpr uint64_t kWeightSeed = 5, kBiasSeed = 6;

void require_pair(const std::string& what, const std::vector<int64_t>& values) {
  if (values.size() != 2)
    throw Error(ErrorKind::spec,
                "ConvTranspose2d: " + what + " needs 2 values (height, width), got " + std::to_string(values.size()));
}

} // namespace

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
                                 ConvTranspose2dOptions options)
    : conv_{options.stride, options.padding, options.output_padding, options.groups, options.dilation} {
  require_pair("kernel_size", kernel_size);
  require_pair("stride", options.stride);
  require_pair("padding", options.padding);
  require_pair("output_padding", options.output_padding);
  require_pair("dilation", options.dilation);
  detail::require_grouped_channels("ConvTranspose2d", in_channels, out_channels, options.groups);
  detail::require_positive("ConvTranspose2d", "kernel height", kernel_size[0]);
  detail::require_positive("ConvTranspose2d", "kernel width", kernel_size[1]);
  // torch's fan_in for a transposed convolution's weight [C, O / groups, kh, kw] is its dim 1 times
  // the kernel: out_channels / groups * kh * kw.
  const int64_t fan_in = out_channels / options.groups * kernel_size[0] * kernel_size[1];
  register_parameter(
      "weight", detail::uniform_fan_in({in_channels, out_channels / options.groups, kernel_size[0], kernel_size[1]},
                                       fan_in, kWeightSeed));
  if (options.bias) register_parameter("bias", detail::uniform_fan_in({out_channels}, fan_in, kBiasSeed));
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                 ConvTranspose2dOptions options)
    : ConvTranspose2d(in_channels, out_channels, {kernel_size, kernel_size}, std::move(options)) {}

Tensor ConvTranspose2d::forward(const Tensor& input) {
  return F::conv_transpose2d(input, weight_for(input, "weight"), optional_weight_for(input, "bias"), conv_);
}

} // namespace kiln::nn
