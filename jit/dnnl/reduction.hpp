#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

enum class ReduceKind { sum, mean, max, min };

// f32 reduction of a dense row-major tensor over axes, as kiln.reduce_sum/mean/max/min define it.
struct ReductionParams {
  std::vector<int64_t> dims{};
  ReduceKind kind = ReduceKind::sum;
  std::vector<int64_t> axes{}; // empty: every axis; each in [0, rank), as the graph decodes them
  bool keepdims = false;
};

// The result dims: reduced axes become 1 (keepdims) or disappear; meaningful for params refuse()
// accepts. Either way the result holds the same values in the same order.
std::vector<int64_t> reduction_output_dims(const ReductionParams& params);

// A oneDNN reduction created once; execute only binds pointers and may run on several threads at once.
class ReductionPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const ReductionParams& params);
  // Throws kiln::Error(unsupported) with refuse()'s reason.
  explicit ReductionPrimitive(const ReductionParams& params);
  ~ReductionPrimitive();
  ReductionPrimitive(ReductionPrimitive&&) noexcept;
  ReductionPrimitive& operator=(ReductionPrimitive&&) noexcept;

  // scratch: scratch_bytes() of working memory (scratch.hpp); empty, execute allocates it.
  void execute(const float* in, float* out, std::span<std::byte> scratch = {}) const;
  size_t scratch_bytes() const;
  const std::vector<int64_t>& output_dims() const;
  std::string implementation() const;

private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

} // namespace kiln::jitc::dnnl_ops
