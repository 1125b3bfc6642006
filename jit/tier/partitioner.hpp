#pragma once
#include "interp/step_runner.hpp"
#include "ir/graph.hpp"
#include "runtime/executable.hpp"
#include <map>
#include <memory>
#include <string>

namespace kiln::jit::tier {

// A static graph rewritten for the JIT tier: lowered ops and fused regions became `custom` ops whose
// runners hold generated code or oneDNN primitives; every other op is copied and runs its
// interpreter kernel.
struct Partition {
  std::shared_ptr<const ir::Function> graph;
  interp::StepRunners runners; // indexed by op id of `graph`
  // Original ops per lowering: "xbyak", "dnnl.matmul", ..., "interp".
  std::map<std::string, int> ops_per_lowering;
};

// Never all-or-nothing: an op no lowering accepts stays an interpreter op. With KILN_LOG=jit, one
// line per original op says which lowering took it or why each candidate refused.
Partition partition_graph(const ir::Function& source, const runtime::WeightMap& weights);

} // namespace kiln::jit::tier
