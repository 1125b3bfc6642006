#include "exec/tier_walks.hpp"
#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include "runtime/log.hpp"

namespace kiln::exec {

std::vector<ImplementationWalk> walks_through_interpreter(std::vector<ImplementationWalk> walks,
                                                          std::span<const PlannedStep> steps,
                                                          const ExecutionPlan& plan) {
  for (size_t index = 0; index < steps.size(); ++index) {
    const ir::OpId* id = std::get_if<ir::OpId>(&steps[index]);
    if (!id) continue;
    ImplementationWalk& walk = walks.at(*id);
    walk.pop_back();
    const ImplementationWalk& interp_walk = plan.walk(index);
    walk.insert(walk.end(), interp_walk.begin(), interp_walk.end());
  }
  return walks;
}

void log_walks(const ir::Function& graph, const std::vector<ImplementationWalk>& walks) {
  for (size_t id = 0; id < graph.ops.size(); ++id) {
    const ir::Op& op = graph.ops[id];
    const std::string made = op.results.empty() ? "" : ir::op_name(graph, ir::OpId(id)) + " = ";
    runtime::log_line(runtime::LogChannel::jit, made + "kiln." + std::string(ir::op_info(op.kind).name) + " at " +
                                                    op.loc.to_string() + ": " + walk_to_string(walks[id]));
  }
}

} // namespace kiln::exec
