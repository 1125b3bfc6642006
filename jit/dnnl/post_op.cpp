#include "jit/dnnl/post_op.hpp"
#include <algorithm>

namespace kiln::jitc::dnnl_ops {

const char* activation_name(Activation activation) {
  switch (activation) {
  case Activation::relu: return "relu";
  case Activation::gelu_erf: return "gelu_erf";
  case Activation::gelu_tanh: return "gelu_tanh";
  case Activation::tanh: return "tanh";
  case Activation::sigmoid: return "sigmoid";
  case Activation::silu: return "silu";
  case Activation::hardswish: return "hardswish";
  case Activation::exp: return "exp";
  case Activation::log: return "log";
  case Activation::abs: return "abs";
  case Activation::sqrt: return "sqrt";
  case Activation::square: return "square";
  case Activation::linear: return "linear";
  case Activation::clip: return "clip";
  }
  return "unknown";
}

std::optional<Activation> repeated_activation(std::span<const PostOp> post_ops) {
  for (size_t i = 0; i < post_ops.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (post_ops[i].kind == PostOp::Kind::activation && post_ops[j].kind == PostOp::Kind::activation &&
          post_ops[i].activation == post_ops[j].activation)
        return post_ops[i].activation;
  return std::nullopt;
}

int residual_count(std::span<const PostOp> post_ops) {
  return int(std::count_if(post_ops.begin(), post_ops.end(),
                           [](const PostOp& op) { return op.kind == PostOp::Kind::add_residual; }));
}

} // namespace kiln::jitc::dnnl_ops
