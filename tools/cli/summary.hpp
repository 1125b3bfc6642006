#pragma once
#include <kiln/tensor.hpp>
#include <string>
#include <vector>

namespace kiln::tools {

// "f32 [8, 10]  min -0.53  max 0.61  mean 0.012  first [0.1, -0.2, ...]" for a concrete tensor.
std::string summarize_tensor(const Tensor& tensor, int first_values = 6);

// max |a - b| over all elements (NaN when either has a NaN); throws kiln::Error(shape) when the shapes differ.
double max_abs_difference(const Tensor& a, const Tensor& b);

// The median of a non-empty list of latencies.
double median(std::vector<double> values);

} // namespace kiln::tools
