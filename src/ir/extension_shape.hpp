#pragma once
#include "ir/custom_ops.hpp"
#include "ir/extension_attrs.hpp"
#include "ir/extension_registry.hpp"
#include "ir/graph.hpp"
#include <span>

namespace kiln::ir {

// Runs an extension op's shape function on IR types. A symbolic dim goes in as a negative token, one
// per distinct name, and a token copied into an output comes back as that name. Throws
// InferError with the extension's own message, or with what is wrong in its answer (a dtype,
// rank or dim kiln does not know); the caller names the op and its place.
std::vector<ValueType> infer_extension_op(const ExtensionOp& op, const ExtensionAttrs& attrs,
                                          std::span<const ValueType> operands);

} // namespace kiln::ir
