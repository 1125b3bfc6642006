#pragma once
#include "interp/kernel.hpp"
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::interp {

// A stateful replacement for an op's kernel, used for `custom` ops: the JIT tier rewrites fused
// regions and oneDNN-lowered ops into custom ops whose runners hold generated code or primitives,
// so both tiers share one plan executor (memory plan, arena pool, hooks).
class StepRunner {
public:
  virtual ~StepRunner() = default;
  // Called from many threads at once; inputs and outputs as for kernels.
  virtual void run(std::span<const View> inputs, std::span<const View> outputs) const = 0;
};

// Indexed by op id of the graph; null where the op runs its interpreter kernel.
using StepRunners = std::vector<std::shared_ptr<const StepRunner>>;

// How an executable built on the plan executor presents itself.
struct ExecutableOptions {
  std::string tier = "interp";
  StepRunners runners;
  std::map<std::string, int> ops_per_lowering; // empty: every op counts as "interp"
};

} // namespace kiln::interp
