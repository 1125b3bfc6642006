#include "jit/tier/epilogue.hpp"

namespace kiln::jit::tier {

namespace {

using dnnl_ops::Activation;
using dnnl_ops::PostOp;

std::optional<float> scalar_constant(const GraphRewriter& rw, ir::ValueId v) {
  const ir::Op* def = rw.producer(v);
  if (!def || def->kind != ir::OpKind::constant || rw.dtype(v) != DType::f32) return std::nullopt;
  const Tensor& value = ir::params_of<ir::ConstantParams>(*def).value;
  if (value.numel() != 1) return std::nullopt;
  return float(value.item_as_double());
}

// The post-op of one of the activations absorb() takes.
Activation activation_of(const ir::Op& op) {
  if (op.kind == ir::OpKind::relu) return Activation::relu;
  if (op.kind == ir::OpKind::tanh) return Activation::tanh;
  if (op.kind == ir::OpKind::sigmoid) return Activation::sigmoid;
  if (op.kind == ir::OpKind::silu) return Activation::silu;
  return ir::params_of<ir::GeluParams>(op).form == ir::GeluForm::tanh ? Activation::gelu_tanh : Activation::gelu_erf;
}

// The other operand of a binary op on `current`, when it is a distinct f32 value, and whether
// `current` is the op's first operand.
std::optional<std::pair<ir::ValueId, bool>> other_operand(const GraphRewriter& rw, const ir::Op& op,
                                                          ir::ValueId current) {
  if (op.operands.size() != 2 || op.operands[0] == op.operands[1]) return std::nullopt;
  const auto other = op.operands[0] == current ? std::pair{op.operands[1], true} : std::pair{op.operands[0], false};
  if (rw.dtype(other.first) != DType::f32) return std::nullopt;
  return other;
}

// A bias row first (when allowed), else a residual of the result's dims.
bool absorb_add(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool bias_allowed, Epilogue& epilogue) {
  const auto other = other_operand(rw, op, current);
  if (!other) return false;
  const std::vector<int64_t> current_dims = rw.dims(current);
  const std::vector<int64_t> other_dims = rw.dims(other->first);
  const int64_t n = current_dims.back();
  if (bias_allowed && !epilogue.bias && epilogue.post_ops.empty() && !other_dims.empty() && other_dims.back() == n &&
      numel_of(other_dims) == n) {
    epilogue.bias = other->first;
    return true;
  }
  if (other_dims != current_dims) return false;
  epilogue.residuals.push_back(other->first);
  epilogue.post_ops.push_back(PostOp::add_residual());
  return true;
}

// A product or quotient by a scalar constant (the result divided, never the divisor).
bool absorb_scale(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, Epilogue& epilogue) {
  const auto other = other_operand(rw, op, current);
  if (!other) return false;
  const std::optional<float> factor = scalar_constant(rw, other->first);
  if (!factor) return false;
  if (op.kind == ir::OpKind::mul) {
    epilogue.post_ops.push_back(PostOp::linear(*factor, 0.0f));
    return true;
  }
  if (!other->second) return false;
  epilogue.post_ops.push_back(PostOp::linear(1.0f / *factor, 0.0f));
  return true;
}

// clamp(current, lo, hi) with scalar constant bounds: oneDNN's clip.
bool absorb_clamp(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, Epilogue& epilogue) {
  const std::optional<float> lo = scalar_constant(rw, op.operands[1]), hi = scalar_constant(rw, op.operands[2]);
  if (op.operands[0] != current || !lo || !hi) return false;
  epilogue.post_ops.push_back(PostOp::clip(*lo, *hi));
  return true;
}

// Folds one more op into the epilogue; false when it does not fit. The switch names every OpKind,
// so -Wswitch asks whether a new op can be a post-op.
bool absorb(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool bias_allowed, Epilogue& epilogue) {
  if (op.results.size() != 1 || rw.dims(op.results[0]) != rw.dims(current) || !is_f32(rw, op.results)) return false;
  using ir::OpKind;
  switch (op.kind) {
  case OpKind::relu:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::silu:
  case OpKind::gelu: epilogue.post_ops.push_back(PostOp::apply(activation_of(op))); return true;
  case OpKind::add: return absorb_add(rw, op, current, bias_allowed, epilogue);
  case OpKind::mul:
  case OpKind::div: return absorb_scale(rw, op, current, epilogue);
  case OpKind::clamp: return absorb_clamp(rw, op, current, epilogue);
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos:
  case OpKind::sub:
  case OpKind::pow:
  case OpKind::maximum:
  case OpKind::minimum:
  case OpKind::compare:
  case OpKind::where:
  case OpKind::cast:
  case OpKind::reduce_sum:
  case OpKind::reduce_mean:
  case OpKind::reduce_max:
  case OpKind::reduce_min:
  case OpKind::argmax:
  case OpKind::softmax:
  case OpKind::log_softmax:
  case OpKind::layer_norm:
  case OpKind::rms_norm:
  case OpKind::batch_norm:
  case OpKind::matmul:
  case OpKind::conv2d:
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d:
  case OpKind::reshape:
  case OpKind::transpose:
  case OpKind::broadcast_to:
  case OpKind::concat:
  case OpKind::split:
  case OpKind::slice:
  case OpKind::squeeze:
  case OpKind::unsqueeze:
  case OpKind::gather:
  case OpKind::pad:
  case OpKind::constant:
  case OpKind::constant_external:
  case OpKind::full:
  case OpKind::arange:
  case OpKind::buffer_store:
  case OpKind::call:
  case OpKind::custom: return false;
  }
  return false;
}

} // namespace

bool is_f32(const GraphRewriter& rw, std::span<const ir::ValueId> values) {
  for (ir::ValueId v : values)
    if (rw.dtype(v) != DType::f32) return false;
  return true;
}

std::optional<Tensor> constant_tensor(const GraphRewriter& rw, ir::ValueId v) {
  const ir::Op* def = rw.producer(v);
  if (!def || rw.dtype(v) != DType::f32) return std::nullopt;
  if (def->kind == ir::OpKind::constant) return ir::params_of<ir::ConstantParams>(*def).value;
  if (def->kind != ir::OpKind::constant_external) return std::nullopt;
  auto found = rw.weights().find(ir::params_of<ir::ExternalParams>(*def).name);
  if (found == rw.weights().end()) return std::nullopt;
  return found->second;
}

std::string constant_name(const GraphRewriter& rw, ir::ValueId v) {
  const ir::Op* def = rw.producer(v);
  return def->kind == ir::OpKind::constant_external ? ir::params_of<ir::ExternalParams>(*def).name
                                                    : "%" + std::to_string(v);
}

dnnl_ops::ConstantWeight constant_weight(const GraphRewriter& rw, ir::ValueId v, const Tensor& tensor) {
  dnnl_ops::ConstantWeight weight{tensor.data<float>(), constant_name(rw, v), rw.weights().forms()};
  const ir::Op* def = rw.producer(v);
  if (def->kind == ir::OpKind::constant_external) weight.key = rw.weights().key(def->attrs.get_string("name"));
  return weight;
}

Epilogue collect_epilogue(const GraphRewriter& rw, ir::ValueId start, bool bias_allowed) {
  Epilogue epilogue;
  epilogue.result = start;
  while (auto user = rw.single_user(epilogue.result)) {
    const ir::Op& op = rw.op(*user);
    if (!rw.is_open(*user) || !absorb(rw, op, epilogue.result, bias_allowed, epilogue)) break;
    epilogue.ops.push_back(*user);
    epilogue.result = op.results[0];
  }
  return epilogue;
}

void take_epilogue(GraphRewriter& rw, const Epilogue& epilogue, std::string_view implementation, ir::OpId head) {
  for (ir::OpId id : epilogue.ops)
    rw.take(id, implementation, "fused into op " + std::to_string(head));
}

} // namespace kiln::jit::tier
