#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// f32 softmax (or log_softmax) of a dense row-major tensor along one axis.
struct SoftmaxParams {
  std::vector<int64_t> dims{};
  int64_t axis = 0; // in [0, rank), as the graph decodes it
  bool log = false; // log_softmax
};

// A oneDNN softmax created once; execute only binds pointers and may run on several threads at once.
class SoftmaxPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const SoftmaxParams& params);
  // Throws kiln::Error(unsupported) with refuse()'s reason.
  explicit SoftmaxPrimitive(const SoftmaxParams& params);
  ~SoftmaxPrimitive();
  SoftmaxPrimitive(SoftmaxPrimitive&&) noexcept;
  SoftmaxPrimitive& operator=(SoftmaxPrimitive&&) noexcept;

  // in and out have params.dims; they may be the same buffer.
  // scratch: scratch_bytes() of working memory (scratch.hpp); empty, execute allocates it.
  void execute(const float* in, float* out, std::span<std::byte> scratch = {}) const;
  size_t scratch_bytes() const;
  std::string implementation() const;

private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

} // namespace kiln::jitc::dnnl_ops
