#include "ir/passes/function_rebuilder.hpp"
#include "ir/text/value_labels.hpp"
#include <algorithm>
#include <kiln/error.hpp>

namespace kiln::ir {

FunctionRebuilder::FunctionRebuilder(const Function& source)
    : source_(source), mapping_(source.values.size(), 0), mapped_(source.values.size(), false) {
  target_.name = source.name;
  target_.is_private = source.is_private;
  for (size_t i = 0; i < source.args.size(); ++i)
    map(source.args[i], target_.add_arg(source.type_of(source.args[i]), source.arg_names.at(i)));
}

ValueId FunctionRebuilder::lookup(ValueId source_value) const {
  if (source_value >= mapped_.size() || !mapped_[source_value])
    throw Error(ErrorKind::internal,
                "@" + source_.name + ": value " + value_name(source_, source_value) + " is used before it is defined");
  return mapping_[source_value];
}

std::vector<ValueId> FunctionRebuilder::mapped_operands(const Op& source_op) const {
  std::vector<ValueId> operands;
  operands.reserve(source_op.operands.size());
  for (ValueId v : source_op.operands)
    operands.push_back(lookup(v));
  return operands;
}

// The target value takes the source's labels (ir/text/value_labels.hpp): a value the pass made for it
// is named as the value it replaces; one it merged into another adds its labels after the other's.
void FunctionRebuilder::map(ValueId source_value, ValueId target_value) {
  mapping_.at(source_value) = target_value;
  mapped_.at(source_value) = true;
  std::vector<std::string>& labels = target_.values.at(target_value).labels;
  for (const std::string& label : source_.values.at(source_value).labels)
    if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
}

OpId FunctionRebuilder::copy(const Op& source_op) {
  std::vector<ValueType> types;
  types.reserve(source_op.results.size());
  for (ValueId r : source_op.results)
    types.push_back(source_.type_of(r));
  OpId id = emit(source_op.kind, mapped_operands(source_op), types, source_op.attrs, source_op.loc);
  for (size_t i = 0; i < source_op.results.size(); ++i)
    map(source_op.results[i], target_.ops[id].results[i]);
  return id;
}

OpId FunctionRebuilder::emit(OpKind kind, std::vector<ValueId> operands, const std::vector<ValueType>& result_types,
                             Attrs attrs, SourceLoc loc) {
  return target_.add_op(kind, std::move(operands), result_types, std::move(attrs), std::move(loc));
}

const Op* FunctionRebuilder::defining_op(ValueId target_value) const {
  int32_t def = target_.values.at(target_value).def_op;
  return def == kNoOp ? nullptr : &target_.ops[size_t(def)];
}

Function FunctionRebuilder::finish() {
  target_.outputs.clear();
  for (ValueId v : source_.outputs)
    target_.outputs.push_back(lookup(v));
  return std::move(target_);
}

} // namespace kiln::ir
