#include "ir/passes/canonicalize.hpp"
#include "ir/ops.hpp"
#include "ir/passes/function_rebuilder.hpp"
#include <optional>

namespace kiln::ir {

namespace {

// Whether v is a `constant` or `full` whose every element is exactly `value`, in dtype `dtype`.
bool is_splat(const FunctionRebuilder& rebuilder, ValueId v, double value, DType dtype) {
  const Op* def = rebuilder.defining_op(v);
  if (!def || rebuilder.target().type_of(v).dtype != dtype) return false;
  if (def->kind == OpKind::full) return params_of<FullParams>(*def).value == value;
  if (def->kind != OpKind::constant) return false;
  const Tensor& t = params_of<ConstantParams>(*def).value;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.item_as_double(i) != value) return false;
  return true;
}

// The operand of a neutral-element binary op that its result equals, if any.
std::optional<ValueId> neutral_operand(const FunctionRebuilder& rebuilder, OpKind kind,
                                       const std::vector<ValueId>& operands) {
  ValueId a = operands[0], b = operands[1];
  DType dtype = rebuilder.target().type_of(a).dtype;
  auto splat = [&](ValueId v, double value) { return is_splat(rebuilder, v, value, dtype); };
  // x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1.
  const bool commutes = kind == OpKind::mul || kind == OpKind::add;
  const double neutral = kind == OpKind::mul || kind == OpKind::div ? 1.0 : 0.0;
  if (splat(b, neutral)) return a;
  if (commutes && splat(a, neutral)) return b;
  return std::nullopt;
}

bool is_identity_perm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

// transpose(transpose(x, inner), outer): output axis i reads x's axis inner[outer[i]].
std::vector<int64_t> compose_perms(const std::vector<int64_t>& inner, const std::vector<int64_t>& outer) {
  std::vector<int64_t> composed;
  for (int64_t axis : outer)
    composed.push_back(inner.at(size_t(axis)));
  return composed;
}

// A value already in the target that the op's single result equals, if a rule says so.
std::optional<ValueId> forwarded_value(const FunctionRebuilder& rebuilder, const Op& op,
                                       const std::vector<ValueId>& operands) {
  if (op.results.size() != 1 || operands.empty()) return std::nullopt;
  ValueId x = operands[0];
  const Op* def = rebuilder.defining_op(x);
  const OpKind k = op.kind;
  if (k == OpKind::mul || k == OpKind::add || k == OpKind::sub || k == OpKind::div)
    return neutral_operand(rebuilder, k, operands);
  if (k == OpKind::reshape || k == OpKind::cast) return x; // kept only when the types agree
  if (k == OpKind::transpose)
    return is_identity_perm(params_of<TransposeParams>(op).perm) ? std::optional(x) : std::nullopt;
  if (k == OpKind::neg && def && def->kind == OpKind::neg) return def->operands[0];
  return std::nullopt;
}

struct Rewrite {
  OpKind kind;
  ValueId operand;
  OpParams params;
};

// One op that replaces a chain of two (the inner one stays for whatever else uses it).
std::optional<Rewrite> collapsed_chain(const FunctionRebuilder& rebuilder, const Op& op,
                                       const std::vector<ValueId>& operands) {
  if (operands.size() != 1) return std::nullopt;
  const Op* def = rebuilder.defining_op(operands[0]);
  if (!def || def->kind != op.kind) return std::nullopt;
  if (op.kind == OpKind::reshape) return Rewrite{OpKind::reshape, def->operands[0], op.params};
  if (op.kind != OpKind::transpose) return std::nullopt;
  std::vector<int64_t> perm = compose_perms(params_of<TransposeParams>(*def).perm, params_of<TransposeParams>(op).perm);
  return Rewrite{OpKind::transpose, def->operands[0], TransposeParams{std::move(perm)}};
}

// Whether the op table gives `rewrite` exactly the type the replaced op had.
bool keeps_type(const FunctionRebuilder& rebuilder, const Rewrite& rewrite, const ValueType& expected,
                const SourceLoc& loc) {
  std::vector<ValueType> in{rebuilder.target().type_of(rewrite.operand)};
  try {
    std::vector<ValueType> out = infer_op(rewrite.kind, in, encode_params(rewrite.params), loc);
    return out.size() == 1 && out[0] == expected;
  } catch (const Error&) {
    return false;
  }
}

// A collapsed chain that does nothing: a reshape back to the operand's type, an identity perm.
bool is_noop(const FunctionRebuilder& rebuilder, const Rewrite& rewrite, const ValueType& expected) {
  if (!(rebuilder.target().type_of(rewrite.operand) == expected)) return false;
  return rewrite.kind == OpKind::reshape || is_identity_perm(std::get<TransposeParams>(rewrite.params).perm);
}

bool try_forward(FunctionRebuilder& rebuilder, const Op& op, const std::vector<ValueId>& operands) {
  std::optional<ValueId> same = forwarded_value(rebuilder, op, operands);
  if (!same || !(rebuilder.target().type_of(*same) == rebuilder.source().type_of(op.results[0]))) return false;
  rebuilder.map(op.results[0], *same);
  return true;
}

bool try_collapse(FunctionRebuilder& rebuilder, const Op& op, const std::vector<ValueId>& operands) {
  std::optional<Rewrite> chain = collapsed_chain(rebuilder, op, operands);
  if (!chain) return false;
  const ValueType& type = rebuilder.source().type_of(op.results[0]);
  if (!keeps_type(rebuilder, *chain, type, op.loc)) return false;
  if (is_noop(rebuilder, *chain, type)) {
    rebuilder.map(op.results[0], chain->operand);
    return true;
  }
  OpId id = rebuilder.emit(chain->kind, {chain->operand}, {type}, encode_params(chain->params), op.loc);
  rebuilder.map(op.results[0], rebuilder.target().ops[id].results[0]);
  return true;
}

void rewrite_op(FunctionRebuilder& rebuilder, const Op& op) {
  std::vector<ValueId> operands = rebuilder.mapped_operands(op);
  if (try_forward(rebuilder, op, operands) || try_collapse(rebuilder, op, operands)) return;
  rebuilder.copy(op);
}

} // namespace

Function canonicalize(const Function& fn) {
  FunctionRebuilder rebuilder(fn);
  for (const Op& op : fn.ops)
    rewrite_op(rebuilder, op);
  return rebuilder.finish();
}

Module canonicalize(const Module& module) {
  Module out{module.name, {}};
  for (const Function& fn : module.functions)
    out.functions.push_back(canonicalize(fn));
  return out;
}

} // namespace kiln::ir
