#pragma once
#include "exec/plan.hpp"
#include <span>

namespace kiln::exec {

// KILN_DEBUG_NANS: throws kiln::Error(numeric) when a floating-point output of step `index` holds
// NaN or Inf, naming the op (for a lowered step its first op, how many ops it fused and the
// implementation), the value and the counts. Integer and bool outputs are never checked.
void check_finite_outputs(const ExecutionPlan& plan, size_t index, std::span<const View> outputs);

} // namespace kiln::exec
