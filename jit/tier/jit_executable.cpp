#include "interp/executor.hpp"
#include "jit/tier/partitioner.hpp"
#include "jit/tier/warm_up.hpp"

namespace kiln::jit::tier {

namespace {

// Tier 1 is the interpreter's plan executor over the partition's steps: lowered steps run JIT code
// or oneDNN primitives, every other op its interpreter kernel, with one memory plan for all.
std::unique_ptr<runtime::Executable> make_jit_executable(std::shared_ptr<const ir::Function> graph,
                                                         const runtime::WeightMap& weights) {
  Partition partition = partition_graph(*graph, weights);
  interp::ExecutableOptions options{"jit", std::move(partition.steps), std::move(partition.ops_per_lowering)};
  return std::make_unique<interp::InterpreterExecutable>(std::move(graph), weights, std::move(options));
}

struct JitTierRegistrar {
  JitTierRegistrar() {
    runtime::register_tier("jit", &make_jit_executable, [] { warm_up(&make_jit_executable); });
  }
} const registrar;

} // namespace

} // namespace kiln::jit::tier
