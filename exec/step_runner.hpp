#pragma once
#include "exec/view.hpp"
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace kiln::exec {

// A stateful replacement for an op's kernel: generated code or a oneDNN primitive a tier lowered
// ops into, a matmul over packed weights, an extension's kernel. Both tiers share one plan executor
// (memory plan, arena pool, hooks).
class StepRunner {
public:
  virtual ~StepRunner() = default;
  // Called from many threads at once; inputs and outputs as for kernels, scratch the
  // scratch_bytes() of working memory from the calling plan's arena.
  virtual void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
                   std::span<std::byte> scratch) const = 0;
  // Working memory a call needs besides its inputs and outputs (oneDNN scratchpads, activations in
  // a primitive's own layout), so that the plan's arena holds the call's whole peak.
  virtual size_t scratch_bytes() const { return 0; }
  // Bytes of the copies of weights it holds (packed, reordered), for ExecutableMemory.
  virtual size_t constant_bytes() const { return 0; }
  // Bytes of accelerator memory it holds, for ExecutableMemory.
  virtual size_t device_bytes() const { return 0; }
};

// A step a tier built from one or more ops of the graph: its runner reads `operands` and writes
// `results` (values of that graph). The ops it took run no step of their own; values between them
// never reach memory.
struct LoweredStep {
  std::string implementation; // "dnnl.matmul", "xbyak"
  std::vector<ir::ValueId> operands;
  std::vector<ir::ValueId> results;
  ir::OpId op = 0; // the first op it took: hooks and messages name the step by it
  std::shared_ptr<const StepRunner> runner;
};

// One step of a plan, in run order: an op of the graph that the interpreter's implementation list
// runs, or a step a tier lowered.
using PlannedStep = std::variant<ir::OpId, LoweredStep>;

} // namespace kiln::exec
