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

std::optional<Activation> activation_of(const ir::Op& op) {
  switch (op.kind) {
  case ir::OpKind::relu: return Activation::relu;
  case ir::OpKind::tanh: return Activation::tanh;
  case ir::OpKind::sigmoid: return Activation::sigmoid;
  case ir::OpKind::silu: return Activation::silu;
  case ir::OpKind::gelu:
    return ir::params_of<ir::GeluParams>(op).form == ir::GeluForm::tanh ? Activation::gelu_tanh : Activation::gelu_erf;
  default: return std::nullopt;
  }
}

// The other operand of a binary op on `current`, and whether `current` is its first operand.
std::pair<ir::ValueId, bool> other_operand(const ir::Op& op, ir::ValueId current) {
  return op.operands[0] == current ? std::pair{op.operands[1], true} : std::pair{op.operands[0], false};
}

// Folds one more op into the epilogue; false when it does not fit.
bool absorb(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool bias_allowed, Epilogue& epilogue) {
  if (op.results.size() != 1 || rw.dims(op.results[0]) != rw.dims(current) || !is_f32(rw, op.results)) return false;
  if (auto activation = activation_of(op)) {
    epilogue.post_ops.push_back(PostOp::apply(*activation));
    return true;
  }
  if (op.kind == ir::OpKind::clamp) {
    const auto lo = scalar_constant(rw, op.operands[1]), hi = scalar_constant(rw, op.operands[2]);
    if (op.operands[0] != current || !lo || !hi) return false;
    epilogue.post_ops.push_back(PostOp::clip(*lo, *hi));
    return true;
  }
  if (op.operands.size() != 2 || op.operands[0] == op.operands[1]) return false;
  const auto [other, current_first] = other_operand(op, current);
  if (rw.dtype(other) != DType::f32) return false;
  const std::vector<int64_t> current_dims = rw.dims(current);
  const std::vector<int64_t> other_dims = rw.dims(other);
  const int64_t n = current_dims.back();
  switch (op.kind) {
  case ir::OpKind::add:
    if (bias_allowed && !epilogue.bias && epilogue.post_ops.empty() && !other_dims.empty() && other_dims.back() == n &&
        numel_of(other_dims) == n) {
      epilogue.bias = other;
      return true;
    }
    if (other_dims != current_dims) return false;
    epilogue.residuals.push_back(other);
    epilogue.post_ops.push_back(PostOp::add_residual());
    return true;
  case ir::OpKind::mul:
    if (auto factor = scalar_constant(rw, other)) {
      epilogue.post_ops.push_back(PostOp::linear(*factor, 0.0f));
      return true;
    }
    return false;
  case ir::OpKind::div:
    if (auto divisor = scalar_constant(rw, other); divisor && current_first) {
      epilogue.post_ops.push_back(PostOp::linear(1.0f / *divisor, 0.0f));
      return true;
    }
    return false;
  default: return false;
  }
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
