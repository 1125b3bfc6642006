#pragma once
#include "ir/graph.hpp"

namespace kiln::ir {

// Drops ops whose results are unused and that have no side effects (see has_side_effects): buffer
// stores, extension ops and calls into functions that store are kept. `module` resolves callees;
// without it every call is kept. Arguments and outputs never change.
Function dead_code_elimination(const Function& fn, const Module* module = nullptr);

// Every function, then the private functions no public function reaches through calls any more.
Module dead_code_elimination(const Module& module);

} // namespace kiln::ir
