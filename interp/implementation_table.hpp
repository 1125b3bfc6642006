#pragma once
#include "exec/implementation_list.hpp"
#include "interp/plan.hpp"
#include <memory>
#include <optional>
#include <span>
#include <string>

// The interpreter's implementation lists: how the plan runs an op that is a step of its own.
namespace kiln::interp {

// What an entry is asked about: an op of the graph being planned, with the plan of every value
// (dims, dtypes, which values are bound when planning).
struct StepQuery {
  const ir::Function& graph;
  const ir::Op& op;
  const std::vector<ValuePlan>& values;
  runtime::WeightForms* forms; // the session's packed and precomputed weight forms; may be null
};

// What the plan's step does for an op an entry took.
struct StepChoice {
  StepKind kind = StepKind::kernel;
  exec::Kernel kernel = nullptr;
  std::shared_ptr<const exec::StepRunner> runner;
  std::string note; // what the walk says the entry made of the op
};

struct Implementation : exec::ListEntry {
  // Why the entry cannot take the op; null: it takes every op of the kinds it is listed for.
  std::optional<std::string> (*refuse)(const StepQuery& query) = nullptr;
  // Called only for an op refuse() accepted. Throws kiln::Error for what input can cause.
  StepChoice (*create)(const StepQuery& query) = nullptr;
};

// The list of one op kind, knobs applied (KILN_PACK_WEIGHTS=0 switches packed_gemm off); when not
// empty its last entry takes every op. Empty for ops that never run as a step: constants and
// weights are bound when planning, calls are inlined before.
std::span<const Implementation> interp_implementations(ir::OpKind kind);

// The CPU the interpreter's entries run on: AVX2+FMA when this build has the AVX2 kernels and the
// CPU runs them.
exec::CpuIsa interp_cpu_isa();

} // namespace kiln::interp
