#pragma once
#include "exec/implementation_list.hpp"
#include "exec/plan.hpp"
#include <memory>
#include <optional>
#include <span>
#include <string>

// How the plan runs an op that is a step of its own: it walks the interpreter's implementation list
// for the op's kind. The interpreter sits above exec/, so the plan is handed its lists, as part of
// its tier backend (exec/tier_backend.hpp).
namespace kiln::exec {

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
  Kernel kernel = nullptr;
  std::shared_ptr<const StepRunner> runner;
  std::string note; // what the walk says the entry made of the op
};

struct Implementation : ListEntry {
  // Why the entry cannot take the op; null: it takes every op of the kinds it is listed for.
  std::optional<std::string> (*refuse)(const StepQuery& query) = nullptr;
  // Called only for an op refuse() accepted. Throws kiln::Error for what input can cause.
  StepChoice (*create)(const StepQuery& query) = nullptr;
};

// What the plan needs of the tier that runs the ops left as steps of their own.
struct StepImplementations {
  // The list of one op kind, knobs applied; when not empty its last entry takes every op.
  std::span<const Implementation> (*list)(ir::OpKind kind) = nullptr;
  // The CPU the entries run on.
  CpuIsa (*cpu_isa)() = nullptr;
  // The kernel that computes an op over bound values when planning; null for ops that have none.
  Kernel (*kernel_for)(ir::OpKind kind) = nullptr;
  // The working memory a kernel step needs, given a slot of the arena.
  KernelScratch scratch_bytes = nullptr;
  // The state a kernel step's kernel derives once (null for kernels without a prepare).
  KernelPrepare prepare = nullptr;
};

} // namespace kiln::exec
