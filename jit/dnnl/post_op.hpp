#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jitc::dnnl_ops {

// oneDNN keeps at most this many post-ops per primitive (post_ops_t::post_ops_limit in 2.6).
inline constexpr size_t kMaxPostOps = 32;

// Elementwise functions oneDNN 2.6 can apply to a matmul or conv result in the same pass.
enum class Activation {
  relu,
  gelu_erf,
  gelu_tanh,
  tanh,
  sigmoid,
  silu,
  hardswish,
  exp,
  log,
  abs,
  sqrt,
  square,
  linear,
  clip
};

const char* activation_name(Activation activation);

// One step applied to a primitive's result, in order, after the bias: an activation, or the addition
// of a residual tensor with exactly the result's dims (bound at execute, in the order of the list).
struct PostOp {
  enum class Kind { activation, add_residual };
  Kind kind = Kind::activation;
  Activation activation = Activation::relu;
  float alpha = 1.0f; // linear: y = alpha * x + beta; clip: y = min(max(x, alpha), beta)
  float beta = 0.0f;

  static PostOp apply(Activation activation) { return {Kind::activation, activation, 1.0f, 0.0f}; }
  static PostOp linear(float alpha, float beta) { return {Kind::activation, Activation::linear, alpha, beta}; }
  static PostOp clip(float lo, float hi) { return {Kind::activation, Activation::clip, lo, hi}; }
  static PostOp add_residual() { return {Kind::add_residual, Activation::relu, 1.0f, 0.0f}; }
};

// An activation that appears twice in the list. oneDNN 2.6's convolutions give every post-op of one
// eltwise algorithm the first one's alpha and beta (conv, x * 0.5, relu, x * 2 computed x / 4), so
// an epilogue stops before a repeat.
std::optional<Activation> repeated_activation(std::span<const PostOp> post_ops);

// How many residual tensors a post-op list binds at execute.
int residual_count(std::span<const PostOp> post_ops);

} // namespace kiln::jitc::dnnl_ops
