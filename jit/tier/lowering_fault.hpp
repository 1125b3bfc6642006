#pragma once
#include "ir/op_kind.hpp"
#include <optional>

namespace kiln::jitc::tier {

// A deliberate error in one lowering, for testing the debugging tools only (debug::compare_tiers
// must find a wrong JIT kernel at exactly its op): while set, the fused elementwise lowering
// computes op(x) + offset for every f32 op of `kind`. Kernels made meanwhile differ in their region,
// hence in their cache key, so clearing the fault needs no cache flush. Not in any public header.
struct LoweringFault {
  ir::OpKind kind;
  float offset = 0;
};
void set_lowering_fault(std::optional<LoweringFault> fault);
std::optional<LoweringFault> lowering_fault();

} // namespace kiln::jitc::tier
