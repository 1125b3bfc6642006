#pragma once
#include "ir/graph.hpp"
#include <span>

namespace kiln::ir {

// Checks SSA form (every operand defined before use, results owned by their op), arity, inferred
// types against recorded ones, calls against their callees and outputs. Throws kiln::Error naming
// the function, op and source location.
void verify_function(const Module& module, const Function& fn);
void verify_module(const Module& module);

// The result types of a call op to `callee` with these operand types, checked.
std::vector<ValueType> infer_call(const Module& module, const std::string& callee,
                                  std::span<const ValueType> operands, const SourceLoc& loc);

} // namespace kiln::ir
