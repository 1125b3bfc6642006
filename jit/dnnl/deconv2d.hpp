#pragma once
#include "jit/dnnl/constant_weight.hpp"
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// f32 2-D transposed convolution as kiln.conv_transpose2d defines it (torch's conv_transpose2d):
// NCHW input, weight [C, O / groups, KH, KW], bias [O]; output_padding rows and columns added at the
// bottom and right.
struct Deconv2dParams {
  std::vector<int64_t> input_dims{};  // [N, C, H, W]
  std::vector<int64_t> weight_dims{}; // [C, O / groups, KH, KW]
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> output_padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  bool has_bias = false;
};

// [N, O, HO, WO] with HO = (H - 1) sh - 2 ph + dh (KH - 1) + oph + 1; meaningful for params refuse()
// accepts.
std::vector<int64_t> deconv2d_output_dims(const Deconv2dParams& params);

// A oneDNN deconvolution created once, its constant weight reordered once into the layout it
// prefers (ConstantWeight); input and result plain NCHW. execute only binds pointers and may run on
// several threads at once.
class Deconv2dPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const Deconv2dParams& params);
  // Throws kiln::Error(unsupported) with refuse()'s reason.
  Deconv2dPrimitive(const Deconv2dParams& params, const ConstantWeight& weight);
  ~Deconv2dPrimitive();
  Deconv2dPrimitive(Deconv2dPrimitive&&) noexcept;
  Deconv2dPrimitive& operator=(Deconv2dPrimitive&&) noexcept;

  // bias: [O] when has_bias. scratch: scratch_bytes() of working memory (scratch.hpp); empty,
  // execute allocates it.
  void execute(const float* in, const float* bias, float* out, std::span<std::byte> scratch = {}) const;
  size_t scratch_bytes() const;
  const std::vector<int64_t>& output_dims() const;
  std::string implementation() const;

private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

} // namespace kiln::jitc::dnnl_ops
