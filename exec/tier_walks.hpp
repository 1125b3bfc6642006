#pragma once
#include "exec/implementation_list.hpp"
#include "exec/plan.hpp"
#include "exec/step_runner.hpp"
#include <span>
#include <vector>

namespace kiln::exec {

// A promoted tier's walks (one per op of `plan`'s graph: the tier's own list), with each op the
// tier left as a step of its own ending its walk down the interpreter's list: that walk replaces
// the tier's last verdict. `steps` are the steps the tier planned (PlanExecutable's options).
std::vector<ImplementationWalk> walks_through_interpreter(std::vector<ImplementationWalk> walks,
                                                          std::span<const PlannedStep> steps,
                                                          const ExecutionPlan& plan);

// One KILN_LOG=jit line per op of `graph`: "%3 = kiln.add at f.py:4:9: xbyak took it".
void log_walks(const ir::Function& graph, const std::vector<ImplementationWalk>& walks);

} // namespace kiln::exec
