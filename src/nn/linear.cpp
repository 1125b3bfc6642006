#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {
constexpr uint64_t kWeightSeed = 1, kBiasSeed = 2;
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias) {
  detail::require_positive("Linear", "in_features", in_features);
  detail::require_positive("Linear", "out_features", out_features);
  register_parameter("weight", detail::uniform_fan_in({out_features, in_features}, in_features, kWeightSeed));
  if (bias) register_parameter("bias", detail::uniform_fan_in({out_features}, in_features, kBiasSeed));
}

Tensor Linear::forward(const Tensor& input) {
  return F::linear(input, weight_for(input, "weight"), optional_weight_for(input, "bias"));
}

} // namespace kiln::nn
