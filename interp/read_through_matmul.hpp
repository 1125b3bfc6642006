#pragma once
#include "exec/plan.hpp"
#include <memory>
#include <optional>
#include <string>

namespace kiln::interp {

// The runner of a matmul whose B is a read-through transpose (ValuePlan::read_through) of a bound
// [n, k] matrix W, as F::linear stages x @ transpose(W): the GEMM reads W in place as B
// transposed, so the plan holds no transposed copy of the weight. a of any batch shape is
// multiplied as one [rows, k] matrix. The interpreter's entry after packed_gemm
// (implementation_table.cpp): it serves where weights are not packed (no AVX2 kernels, or
// KILN_PACK_WEIGHTS=0).
std::shared_ptr<const exec::StepRunner> make_read_through_matmul(const ir::Function& fn, const ir::Op& op,
                                                                 const std::vector<exec::ValuePlan>& values);

// Why the runner cannot take the matmul (B is not read through, not f32, shapes that do not
// agree), or nullopt.
std::optional<std::string> refuse_read_through_matmul(const ir::Op& op, const std::vector<exec::ValuePlan>& values);

} // namespace kiln::interp
