#pragma once
#include "exec/plan.hpp"
#include <memory>
#include <optional>
#include <string>

namespace kiln::interp {

// The runner of a matmul whose B is bound (a weight, or an op over weights computed when planning):
// B is packed once, here, into the panel layout of packed_gemm.hpp, and a of any batch shape is
// multiplied as one [rows, k] matrix. Eigen packs B again on every call, which at small batches
// is most of the work (mlp b8: B is 1 MiB, a 32 KiB). It is the interpreter's packed_gemm
// implementation (implementation_table.cpp), which needs AVX2+FMA on x86-64 (NEON, the baseline,
// on aarch64) and which KILN_PACK_WEIGHTS=0 switches off, for comparisons.
// The packed copy of a weight is a form of it in the session's `forms`, shared by every plan and
// tier; B computed from an embedded constant (or any B when `forms` is null) is packed for this plan
// alone. Only for a matmul refuse_packed_matmul accepts.
std::shared_ptr<const exec::StepRunner> make_packed_matmul(const ir::Function& fn, const ir::Op& op,
                                                           const std::vector<exec::ValuePlan>& values,
                                                           runtime::WeightForms* forms);

// Whether this build has a packed kernel this CPU runs: NEON on aarch64 (chosen when building, as
// it is the baseline ISA there), AVX2+FMA on x86-64 where the CPU has it (chosen at run time).
bool cpu_runs_packed_gemm();

// Why the matmul cannot be packed (not f32, B computed per call, B with batches, shapes that do
// not agree, which the kernel then reports), or nullopt.
std::optional<std::string> refuse_packed_matmul(const ir::Op& op, const std::vector<exec::ValuePlan>& values);

} // namespace kiln::interp
