#include "ir/passes/fold_constants.hpp"
#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"
#include "ir/passes/function_rebuilder.hpp"
#include <optional>

namespace kiln::ir {

namespace {

bool results_small_and_static(const Function& fn, const Op& op) {
  for (ValueId r : op.results) {
    const Shape& shape = fn.type_of(r).shape;
    if (!shape_is_static(shape) || numel_of(static_dims(shape)) > kMaxFoldedElements) return false;
  }
  return true;
}

// The tensors of the operands when every one is defined by a constant op.
std::optional<std::vector<Tensor>> constant_operands(const FunctionRebuilder& rebuilder,
                                                     const std::vector<ValueId>& operands) {
  std::vector<Tensor> tensors;
  for (ValueId v : operands) {
    const Op* def = rebuilder.defining_op(v);
    if (!def || def->kind != OpKind::constant) return std::nullopt;
    tensors.push_back(params_of<ConstantParams>(*def).value);
  }
  return tensors;
}

std::vector<ValueType> result_types(const Function& fn, const Op& op) {
  std::vector<ValueType> types;
  for (ValueId r : op.results)
    types.push_back(fn.type_of(r));
  return types;
}

// Folding is an optimisation: when the evaluator cannot run the op here, the op stays and behaves at
// run time exactly as it would have without this pass.
std::optional<std::vector<Tensor>> evaluate(const EagerEvaluator& evaluator, const Op& op,
                                            const std::vector<Tensor>& inputs, const std::vector<ValueType>& types) {
  try {
    return evaluate_eagerly(evaluator, op.kind, op.attrs, inputs, types, op.loc);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Emits one constant per result of `op`, or returns false when the op cannot be folded.
bool try_fold(FunctionRebuilder& rebuilder, const Op& op, const EagerEvaluator& evaluator) {
  if (has_trait(op.kind, kNeverFolded) || !results_small_and_static(rebuilder.source(), op)) return false;
  std::optional<std::vector<Tensor>> inputs = constant_operands(rebuilder, rebuilder.mapped_operands(op));
  if (!inputs) return false;
  std::vector<ValueType> types = result_types(rebuilder.source(), op);
  std::optional<std::vector<Tensor>> values = evaluate(evaluator, op, *inputs, types);
  if (!values || values->size() != types.size()) return false;
  for (size_t i = 0; i < types.size(); ++i) {
    OpId id = rebuilder.emit(OpKind::constant, {}, {types[i]}, {{"value", Attr::of_tensor((*values)[i])}}, op.loc);
    rebuilder.map(op.results[i], rebuilder.target().ops[id].results[0]);
  }
  return true;
}

} // namespace

Function fold_constants(const Function& fn, const EagerEvaluator& evaluator) {
  FunctionRebuilder rebuilder(fn);
  for (const Op& op : fn.ops)
    if (!evaluator || !try_fold(rebuilder, op, evaluator)) rebuilder.copy(op);
  return rebuilder.finish();
}

Module fold_constants(const Module& module, const EagerEvaluator& evaluator) {
  Module out{module.name, {}};
  for (const Function& fn : module.functions)
    out.functions.push_back(fold_constants(fn, evaluator));
  return out;
}

} // namespace kiln::ir
