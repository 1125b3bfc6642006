#pragma once
#include "ir/eager_evaluator.hpp"
#include "ir/graph.hpp"

namespace kiln::ir {

// Upper bound on canonicalize -> fold -> CSE -> DCE rounds; real graphs settle in two or three.
inline constexpr int kMaxPassRounds = 8;

// Verifies the module, runs canonicalize, fold_constants, common_subexpression_elimination and
// dead_code_elimination in rounds until a round changes nothing (at most kMaxPassRounds), and
// verifies the result. Surviving ops keep their source locations. Constants are folded with
// `evaluator` (the session's tier set's; empty: nothing is folded).
Module run_default_passes(const Module& module, const EagerEvaluator& evaluator);

// Structural equality: same functions, values, ops, attributes and source locations.
bool modules_equal(const Module& a, const Module& b);

} // namespace kiln::ir
