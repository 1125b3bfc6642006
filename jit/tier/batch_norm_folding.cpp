#include "jit/tier/batch_norm_folding.hpp"
#include "jit/tier/epilogue.hpp"
#include <cmath>

namespace kiln::jitc::tier {

namespace {

// batch_norm(x, mean, var[, weight, bias]): the operands after x, absent ones as nullopt.
struct BatchNormOperands {
  Tensor mean, var;
  std::optional<Tensor> gamma, beta, conv_bias;
};

std::optional<BatchNormOperands> constant_operands(const GraphRewriter& rw, const ir::Op& conv, const ir::Op& bn) {
  BatchNormOperands found;
  auto take = [&](ir::ValueId v, Tensor& into) {
    std::optional<Tensor> t = constant_tensor(rw, v);
    if (t) into = *t;
    return t.has_value();
  };
  if (!take(bn.operands[1], found.mean) || !take(bn.operands[2], found.var)) return std::nullopt;
  if (bn.operands.size() > 3 && !take(bn.operands[3], found.gamma.emplace())) return std::nullopt;
  if (bn.operands.size() > 4 && !take(bn.operands[4], found.beta.emplace())) return std::nullopt;
  if (conv.operands.size() > 2 && !take(conv.operands[2], found.conv_bias.emplace())) return std::nullopt;
  return found;
}

double channel_scale(const BatchNormOperands& bn, int64_t o, double eps) {
  const double gamma = bn.gamma ? bn.gamma->data<float>()[o] : 1.0;
  return gamma / std::sqrt(double(bn.var.data<float>()[o]) + eps);
}

// A scale that is infinite or NaN (var + eps <= 0, an infinite gamma) would turn the folded weight's
// zeros and the window's sums into NaN where the batch_norm gives +-inf: such a one stays unfolded.
bool scales_finite(const BatchNormOperands& bn, int64_t channels, double eps) {
  for (int64_t o = 0; o < channels; ++o)
    if (!std::isfinite(channel_scale(bn, o, eps))) return false;
  return true;
}

FoldedConvWeights fold(const Tensor& weight, const BatchNormOperands& bn, double eps) {
  const int64_t out_channels = weight.dims()[0], per_channel = weight.numel() / out_channels;
  FoldedConvWeights folded{Tensor::empty(weight.dims(), DType::f32), Tensor::empty({out_channels}, DType::f32)};
  const float* w = weight.data<float>();
  float* w_out = folded.weight.data<float>();
  float* b_out = folded.bias.data<float>();
  for (int64_t o = 0; o < out_channels; ++o) {
    const double beta = bn.beta ? bn.beta->data<float>()[o] : 0.0;
    const double bias = bn.conv_bias ? bn.conv_bias->data<float>()[o] : 0.0;
    const double scale = channel_scale(bn, o, eps);
    for (int64_t i = o * per_channel; i < (o + 1) * per_channel; ++i)
      w_out[i] = float(w[i] * scale);
    b_out[o] = float((bias - bn.mean.data<float>()[o]) * scale + beta);
  }
  return folded;
}

// The key of the folded form when every source is a weight with a key (else the form is this
// plan's own).
std::optional<runtime::WeightFormKey> folded_key(const GraphRewriter& rw, const ir::Op& conv, const ir::Op& bn) {
  std::vector<runtime::WeightFormKey> sources;
  auto add = [&](ir::ValueId v) {
    const ir::Op* def = rw.producer(v);
    if (!def || def->kind != ir::OpKind::constant_external) return false;
    std::optional<runtime::WeightFormKey> key = rw.weights().key(ir::params_of<ir::ExternalParams>(*def).name);
    if (key) sources.push_back(std::move(*key));
    return key.has_value();
  };
  for (size_t i = 1; i < conv.operands.size(); ++i)
    if (!add(conv.operands[i])) return std::nullopt;
  for (size_t i = 1; i < bn.operands.size(); ++i)
    if (!add(bn.operands[i])) return std::nullopt;
  std::vector<const runtime::WeightFormKey*> inputs;
  for (const runtime::WeightFormKey& key : sources)
    inputs.push_back(&key);
  return runtime::derived_key("jit.batch_norm_folded", inputs,
                              "eps " + std::to_string(ir::params_of<ir::BatchNormParams>(bn).eps));
}

} // namespace

std::optional<FoldedBatchNorm> fold_batch_norm(const GraphRewriter& rw, const ir::Op& conv, const Tensor& weight) {
  const std::optional<ir::OpId> user = rw.single_user(conv.results[0]);
  if (!user || !rw.is_open(*user)) return std::nullopt;
  const ir::Op& bn = rw.op(*user);
  if (bn.kind != ir::OpKind::batch_norm || bn.operands[0] != conv.results[0] || !is_f32(rw, bn.results))
    return std::nullopt;
  const std::optional<BatchNormOperands> operands = constant_operands(rw, conv, bn);
  const double eps = ir::params_of<ir::BatchNormParams>(bn).eps;
  if (!operands || !scales_finite(*operands, weight.dims()[0], eps)) return std::nullopt;
  const std::optional<runtime::WeightFormKey> key = folded_key(rw, conv, bn);
  FoldedBatchNorm result{
      *user,
      runtime::shared_form<FoldedConvWeights>(rw.weights().forms(), key, [&] { return fold(weight, *operands, eps); }),
      {}};
  result.weight = {result.folded->weight.data<float>(), "batch_norm-folded " + constant_name(rw, conv.operands[1]),
                   rw.weights().forms(), key};
  return result;
}

} // namespace kiln::jitc::tier
