#pragma once
#include "ir/graph.hpp"
#include <span>

namespace kiln::runtime {

// Runs one op at once on concrete tensors (eager mode). The interpreter installs the executor;
// src/ never includes a tier.
using EagerExecutor = std::vector<Tensor> (*)(ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                              const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc);
void set_eager_executor(EagerExecutor executor);
std::vector<Tensor> run_eager(ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                              const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc);

} // namespace kiln::runtime
