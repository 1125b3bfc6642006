#include "jit/tier/epilogue.hpp"
#include "ir/text/value_labels.hpp"

namespace kiln::jitc::tier {

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

// The other operand of a binary op on `current`, when it is a distinct f32 value, and whether
// `current` is the op's first operand.
std::optional<std::pair<ir::ValueId, bool>> other_operand(const GraphRewriter& rw, const ir::Op& op,
                                                          ir::ValueId current) {
  if (op.operands.size() != 2 || op.operands[0] == op.operands[1]) return std::nullopt;
  const auto other = op.operands[0] == current ? std::pair{op.operands[1], true} : std::pair{op.operands[0], false};
  if (rw.dtype(other.first) != DType::f32) return std::nullopt;
  return other;
}

// The activations oneDNN applies as they are.
bool absorb_activation(const GraphRewriter&, const ir::Op& op, ir::ValueId, bool, Epilogue& epilogue) {
  const auto activation = [&op] {
    if (op.kind == ir::OpKind::relu) return Activation::relu;
    if (op.kind == ir::OpKind::tanh) return Activation::tanh;
    if (op.kind == ir::OpKind::sigmoid) return Activation::sigmoid;
    if (op.kind == ir::OpKind::silu) return Activation::silu;
    if (op.kind == ir::OpKind::hardswish) return Activation::hardswish;
    return ir::params_of<ir::GeluParams>(op).form == ir::GeluForm::tanh ? Activation::gelu_tanh : Activation::gelu_erf;
  };
  epilogue.post_ops.push_back(PostOp::apply(activation()));
  return true;
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
bool absorb_scale(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool, Epilogue& epilogue) {
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
bool absorb_clamp(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool, Epilogue& epilogue) {
  const std::optional<float> lo = scalar_constant(rw, op.operands[1]), hi = scalar_constant(rw, op.operands[2]);
  if (op.operands[0] != current || !lo || !hi) return false;
  epilogue.post_ops.push_back(PostOp::clip(*lo, *hi));
  return true;
}

// minimum(relu(x), c) with a scalar constant c >= 0, relu6 written out: the relu becomes a clip to
// [0, c]. Only after a relu, which has already made NaN 0, as the clip would.
bool absorb_minimum(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool, Epilogue& epilogue) {
  const auto other = other_operand(rw, op, current);
  if (!other || epilogue.post_ops.empty()) return false;
  const std::optional<float> bound = scalar_constant(rw, other->first);
  PostOp& last = epilogue.post_ops.back();
  if (!bound || !(*bound >= 0.0f) || last.kind != PostOp::Kind::activation || last.activation != Activation::relu)
    return false;
  last = PostOp::clip(0.0f, *bound);
  return true;
}

// hardsigmoid as x / 6 + 1/2 clipped to [0, 1]: within an ulp of torch's (x + 3) / 6, in two post-ops
// (a third linear would repeat one, repeated_activation).
bool absorb_hardsigmoid(const GraphRewriter&, const ir::Op&, ir::ValueId, bool, Epilogue& epilogue) {
  epilogue.post_ops.push_back(PostOp::linear(1.0f / 6.0f, 0.5f));
  epilogue.post_ops.push_back(PostOp::clip(0.0f, 1.0f));
  return true;
}

using Absorber = bool (*)(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool bias_allowed,
                          Epilogue& epilogue);

// The ops that can become post-ops, each with what makes it one (or finds it cannot).
const std::pair<ir::OpKind, Absorber> kAbsorbers[] = {
    {ir::OpKind::relu, absorb_activation},
    {ir::OpKind::tanh, absorb_activation},
    {ir::OpKind::sigmoid, absorb_activation},
    {ir::OpKind::silu, absorb_activation},
    {ir::OpKind::hardswish, absorb_activation},
    {ir::OpKind::gelu, absorb_activation},
    {ir::OpKind::add, absorb_add},
    {ir::OpKind::mul, absorb_scale},
    {ir::OpKind::div, absorb_scale},
    {ir::OpKind::clamp, absorb_clamp},
    {ir::OpKind::minimum, absorb_minimum},
    {ir::OpKind::hardsigmoid, absorb_hardsigmoid},
};

// Folds one more op into the epilogue; false when it does not fit.
bool absorb(const GraphRewriter& rw, const ir::Op& op, ir::ValueId current, bool bias_allowed, Epilogue& epilogue) {
  if (op.results.size() != 1 || rw.dims(op.results[0]) != rw.dims(current) || !is_f32(rw, op.results)) return false;
  for (const auto& [kind, absorber] : kAbsorbers)
    if (kind == op.kind) return absorber(rw, op, current, bias_allowed, epilogue);
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
                                                    : ir::value_name(rw.source(), v);
}

dnnl_ops::ConstantWeight constant_weight(const GraphRewriter& rw, ir::ValueId v, const Tensor& tensor) {
  dnnl_ops::ConstantWeight weight{tensor.data<float>(), constant_name(rw, v), rw.weights().forms()};
  const ir::Op* def = rw.producer(v);
  if (def->kind == ir::OpKind::constant_external)
    weight.key = rw.weights().key(ir::params_of<ir::ExternalParams>(*def).name);
  return weight;
}

Epilogue collect_epilogue(const GraphRewriter& rw, ir::ValueId start, bool bias_allowed,
                          const PostOpsCheck& stays_fast) {
  Epilogue epilogue;
  epilogue.result = start;
  while (auto user = rw.single_user(epilogue.result)) {
    const ir::Op& op = rw.op(*user);
    Epilogue longer = epilogue;
    if (!rw.is_open(*user) || !absorb(rw, op, epilogue.result, bias_allowed, longer)) break;
    if (dnnl_ops::repeated_activation(longer.post_ops)) break;
    if (stays_fast && !stays_fast(longer.post_ops)) break;
    epilogue = std::move(longer);
    epilogue.ops.push_back(*user);
    epilogue.result = op.results[0];
  }
  return epilogue;
}

void take_epilogue(GraphRewriter& rw, const Epilogue& epilogue, std::string_view implementation, ir::OpId head) {
  for (ir::OpId id : epilogue.ops)
    rw.take(id, implementation, "fused into " + ir::op_name(rw.source(), head));
}

} // namespace kiln::jitc::tier
