#include "jit/tier/jit_executable.hpp"
#include "exec/tier_walks.hpp"
#include "jit/tier/implementation_table.hpp"
#include "jit/tier/partitioner.hpp"
#include "jit/tier/warm_up.hpp"
#include "runtime/log.hpp"

namespace kiln::jitc::tier {

JitBuild build_jit_executable(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                              exec::CpuIsa cpu, const exec::StepImplementations& interpreter) {
  Partition partition = partition_graph(*graph, weights, cpu);
  exec::ExecutableOptions options{"jit", partition.steps, partition.ops_per_lowering};
  auto executable = std::make_unique<exec::PlanExecutable>(graph, weights, interpreter, std::move(options));
  std::vector<exec::ImplementationWalk> walks =
      exec::walks_through_interpreter(partition.walks, partition.steps, executable->plan());
  return {std::move(executable), std::move(walks)};
}

runtime::Tier jit_tier(const exec::TierBackend& interpreter) {
  runtime::ExecutableFactory make_executable =
      [&steps = interpreter.steps](std::shared_ptr<const ir::Function> graph,
                                   const runtime::WeightMap& weights) -> std::unique_ptr<runtime::Executable> {
    JitBuild build = build_jit_executable(graph, weights, jit_cpu_isa(), steps);
    if (runtime::log_enabled(runtime::LogChannel::jit)) exec::log_walks(*graph, build.walks);
    return std::move(build.executable);
  };
  return {"jit", make_executable, [make_executable] { warm_up(make_executable); }};
}

} // namespace kiln::jitc::tier
