#pragma once
#include <kiln/compare_tiers.hpp>
#include <kiln/profile.hpp>
#include <kiln/stepper.hpp>
#include <kiln/tensor_summary.hpp>

// Debugging a graph: a tensor's summary and printed form (tensor_summary.hpp), stepping through a
// call (stepper.hpp), per-step timings (profile.hpp) and where the tiers part (compare_tiers.hpp).
// KILN_DEBUG_NANS=1 (README: "Debugging a graph") stops a call at the first step producing NaN/Inf.
