#include "ir/passes/side_effects.hpp"
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
  switch (op.kind) {
  case OpKind::buffer_store:
  case OpKind::custom: return true;
  case OpKind::call: return !module || function_has_effects(*module, op.attrs.get_string("callee"), visiting);
  default: return false;
  }
}

} // namespace

bool has_side_effects(const Op& op, const Module* module) {
  std::set<std::string> visiting;
  return op_has_effects(op, module, visiting);
}

} // namespace kiln::ir
