#include "jit/tier/jit_executable.hpp"
#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include "jit/tier/implementation_table.hpp"
#include "jit/tier/partitioner.hpp"
#include "jit/tier/warm_up.hpp"
#include "runtime/log.hpp"

namespace kiln::jitc::tier {

namespace {

// An op the JIT tier left as a step of its own ends its walk down the interpreter's list: that
// walk replaces the JIT's last verdict.
std::vector<exec::ImplementationWalk> walks_through_both_tiers(const Partition& partition,
                                                               const exec::ExecutionPlan& plan) {
  std::vector<exec::ImplementationWalk> walks = partition.walks;
  for (size_t index = 0; index < partition.steps.size(); ++index) {
    const ir::OpId* id = std::get_if<ir::OpId>(&partition.steps[index]);
    if (!id) continue;
    exec::ImplementationWalk& walk = walks.at(*id);
    walk.pop_back();
    const exec::ImplementationWalk& interp_walk = plan.walk(index);
    walk.insert(walk.end(), interp_walk.begin(), interp_walk.end());
  }
  return walks;
}

void log_walks(const ir::Function& graph, const std::vector<exec::ImplementationWalk>& walks) {
  for (size_t id = 0; id < graph.ops.size(); ++id) {
    const ir::Op& op = graph.ops[id];
    const std::string made = op.results.empty() ? "" : ir::op_name(graph, ir::OpId(id)) + " = ";
    runtime::log_line(runtime::LogChannel::jit, made + "kiln." + std::string(ir::op_info(op.kind).name) + " at " +
                                                    op.loc.to_string() + ": " + exec::walk_to_string(walks[id]));
  }
}

} // namespace

JitBuild build_jit_executable(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                              exec::CpuIsa cpu, const exec::StepImplementations& interpreter) {
  Partition partition = partition_graph(*graph, weights, cpu);
  exec::ExecutableOptions options{"jit", partition.steps, partition.ops_per_lowering};
  auto executable = std::make_unique<exec::PlanExecutable>(graph, weights, interpreter, std::move(options));
  std::vector<exec::ImplementationWalk> walks = walks_through_both_tiers(partition, executable->plan());
  return {std::move(executable), std::move(walks)};
}

runtime::Tier jit_tier(const exec::TierBackend& interpreter) {
  runtime::ExecutableFactory make_executable =
      [&steps = interpreter.steps](std::shared_ptr<const ir::Function> graph,
                                   const runtime::WeightMap& weights) -> std::unique_ptr<runtime::Executable> {
    JitBuild build = build_jit_executable(graph, weights, jit_cpu_isa(), steps);
    if (runtime::log_enabled(runtime::LogChannel::jit)) log_walks(*graph, build.walks);
    return std::move(build.executable);
  };
  return {"jit", make_executable, [make_executable] { warm_up(make_executable); }};
}

} // namespace kiln::jitc::tier
