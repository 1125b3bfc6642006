#pragma once
#include "exec/tier_backend.hpp"

namespace kiln::interp {

// The interpreter as a tier backend: its implementation lists, kernels, kernel prepares and scratch
// sizes for the plan, and its eager evaluation (run_eager_op). Built on first use and never
// destroyed (compile threads plan with it until they stop); tiers/default_tier_set.cpp hands it to
// every tier and layer that runs ops on it.
const exec::TierBackend& interpreter_backend();

} // namespace kiln::interp
