#include "ir/passes/default_passes.hpp"
#include "ir/passes/canonicalize.hpp"
#include "ir/passes/common_subexpression_elimination.hpp"
#include "ir/passes/dead_code_elimination.hpp"
#include "ir/passes/fold_constants.hpp"
#include "ir/text/value_labels.hpp"
#include "ir/verify.hpp"

namespace kiln::ir {

namespace {

bool values_equal(const ValueInfo& a, const ValueInfo& b) {
  return a.type == b.type && a.def_op == b.def_op && a.def_index == b.def_index;
}

bool ops_equal(const Op& a, const Op& b) {
  return a.kind == b.kind && a.operands == b.operands && a.results == b.results && a.attrs == b.attrs && a.loc == b.loc;
}

template <class T, class Eq> bool all_equal(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!eq(a[i], b[i])) return false;
  return true;
}

bool functions_equal(const Function& a, const Function& b) {
  return a.name == b.name && a.is_private == b.is_private && a.args == b.args && a.outputs == b.outputs &&
         all_equal(a.values, b.values, values_equal) && all_equal(a.ops, b.ops, ops_equal);
}

Module run_round(const Module& module, const EagerEvaluator& evaluator) {
  Module out = canonicalize(module);
  out = fold_constants(out, evaluator);
  out = common_subexpression_elimination(out);
  return dead_code_elimination(out);
}

} // namespace

bool modules_equal(const Module& a, const Module& b) {
  return a.name == b.name && all_equal(a.functions, b.functions, functions_equal);
}

Module run_default_passes(const Module& module, const EagerEvaluator& evaluator) {
  verify_module(module);
  Module current = module;
  label_values(current); // the names it prints with, for tools to name the optimised values by
  for (int round = 0; round < kMaxPassRounds; ++round) {
    Module next = run_round(current, evaluator);
    bool settled = modules_equal(next, current);
    current = std::move(next);
    if (settled) break;
  }
  verify_module(current);
  return current;
}

} // namespace kiln::ir
