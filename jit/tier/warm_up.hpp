#pragma once
#include "runtime/tier_set.hpp"

namespace kiln::jitc::tier {

// Compiles one small graph that reaches every JIT lowering, so the library state those
// lowerings create on first use exists before a session that compiles in the background (see
// runtime::TierSet::warm_up). Never throws.
void warm_up(const runtime::ExecutableFactory& make_executable);

} // namespace kiln::jitc::tier
