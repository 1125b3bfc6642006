#pragma once
#include "exec/tier_backend.hpp"
#include "runtime/tier_set.hpp"

namespace kiln::interp {

// The tier "interp": the plan executor over every op of the graph, each run by what `backend`'s
// lists pick (the interpreter's own, interpreter_backend(), which must outlive the tier).
runtime::Tier interpreter_tier(const exec::TierBackend& backend);

} // namespace kiln::interp
