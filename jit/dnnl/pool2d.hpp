#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// max: padding never wins; avg_include_pad divides by KH * KW; avg_exclude_pad by the count of
// input elements under the window (kiln.avg_pool2d's count_include_pad false).
enum class PoolKind { max, avg_include_pad, avg_exclude_pad };

// f32 2-D pooling of an NCHW tensor with symmetric padding, as kiln.max_pool2d / avg_pool2d define it.
struct Pool2dParams {
  std::vector<int64_t> input_dims{}; // [N, C, H, W]
  PoolKind kind = PoolKind::max;
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
};

// [N, C, HO, WO] with HO = (H + 2 ph - KH) / sh + 1 (floor); meaningful for params refuse() accepts.
std::vector<int64_t> pool2d_output_dims(const Pool2dParams& params);

// A oneDNN pooling created once; execute only binds pointers and may run on several threads at once.
class Pool2dPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const Pool2dParams& params);
  // Throws kiln::Error(unsupported) with refuse()'s reason.
  explicit Pool2dPrimitive(const Pool2dParams& params);
  ~Pool2dPrimitive();
  Pool2dPrimitive(Pool2dPrimitive&&) noexcept;
  Pool2dPrimitive& operator=(Pool2dPrimitive&&) noexcept;

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
