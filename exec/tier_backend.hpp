#pragma once
#include "exec/step_implementations.hpp"
#include "ir/eager_evaluator.hpp"

namespace kiln::exec {

// What a tier that runs ops one by one on the CPU gives the layers that cannot include it: to the
// plan its implementation lists, kernels and prepares; to constant folding, eager F:: and the debug
// stepper its eager evaluation. The interpreter builds kiln's one (interp::interpreter_backend()),
// and the tier set hands it down (tiers/default_tier_set.cpp), to the JIT tier's factory too. It
// outlives every plan built on it.
struct TierBackend {
  StepImplementations steps;
  ir::EagerEvaluator eager;
};

} // namespace kiln::exec
