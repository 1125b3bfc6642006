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

} // namespace kiln::nn::detail
