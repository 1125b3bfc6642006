#pragma once
#include "exec/step_implementations.hpp"
#include <span>

// The interpreter's implementation lists: how the plan runs an op that is a step of its own.
namespace kiln::interp {

// The list of one op kind, knobs applied (KILN_PACK_WEIGHTS=0 switches packed_gemm off); when not
// empty its last entry takes every op. Empty for ops that never run as a step: constants and
// weights are bound when planning, calls are inlined before.
std::span<const exec::Implementation> interp_implementations(ir::OpKind kind);

// The CPU the interpreter's entries run on: AVX2+FMA when this build has the AVX2 kernels and the
// CPU runs them.
exec::CpuIsa interp_cpu_isa();

} // namespace kiln::interp
