#include "ir/passes/side_effects.hpp"
#include "ir/ops.hpp"
#include <set>

namespace kiln::ir {

namespace {

bool op_has_effects(const Op& op, const Module* module, std::set<std::string>& visiting);

// `visiting` breaks call cycles: a function already on the path adds no effect of its own there.
bool function_has_effects(const Module& module, const std::string& name, std::set<std::string>& visiting) {
  const Function* fn = module.find(name);
  if (!fn) return true; // an unknown callee may do anything
  if (!visiting.insert(name).second) return false;
  bool effects = false;
  for (const Op& op : fn->ops)
    if (op_has_effects(op, &module, visiting)) {
      effects = true;
      break;
    }
  visiting.erase(name);
  return effects;
}

bool op_has_effects(const Op& op, const Module* module, std::set<std::string>& visiting) {
  if (has_trait(op.kind, kSideEffects)) return true;
  if (op.kind != OpKind::call) return false;
  return !module || function_has_effects(*module, params_of<CallParams>(op).callee, visiting);
}

} // namespace

bool has_side_effects(const Op& op, const Module* module) {
  std::set<std::string> visiting;
  return op_has_effects(op, module, visiting);
}

} // namespace kiln::ir
