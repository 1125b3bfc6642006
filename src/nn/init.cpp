#include "nn/init.hpp"
#include <cmath>
#include <kiln/error.hpp>

namespace kiln::nn::detail {

Tensor uniform_fan_in(const std::vector<int64_t>& dims, int64_t fan_in, uint64_t seed) {
  const float bound = fan_in > 0 ? float(1.0 / std::sqrt(double(fan_in))) : 0.0f;
  return Tensor::rand(dims, seed, -bound, bound);
}

void require_positive(const std::string& layer, const std::string& what, int64_t value) {
  if (value <= 0) throw Error(ErrorKind::spec, layer + ": " + what + " must be positive, got " + std::to_string(value));
}

void require_grouped_channels(const std::string& layer, int64_t in_channels, int64_t out_channels, int64_t groups) {
  require_positive(layer, "groups", groups);
  require_positive(layer, "in_channels", in_channels);
  require_positive(layer, "out_channels", out_channels);
  if (in_channels % groups != 0 || out_channels % groups != 0)
    throw Error(ErrorKind::spec, layer + ": in_channels " + std::to_string(in_channels) + " and out_channels " +
                                     std::to_string(out_channels) + " must be divisible by groups " +
                                     std::to_string(groups));
}

} // namespace kiln::nn::detail
