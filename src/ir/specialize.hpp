#pragma once
#include "ir/graph.hpp"
#include <map>
#include <span>

namespace kiln::ir {

using DimBindings = std::map<std::string, int64_t>;

// Binds every symbolic dim from the concrete argument types (checking that each name gets one
// size) and returns the entry function with calls inlined and all types static: the graph tiers
// execute. Errors name the argument and dim.
Function specialize(const Module& module, std::span<const ValueType> concrete_args);

// Substitutes bound names in a shape; unbound names stay symbolic.
Shape bind_shape(const Shape& shape, const DimBindings& bindings);

} // namespace kiln::ir
