#include "nn/init.hpp"
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {
constexpr uint64_t kInProjSeed = 6;
}

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool bias, bool batch_first)
    : embed_dim_(embed_dim), num_heads_(num_heads), batch_first_(batch_first) {
  detail::require_positive("MultiheadAttention", "embed_dim", embed_dim);
  detail::require_positive("MultiheadAttention", "num_heads", num_heads);
  if (embed_dim % num_heads != 0)
    throw Error(ErrorKind::spec, "MultiheadAttention: embed_dim " + std::to_string(embed_dim) +
                                     " must be divisible by num_heads " + std::to_string(num_heads));
  register_parameter("in_proj_weight", detail::uniform_fan_in({3 * embed_dim, embed_dim}, embed_dim, kInProjSeed));
  if (bias) register_parameter("in_proj_bias", Tensor::zeros({3 * embed_dim}));
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(embed_dim, embed_dim, bias));
}

void MultiheadAttention::check_input(const Tensor& x, const char* role) const {
  const Shape& shape = x.shape();
  const bool fits = shape.size() == 3 && (shape[2].is_symbolic() || shape[2].size() == embed_dim_);
  if (!fits)
    throw Error(ErrorKind::shape, "MultiheadAttention (" + describe() + "): " + role + " must be " +
                                      (batch_first_ ? "[batch, seq, " : "[seq, batch, ") + std::to_string(embed_dim_) +
                                      "], got " + shape_to_string(shape));
}

// Rows [part·E, (part+1)·E) of the packed projection: part 0 is the query's, 1 the key's, 2 the value's.
Tensor MultiheadAttention::project(const Tensor& x, int64_t part) const {
  const int64_t begin = part * embed_dim_, end = begin + embed_dim_;
  Tensor weight = F::slice(weight_for(x, "in_proj_weight"), 0, begin, end);
  Tensor bias = has_tensor("in_proj_bias") ? F::slice(weight_for(x, "in_proj_bias"), 0, begin, end) : Tensor();
  return F::linear(x, weight, bias);
}

// [batch, seq, E] -> [batch, heads, seq, head_dim]
Tensor MultiheadAttention::split_heads(const Tensor& x) const {
  const Shape& shape = x.shape();
  return x.reshape({shape[0], shape[1], num_heads_, embed_dim_ / num_heads_}).permute({0, 2, 1, 3});
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value) {
  check_input(query, "query");
  check_input(key, "key");
  check_input(value, "value");
  auto batch_major = [this](const Tensor& x) { return batch_first_ ? x : x.transpose(0, 1); };
  const Tensor q = split_heads(project(batch_major(query), 0));
  const Tensor k = split_heads(project(batch_major(key), 1));
  const Tensor v = split_heads(project(batch_major(value), 2));
  // One op, so the JIT runs it fused, blockwise, without the [seq, seq] weights of every head.
  const Tensor context = F::scaled_dot_product_attention(q, k, v).transpose(1, 2); // [batch, seq, heads, head_dim]
  const Shape& shape = context.shape();
  const Tensor output = (*out_proj_)(context.reshape({shape[0], shape[1], embed_dim_}));
  return batch_first_ ? output : output.transpose(0, 1);
}

Tensor MultiheadAttention::forward_inputs(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 3)
    throw Error(ErrorKind::spec, describe() + " takes 3 inputs (query, key, value), got " +
                                     std::to_string(inputs.size()) + " in forward_inputs");
  return forward(inputs[0], inputs[1], inputs[2]);
}

} // namespace kiln::nn
