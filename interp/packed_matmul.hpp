#pragma once
#include "interp/plan.hpp"
#include <memory>

namespace kiln::interp {

// The runner of a matmul whose B is bound (a weight, or an op over weights computed when planning):
// B is packed once, here, into the panel layout of packed_gemm.hpp, and a of any batch shape is
// multiplied as one [rows, k] matrix. Eigen packs B again on every call, which at small batches
// is most of the work (mlp b8: B is 1 MiB, a 32 KiB). Null where it does not apply: not f32, B
// with batches, no AVX2+FMA on this CPU (the Eigen kernel runs there).
// The packed copy of a weight is a form of it in the session's `forms`, shared by every plan and
// tier; B computed from an embedded constant (or any B when `forms` is null) is packed for this plan
// alone. KILN_PACK_WEIGHTS=0 turns this off (the Eigen kernel runs), for comparisons.
std::shared_ptr<const StepRunner> make_packed_matmul(const ir::Function& fn, const ir::Op& op,
                                                     const std::vector<ValuePlan>& values, runtime::WeightForms* forms);

} // namespace kiln::interp
