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

// The convolutions' channel checks: groups, in_channels and out_channels positive, and both channel
// counts divisible by groups, else kiln::Error(spec) naming the layer and the values.
void require_grouped_channels(const std::string& layer, int64_t in_channels, int64_t out_channels, int64_t groups);

} // namespace kiln::nn::detail
