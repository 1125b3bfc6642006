#pragma once
#include "ir/graph.hpp"
#include <span>

namespace kiln::interp {

// Eager mode: one op on concrete tensors, run by its kernel (or its extension's), the interpreter
// backend's ir::EagerEvaluator. Throws kiln::Error naming the op for one without a kernel in this
// build or outside a graph.
std::vector<Tensor> run_eager_op(ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                 const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc);

} // namespace kiln::interp
