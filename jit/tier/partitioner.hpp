#pragma once
#include "exec/implementation_list.hpp"
#include "exec/step_runner.hpp"
#include "ir/graph.hpp"
#include "runtime/executable.hpp"
#include <map>
#include <string>
#include <vector>

namespace kiln::jitc::tier {

// How the JIT tier runs a static graph: its steps in run order, each a lowered step (generated code,
// oneDNN primitives) or an op left as a step of its own for the interpreter's list to run.
struct Partition {
  std::vector<exec::PlannedStep> steps;
  // Source ops per implementation that took them: "xbyak", "dnnl.matmul", ..., "interp", "extension".
  std::map<std::string, int> ops_per_lowering;
  // Per source op: the walk down the JIT tier's list for its kind (a single verdict for an op fused
  // into another's step).
  std::vector<exec::ImplementationWalk> walks;
};

// Never all-or-nothing: each op walks its kind's list (implementation_table.hpp) on `cpu`, whose
// last entry leaves it to the interpreter.
Partition partition_graph(const ir::Function& source, const runtime::WeightMap& weights, exec::CpuIsa cpu);

} // namespace kiln::jitc::tier
