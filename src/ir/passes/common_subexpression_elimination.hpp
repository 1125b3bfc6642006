#pragma once
#include "ir/graph.hpp"

namespace kiln::ir {

// Merges pure ops that compute the same thing: same kind, same operands (in either order for add
// and mul), equal attributes (constant tensors compare by value) and equal result types. Later
// duplicates are replaced by the first occurrence. Ops with side effects (buffer stores, extension
// ops, calls into functions that store) never merge; `module` resolves callees, without it no call
// merges.
Function common_subexpression_elimination(const Function& fn, const Module* module = nullptr);
Module common_subexpression_elimination(const Module& module);

} // namespace kiln::ir
