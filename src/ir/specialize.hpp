#pragma once
#include "core/dim_expr.hpp"
#include "ir/graph.hpp"
#include <map>
#include <span>

namespace kiln::ir {

// The subgraph calls specialize inlined, for tools that show the user's call stack (the debugger).
struct InlinedCall {
  std::string callee;                 // the called function's name
  SourceLoc loc;                      // the call's source line
  int32_t parent = -1;                // the call this one was made from; -1: the entry function
  std::vector<ValueId> args, results; // in the result function
  // The labels the inlining gave up (ir/text/value_labels.hpp): the callee's arguments ("@block
  // %arg0"), which stand for `args`, and the call's results in the caller ("%5"), for `results`.
  std::vector<std::string> arg_labels, result_labels;
};
struct InlinedCalls {
  std::vector<InlinedCall> calls;
  std::vector<int32_t> op_call; // per op of the result: the innermost call it came from, -1: none
};

// Binds every symbolic dim from the concrete argument types (checking that each name gets one
// size) and returns the entry function with calls inlined and all types static: the graph tiers
// execute. Errors name the argument and dim. `calls`, when given, receives where each op came from.
// Its values keep their labels, and unlabelled ones are labelled as `module` prints them.
Function specialize(const Module& module, std::span<const ValueType> concrete_args, InlinedCalls* calls = nullptr);

// Substitutes bound names in a shape, evaluating expressions whose names are all bound; the rest
// stay symbolic. Error(shape) for an expression that comes out negative.
Shape bind_shape(const Shape& shape, const DimBindings& bindings);

} // namespace kiln::ir
