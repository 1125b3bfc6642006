#pragma once
#include "jit/dnnl/constant_weight.hpp"
#include "jit/tier/graph_rewriter.hpp"
#include <memory>
#include <optional>

namespace kiln::jitc::tier {

// A convolution's weight and bias with the inference batch_norm after it folded in: per output
// channel o, with s = gamma[o] / sqrt(var[o] + eps),
//   weight'[o] = weight[o] * s,   bias'[o] = (bias[o] - mean[o]) * s + beta[o]   (bias 0 when none).
struct FoldedConvWeights {
  Tensor weight; // the convolution's weight dims
  Tensor bias;   // [O]
};

struct FoldedBatchNorm {
  ir::OpId batch_norm = 0;
  std::shared_ptr<const FoldedConvWeights> folded; // a weight form of the session when all are weights
  dnnl_ops::ConstantWeight weight;                 // folded->weight as the primitive takes it
};

// The batch_norm that alone reads the convolution `conv`'s result, folded into `weight` (the
// convolution's constant weight), when its statistics, affine and the convolution's bias are f32
// constants or weights and every per-channel scale gamma / sqrt(var + eps) is finite; nullopt otherwise. The folded
// form is made once per weight versions.
std::optional<FoldedBatchNorm> fold_batch_norm(const GraphRewriter& rw, const ir::Op& conv, const Tensor& weight);

} // namespace kiln::jitc::tier
