#pragma once
#include "exec/implementation_list.hpp"
#include "exec/plan_executable.hpp"
#include "exec/tier_backend.hpp"
#include "runtime/tier_set.hpp"
#include <memory>
#include <vector>

namespace kiln::jitc::tier {

// Tier 1 is the interpreter's plan executor over the partition's steps: lowered steps run JIT code
// or oneDNN primitives, every other op what the interpreter's list picks (`interpreter`: the
// interpreter backend's lists), with one memory plan for all. `walks` says, per op of `graph`, how it came to run as it
// does: the JIT tier's list, then for an op left as a step of its own, the interpreter's list. KILN_LOG=jit prints
// them.
struct JitBuild {
  std::unique_ptr<exec::PlanExecutable> executable;
  std::vector<exec::ImplementationWalk> walks;
};
JitBuild build_jit_executable(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                              exec::CpuIsa cpu, const exec::StepImplementations& interpreter);

// The tier "jit", built on the interpreter's backend (which must outlive it): build_jit_executable
// for this CPU, the walks printed under KILN_LOG=jit, and a warm-up compile (warm_up.hpp).
runtime::Tier jit_tier(const exec::TierBackend& interpreter);

} // namespace kiln::jitc::tier
