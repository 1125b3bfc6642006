#include "ir/custom_ops.hpp"
#include "ir/extension_shape.hpp"
#include "ir/ops.hpp"

namespace kiln::ir {

std::string custom_op_name(const Attrs& attrs) {
  const Attr* op = attrs.find("op");
  const std::string* name = op ? std::get_if<std::string>(&op->value) : nullptr;
  return name ? *name : "";
}

bool custom_op_is_registered(const Attrs& attrs) { return find_extension_op(custom_op_name(attrs)) != nullptr; }

Error unregistered_custom_op(const std::string& name, const SourceLoc& loc) {
  if (name.empty())
    return Error(ErrorKind::unsupported, "kiln.custom at " + loc.to_string() +
                                             ": a custom op needs a string attribute 'op' naming an extension op");
  return Error(ErrorKind::unsupported,
               "kiln.custom at " + loc.to_string() + ": custom op '" + name +
                   "' is not registered by any loaded extension (load its library with custom_extensions, "
                   "kiln::load_extension or kiln run --extension)");
}

std::vector<ValueType> infer_custom_op(std::span<const ValueType> operands, const Attrs& attrs, const SourceLoc& loc) {
  const std::string name = custom_op_name(attrs);
  const ExtensionOp* extension = find_extension_op(name);
  if (!extension) throw unregistered_custom_op(name, loc);
  try {
    const ExtensionAttrs extension_attrs(attrs);
    return infer_extension_op(*extension, extension_attrs, operands);
  } catch (const InferError& e) {
    throw Error(e.kind, "kiln.custom '" + name + "' at " + loc.to_string() + ": " + e.what());
  }
}

void require_registered_custom_ops(const Module& module) {
  for (const Function& fn : module.functions)
    for (const Op& op : fn.ops)
      if (op.kind == OpKind::custom && !custom_op_is_registered(op.attrs))
        throw unregistered_custom_op(custom_op_name(op.attrs), op.loc);
}

} // namespace kiln::ir
