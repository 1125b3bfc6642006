#pragma once
#include <cstdint>
#include <kiln/tensor.hpp>
#include <string>
#include <vector>

namespace kiln::nn::detail {

// PyTorch's range for Linear and Conv2d weights and biases, ±1/sqrt(fan_in), from a fixed seed:
// deterministic placeholders until real weights are loaded.
Tensor uniform_fan_in(const std::vector<int64_t>& dims, int64_t fan_in, uint64_t seed);

// kiln::Error(spec) "<layer>: <what> must be positive, got <value>" unless value > 0.
void require_positive(const std::string& layer, const std::string& what, int64_t value);

} // namespace kiln::nn::detail
