#pragma once
#include "exec/view.hpp"
#include "jit/dnnl/constant_weight.hpp"
#include "jit/dnnl/post_op.hpp"
#include "jit/tier/graph_rewriter.hpp"
#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// What the oneDNN lowerings (matmul, convolution chains) share: operand checks and the epilogue of
// single-use ops a primitive applies in the same pass.
namespace kiln::jitc::tier {

bool is_f32(const GraphRewriter& rw, std::span<const ir::ValueId> values);
// The data of a constant or weight operand, when it is f32.
std::optional<Tensor> constant_tensor(const GraphRewriter& rw, ir::ValueId v);
// The weight's name, or "%N" for a constant, for KILN_LOG=jit.
std::string constant_name(const GraphRewriter& rw, ir::ValueId v);
// The constant or weight operand `v` (its data `tensor`) as a oneDNN primitive takes it: a weight's
// reordered copies are shared through the session's weight forms, a constant's are the primitive's.
dnnl_ops::ConstantWeight constant_weight(const GraphRewriter& rw, ir::ValueId v, const Tensor& tensor);

// The single-use ops after a matmul or convolution that its primitive applies in the same pass.
struct Epilogue {
  std::vector<ir::OpId> ops;
  std::optional<ir::ValueId> bias;
  std::vector<ir::ValueId> residuals;
  std::vector<dnnl_ops::PostOp> post_ops;
  ir::ValueId result = 0;
};

// Says whether the primitive stays fast with these post-ops (a slower implementation must not be
// taken silently where a fast one exists).
using PostOpsCheck = std::function<bool(std::span<const dnnl_ops::PostOp>)>;

// Follows the single users of `start` while each fits as a post-op (a bias add first, when allowed)
// and `stays_fast` (when given) accepts the longer list.
Epilogue collect_epilogue(const GraphRewriter& rw, ir::ValueId start, bool bias_allowed,
                          const PostOpsCheck& stays_fast = {});
// Records the epilogue's ops as fused into `head`.
void take_epilogue(GraphRewriter& rw, const Epilogue& epilogue, std::string_view implementation, ir::OpId head);

// The residual operands of a fused op (they come last), gathered without allocating on the call
// path; oneDNN wrappers refuse more than kMaxPostOps post-ops, so the array always has room.
// `offset` (in floats) points each at the slice of the batch one thread computes.
class ResidualPointers {
public:
  ResidualPointers(std::span<const exec::View> inputs, int count, int64_t offset = 0) : count_(size_t(count)) {
    for (size_t i = 0; i < count_; ++i)
      pointers_[i] = inputs[i].as<const float>() + offset;
  }
  std::span<const float* const> span() const { return {pointers_.data(), count_}; }

private:
  std::array<const float*, dnnl_ops::kMaxPostOps> pointers_{};
  size_t count_;
};

} // namespace kiln::jitc::tier
