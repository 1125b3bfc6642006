#pragma once
#include "ir/graph.hpp"

namespace kiln::ir {

// Whether an op must stay even when nothing uses its results, and must never be merged with an
// identical one: buffer stores, extension ops (their effects are unknown) and calls into functions
// that contain either. Without a module to look callees up in, every call counts as effectful.
bool has_side_effects(const Op& op, const Module* module);

// Ops whose value depends only on their operands and attributes: candidates for CSE and folding.
inline bool is_pure(const Op& op, const Module* module) { return !has_side_effects(op, module); }

} // namespace kiln::ir
