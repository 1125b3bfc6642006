#include "ir/passes/dead_code_elimination.hpp"
#include "ir/passes/function_rebuilder.hpp"
#include "ir/passes/side_effects.hpp"
#include <set>

namespace kiln::ir {

namespace {

// Walks the ops backwards: an op is needed when it has effects or a needed op uses a result.
std::vector<bool> needed_ops(const Function& fn, const Module* module) {
  std::vector<bool> live_value(fn.values.size(), false);
  for (ValueId v : fn.outputs)
    live_value.at(v) = true;
  std::vector<bool> needed(fn.ops.size(), false);
  for (size_t i = fn.ops.size(); i-- > 0;) {
    const Op& op = fn.ops[i];
    bool used = false;
    for (ValueId r : op.results)
      used = used || live_value[r];
    if (!used && !has_side_effects(op, module)) continue;
    needed[i] = true;
    for (ValueId v : op.operands)
      live_value.at(v) = true;
  }
  return needed;
}

std::set<std::string> reachable_functions(const Module& module) {
  std::set<std::string> reached;
  std::vector<const Function*> pending;
  for (size_t i = 0; i < module.functions.size(); ++i)
    if (i == 0 || !module.functions[i].is_private) pending.push_back(&module.functions[i]);
  while (!pending.empty()) {
    const Function* fn = pending.back();
    pending.pop_back();
    if (!reached.insert(fn->name).second) continue;
    for (const Op& op : fn->ops) {
      if (op.kind != OpKind::call) continue;
      if (const Function* callee = module.find(params_of<CallParams>(op).callee)) pending.push_back(callee);
    }
  }
  return reached;
}

} // namespace

Function dead_code_elimination(const Function& fn, const Module* module) {
  std::vector<bool> needed = needed_ops(fn, module);
  FunctionRebuilder rebuilder(fn);
  for (size_t i = 0; i < fn.ops.size(); ++i)
    if (needed[i]) rebuilder.copy(fn.ops[i]);
  return rebuilder.finish();
}

Module dead_code_elimination(const Module& module) {
  Module pruned{module.name, {}};
  for (const Function& fn : module.functions)
    pruned.functions.push_back(dead_code_elimination(fn, &module));
  std::set<std::string> reached = reachable_functions(pruned);
  Module out{module.name, {}};
  for (Function& fn : pruned.functions)
    if (reached.count(fn.name)) out.functions.push_back(std::move(fn));
  return out;
}

} // namespace kiln::ir
