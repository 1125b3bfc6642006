#pragma once
#include "ir/graph.hpp"
#include <cstdint>

namespace kiln::ir {

// Folded results larger than this stay computed at run time, so that graphs do not bloat.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

// Evaluates at compile time, through the eager evaluator (ir::evaluate_eagerly), every pure op whose
// operands are all `constant` ops and whose results are static with at most kMaxFoldedElements
// elements each; small static `full` and `arange` ops become constants too. Each result becomes a
// `constant` op carrying the location of the op it replaces. An op the evaluator refuses (no
// interpreter linked, or an error it would raise at run time) is left as it is.
Function fold_constants(const Function& fn);
Module fold_constants(const Module& module);

} // namespace kiln::ir
