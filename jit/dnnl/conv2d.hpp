#pragma once
#include "jit/dnnl/constant_weight.hpp"
#include "jit/dnnl/post_op.hpp"
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// f32 2-D convolution as kiln.conv2d defines it: NCHW input, OIHW weight with I = C / groups,
// symmetric padding, dilation 1 = dense; then bias [O], then the post-ops in order.
struct Conv2dParams {
  std::vector<int64_t> input_dims{};  // [N, C, H, W]
  std::vector<int64_t> weight_dims{}; // [O, C / groups, KH, KW]
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  bool has_bias = false;
  std::vector<PostOp> post_ops{};
};

// [N, O, HO, WO] with HO = (H + 2 ph - dh (KH - 1) - 1) / sh + 1 (floor); meaningful for params
// that refuse() accepts.
std::vector<int64_t> conv2d_output_dims(const Conv2dParams& params);

// Buffers of one execution, all dense row-major f32 (NCHW, OIHW).
struct Conv2dArgs {
  const float* input = nullptr;
  const float* weight = nullptr;             // ignored when the weight was given as a constant
  const float* bias = nullptr;               // [O], when has_bias
  std::span<const float* const> residuals{}; // one per add_residual post-op, result dims
  float* out = nullptr;
  // A graph of convolutions passes activations in the layout each prefers (nChw8c on AVX2)
  // instead of reordering to NCHW and back between them: input is the previous convolution's
  // output left in its layout (see reads_layout_of), and out receives output_bytes() in this one's.
  bool input_in_own_layout = false;
  bool output_in_own_layout = false;
  // The one residual is an earlier convolution's output left in its layout, which is this one's
  // (see adds_in_layout_of).
  bool residual_in_own_layout = false;
};

// A oneDNN convolution created once; input and result are plain NCHW unless a chain says otherwise
// (Conv2dArgs). execute only binds pointers and may run on several threads at once.
class Conv2dPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const Conv2dParams& params);
  // Whether a convolution with a constant weight runs a direct implementation for params (not
  // oneDNN's GEMM convolution nor its reference loop): a lowering drops a post-op that loses it.
  static bool is_direct_for(const Conv2dParams& params);

  // Weight bound at every execute. Throws kiln::Error(unsupported) with refuse()'s reason.
  explicit Conv2dPrimitive(const Conv2dParams& params);
  // The weight is a constant (OIHW), reordered once into the layout the convolution prefers.
  Conv2dPrimitive(const Conv2dParams& params, const ConstantWeight& weight);
  ~Conv2dPrimitive();
  Conv2dPrimitive(Conv2dPrimitive&&) noexcept;
  Conv2dPrimitive& operator=(Conv2dPrimitive&&) noexcept;

  // scratch: scratch_bytes() of working memory (scratch.hpp); empty, execute allocates it.
  void execute(const Conv2dArgs& args, std::span<std::byte> scratch = {}) const;
  size_t scratch_bytes() const;

  const std::vector<int64_t>& output_dims() const;
  // Whether this convolution reads the layout `previous` writes (so no reorder is needed between them).
  bool reads_layout_of(const Conv2dPrimitive& previous) const;
  // Whether this convolution adds its one residual in the layout `producer` writes.
  bool adds_in_layout_of(const Conv2dPrimitive& producer) const;
  // Size of the result in this convolution's own layout (blocked layouts pad channels).
  size_t output_bytes() const;
  // Where a constant weight is read from (the caller's buffer or a packing); null when bound at execute.
  const void* constant_weight_data() const;
  // The oneDNN implementation chosen, e.g. "jit:avx2", for KILN_LOG=jit.
  std::string implementation() const;

private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

} // namespace kiln::jitc::dnnl_ops
