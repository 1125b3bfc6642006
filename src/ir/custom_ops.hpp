#pragma once
#include "ir/graph.hpp"
#include <span>
#include <string_view>

// Custom ops: "kiln.custom"(...) {op = "myext.scale", ...}, the ops of extension libraries
// (include/kiln/extension.h). The IR keeps a custom op whose name no loaded extension registers
// opaque: it prints, parses and passes through the passes with the types written for it (the JIT
// tier names its own rewritten ops this way). A registered one gets its types from the extension's
// shape function (ir/extension_registry.hpp, ir/extension_shape.hpp). Running a graph needs every
// custom op registered or given a runner.
namespace kiln::ir {

// The `op` attribute; "" when it is missing or not a string.
std::string custom_op_name(const Attrs& attrs);

bool custom_op_is_registered(const Attrs& attrs);

// The result types from the registered extension's shape function. Throws kiln::Error: unsupported
// when no loaded extension registers the op, shape when the shape function refuses the operands.
std::vector<ValueType> infer_custom_op(std::span<const ValueType> operands, const Attrs& attrs, const SourceLoc& loc);

// The error for a custom op no loaded extension registers.
Error unregistered_custom_op(const std::string& name, const SourceLoc& loc);

// Throws unregistered_custom_op for the first custom op of the module no loaded extension registers.
void require_registered_custom_ops(const Module& module);

} // namespace kiln::ir
