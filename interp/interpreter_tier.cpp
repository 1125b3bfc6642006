#include "interp/interpreter_tier.hpp"
#include "exec/plan_executable.hpp"

namespace kiln::interp {

runtime::Tier interpreter_tier(const exec::TierBackend& backend) {
  auto make_executable =
      [&steps = backend.steps](std::shared_ptr<const ir::Function> graph,
                               const runtime::WeightMap& weights) -> std::unique_ptr<runtime::Executable> {
    return std::make_unique<exec::PlanExecutable>(std::move(graph), weights, steps);
  };
  return {"interp", make_executable, {}};
}

} // namespace kiln::interp
