#pragma once
#include "ir/eager_evaluator.hpp"
#include "ir/graph.hpp"
#include <cstdint>

namespace kiln::ir {

// Folded results larger than this stay computed at run time, so that graphs do not bloat.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

// Evaluates at compile time, through `evaluator` (a tier backend's eager evaluation), every pure op whose
// operands are all `constant` ops and whose results are static with at most kMaxFoldedElements
// elements each; small static `full` and `arange` ops become constants too. Each result becomes a
// `constant` op carrying the location of the op it replaces. An op the evaluator refuses (an error
// it would raise at run time) is left as it is, and so is every op when `evaluator` is empty.
Function fold_constants(const Function& fn, const EagerEvaluator& evaluator);
Module fold_constants(const Module& module, const EagerEvaluator& evaluator);

} // namespace kiln::ir
