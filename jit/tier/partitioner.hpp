#pragma once
#include "interp/step_runner.hpp"
#include "ir/graph.hpp"
#include "runtime/executable.hpp"
#include <map>
#include <string>
#include <vector>

namespace kiln::jit::tier {

// How the JIT tier runs a static graph: its steps in run order, each a lowered step (generated code,
// oneDNN primitives) or an op left as a step of its own, running its interpreter kernel.
struct Partition {
  std::vector<interp::PlannedStep> steps;
  // Source ops per lowering: "xbyak", "dnnl.matmul", ..., "interp".
  std::map<std::string, int> ops_per_lowering;
};

// Never all-or-nothing: an op no lowering accepts stays an interpreter op. With KILN_LOG=jit, one
// line per original op says which lowering took it or why each candidate refused.
Partition partition_graph(const ir::Function& source, const runtime::WeightMap& weights);

} // namespace kiln::jit::tier
