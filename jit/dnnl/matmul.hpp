#pragma once
#include "jit/dnnl/constant_weight.hpp"
#include "jit/dnnl/post_op.hpp"
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// f32 A [batch..., M, K] x B [batch..., K, N] (ranks may differ; batch dims broadcast where one is 1),
// then bias [N], then the post-ops in order.
struct MatmulParams {
  std::vector<int64_t> a_dims{};
  std::vector<int64_t> b_dims{}; // [batch..., N, K] when b_transposed
  // B is stored as [..., N, K] and used as its transpose without a copy: x @ Wᵀ of a Linear layer.
  bool b_transposed = false;
  bool has_bias = false;
  std::vector<PostOp> post_ops{};
};

// Broadcast batch dims, then [M, N]; meaningful for params that refuse() accepts.
std::vector<int64_t> matmul_output_dims(const MatmulParams& params);

// Buffers of one execution, all dense row-major f32.
struct MatmulArgs {
  const float* a = nullptr;
  const float* b = nullptr;                  // ignored when B was given as a constant weight
  const float* bias = nullptr;               // [N], when has_bias
  std::span<const float* const> residuals{}; // one per add_residual post-op, result dims
  float* out = nullptr;
};

// A oneDNN matmul created once; execute only binds pointers and may run on several threads at once.
class MatmulPrimitive {
public:
  // nullopt when the params can be lowered, else why not.
  static std::optional<std::string> refuse(const MatmulParams& params);

  // B bound at every execute. Throws kiln::Error(unsupported) with refuse()'s reason.
  explicit MatmulPrimitive(const MatmulParams& params);
  // B is a constant weight laid out as params.b_dims says, packed once into the preferred layout.
  MatmulPrimitive(const MatmulParams& params, const ConstantWeight& b);
  ~MatmulPrimitive();
  MatmulPrimitive(MatmulPrimitive&&) noexcept;
  MatmulPrimitive& operator=(MatmulPrimitive&&) noexcept;

  // scratch: scratch_bytes() of working memory (scratch.hpp); empty, execute allocates it.
  void execute(const MatmulArgs& args, std::span<std::byte> scratch = {}) const;
  size_t scratch_bytes() const;

  const std::vector<int64_t>& output_dims() const;
  // Where a constant B is read from (the caller's buffer or a packing); null when B is bound at execute.
  const void* constant_b_data() const;
  // The oneDNN implementation chosen, e.g. "gemm:jit", for KILN_LOG=jit.
  std::string implementation() const;

private:
  struct Impl;
  std::unique_ptr<const Impl> impl_;
};

} // namespace kiln::jitc::dnnl_ops
