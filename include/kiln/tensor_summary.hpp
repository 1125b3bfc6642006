#pragma once
#include <cstdint>
#include <iosfwd>
#include <kiln/tensor.hpp>
#include <string>
#include <vector>

// Looking at a tensor's values: a statistical summary and a numpy-like printed form. Part of what a
// tensor is (src/core), so it includes nothing of the layers above; kiln/debug.hpp includes it.
namespace kiln::debug {

// How many leading values a summary keeps.
inline constexpr size_t kSummaryValues = 6;

// Statistics of a concrete tensor of any dtype. min, max, mean and std (population) are over the
// finite values only, so one NaN or Inf does not hide the rest; they are NaN when there are none.
// Integer and bool tensors are summarised as their values converted to double (bool: 0 and 1).
struct TensorSummary {
  std::vector<int64_t> dims;
  DType dtype = DType::f32;
  int64_t numel = 0;
  int64_t finite = 0; // the values min, max, mean and std describe
  double min = 0;
  double max = 0;
  double mean = 0;
  double std = 0;
  int64_t nan = 0;
  int64_t pos_inf = 0;
  int64_t neg_inf = 0;
  std::vector<double> first_values; // up to kSummaryValues, in C order
};

// Throws kiln::Error(spec) for a symbolic tensor (a value of a graph being traced has no values
// yet: summarise what the compiled call returns) and for an undefined one.
TensorSummary summary(const Tensor& tensor);

// "f32 [2, 3]: min -1.5 max 4 mean 0.875 std 1.98; 1 NaN, 0 +inf, 0 -inf; [0.5, -1.5, nan, 4, 0, 1]"
std::string to_string(const TensorSummary& summary);
std::ostream& operator<<(std::ostream& out, const TensorSummary& summary);

} // namespace kiln::debug

namespace kiln {

// numpy's short form on one line: "tensor([[0.5, -1.5, nan], [4, 0, 1]], f32)". Floats with up to 8
// significant digits, integers without decimals, bool as True/False; above 1000 values each dim
// longer than 6 shows its first and last 3 around "...". A symbolic tensor prints its layout:
// "tensor(<symbolic f32 [batch, 2]>)". Declared here rather than in tensor.hpp so that the header
// every file includes stays free of formatting; ADL finds it wherever this header is included.
std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

} // namespace kiln
