#pragma once
#include "ir/graph.hpp"
#include <span>

namespace kiln::ir {

// Runs one op at once on concrete tensors: eager mode in the tracer and constant folding. The
// interpreter installs it during static initialisation, so that the IR and the tracer never include a
// tier or the runtime.
using EagerEvaluator = std::vector<Tensor> (*)(OpKind kind, const Attrs& attrs, std::span<const Tensor> inputs,
                                               const std::vector<ValueType>& result_types, const SourceLoc& loc);
// Returns the one it replaces (null when none was installed), so that a test can put it back.
EagerEvaluator set_eager_evaluator(EagerEvaluator evaluator);

// Throws kiln::Error (unsupported) when no evaluator is installed, else what the evaluator throws.
std::vector<Tensor> evaluate_eagerly(OpKind kind, const Attrs& attrs, std::span<const Tensor> inputs,
                                     const std::vector<ValueType>& result_types, const SourceLoc& loc);

} // namespace kiln::ir
