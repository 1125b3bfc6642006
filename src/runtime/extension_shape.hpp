#pragma once
#include "ir/custom_ops.hpp"
#include "ir/graph.hpp"
#include "runtime/extension_attrs.hpp"
#include "runtime/extension_registry.hpp"
#include <span>

namespace kiln::runtime {

// Runs an extension op's shape function on IR types. A symbolic dim goes in as a negative token, one
// per distinct name, and a token copied into an output comes back as that name. Throws
// ir::InferError with the extension's own message, or with what is wrong in its answer (a dtype,
// rank or dim kiln does not know); the caller names the op and its place.
std::vector<ir::ValueType> infer_extension_op(const ExtensionOp& op, const ExtensionAttrs& attrs,
                                              std::span<const ir::ValueType> operands);

// The IR's questions about custom ops, answered from the extension registry; load_extension installs
// it (ir::set_custom_op_inference).
extern const ir::CustomOpInference extension_op_inference;

} // namespace kiln::runtime
