#pragma once
#include "ir/graph.hpp"
#include <optional>
#include <span>

namespace kiln::ir {

// Checks SSA form (every operand defined before use, results owned by their op), arity, inferred
// types against recorded ones, calls against their callees, value sizes (static dims, against
// max_tensor_bytes) and outputs; verify_module also refuses call cycles (verify_calls). Throws
// kiln::Error naming the function, op and source location.
void verify_function(const Module& module, const Function& fn);
void verify_module(const Module& module);

// Calls are inlined when a graph is specialised, so a cycle of calls never ends and a deep chain
// of them is refused too. verify_module and specialize refuse both through verify_calls; the
// parser reports the same problem at the call's line:column.
inline constexpr int kMaxCallDepth = 64;
struct CallProblem {
  size_t function;  // index of the caller in Module::functions
  OpId op;          // the call op in it
  std::string what; // "calls form a cycle @a -> @b -> @a; recursion is not supported"
};
std::optional<CallProblem> find_call_problem(const Module& module);
// Throws kiln::Error(unsupported) "func.call @b at model.cpp:7:5 in @a: calls form a cycle ...".
void verify_calls(const Module& module);

// The result types of a call op to `callee` with these operand types, checked.
std::vector<ValueType> infer_call(const Module& module, const std::string& callee, std::span<const ValueType> operands,
                                  const SourceLoc& loc);

} // namespace kiln::ir
