#include "ir/passes/common_subexpression_elimination.hpp"
#include "ir/passes/function_rebuilder.hpp"
#include "ir/passes/side_effects.hpp"
#include <algorithm>
#include <map>

namespace kiln::ir {

namespace {

using OpKey = std::pair<OpKind, std::vector<ValueId>>;

bool is_commutative(OpKind kind) { return kind == OpKind::add || kind == OpKind::mul; }

OpKey key_of(OpKind kind, std::vector<ValueId> operands) {
  if (is_commutative(kind)) std::sort(operands.begin(), operands.end());
  return {kind, std::move(operands)};
}

bool same_results(const Function& source, const Op& source_op, const Function& target, const Op& target_op) {
  if (source_op.results.size() != target_op.results.size()) return false;
  for (size_t i = 0; i < source_op.results.size(); ++i)
    if (!(source.type_of(source_op.results[i]) == target.type_of(target_op.results[i]))) return false;
  return true;
}

// The earlier target op computing the same as source_op, if any.
const Op* find_equivalent(const FunctionRebuilder& rebuilder, const std::vector<OpId>& candidates,
                          const Op& source_op) {
  for (OpId id : candidates) {
    const Op& candidate = rebuilder.target().ops[id];
    if (candidate.attrs == source_op.attrs &&
        same_results(rebuilder.source(), source_op, rebuilder.target(), candidate))
      return &candidate;
  }
  return nullptr;
}

} // namespace

Function common_subexpression_elimination(const Function& fn, const Module* module) {
  FunctionRebuilder rebuilder(fn);
  std::map<OpKey, std::vector<OpId>> seen;
  for (const Op& op : fn.ops) {
    if (!is_pure(op, module)) {
      rebuilder.copy(op);
      continue;
    }
    std::vector<OpId>& candidates = seen[key_of(op.kind, rebuilder.mapped_operands(op))];
    if (const Op* equivalent = find_equivalent(rebuilder, candidates, op)) {
      for (size_t i = 0; i < op.results.size(); ++i)
        rebuilder.map(op.results[i], equivalent->results[i]);
      continue;
    }
    candidates.push_back(rebuilder.copy(op));
  }
  return rebuilder.finish();
}

Module common_subexpression_elimination(const Module& module) {
  Module out{module.name, {}};
  for (const Function& fn : module.functions)
    out.functions.push_back(common_subexpression_elimination(fn, &module));
  return out;
}

} // namespace kiln::ir
