#pragma once
#include "runtime/executable.hpp"

namespace kiln::jitc::tier {

// Compiles one small graph that reaches every JIT lowering, so the library state those
// lowerings create on first use exists before a session that compiles in the background (see
// runtime::warm_up_tiers). Never throws.
void warm_up(const runtime::ExecutableFactory& make_executable);

} // namespace kiln::jitc::tier
