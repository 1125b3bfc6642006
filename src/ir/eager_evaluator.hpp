#pragma once
#include "ir/graph.hpp"
#include <functional>
#include <span>

namespace kiln::ir {

// Runs one op at once on concrete tensors: eager F:: in the tracer, constant folding, the debug
// stepper. A tier backend provides it (interp::interpreter_backend()); the IR and the tracer never
// include a tier, so it is handed to them: to the passes and the stepper as an argument, to eager
// F:: through default_eager_evaluator().
using EagerEvaluator =
    std::function<std::vector<Tensor>(OpKind kind, const Attrs& attrs, std::span<const Tensor> inputs,
                                      const std::vector<ValueType>& result_types, const SourceLoc& loc)>;

// What `evaluator` makes of the op. Throws kiln::Error (unsupported), naming the op, when
// `evaluator` is empty, else what the evaluator throws.
std::vector<Tensor> evaluate_eagerly(const EagerEvaluator& evaluator, OpKind kind, const Attrs& attrs,
                                     std::span<const Tensor> inputs, const std::vector<ValueType>& result_types,
                                     const SourceLoc& loc);

// The eager evaluator of the process-wide default tier set (runtime::default_tier_set()): eager F::
// on concrete tensors belongs to no session. Defined where that set is built
// (tiers/default_tier_set.cpp), which the IR does not include.
const EagerEvaluator& default_eager_evaluator();

} // namespace kiln::ir
