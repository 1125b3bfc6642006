#include "ir/graph.hpp"
#include "ir/ops.hpp"

namespace kiln::ir {

namespace {

OpParams decode_params_or_invalid(const Function& fn, const Op& op) {
  std::vector<ValueType> operand_types;
  for (ValueId v : op.operands) {
    if (v >= fn.values.size())
      return InvalidParams{"operand %" + std::to_string(v) + " is not defined", ErrorKind::spec};
    operand_types.push_back(fn.type_of(v));
  }
  try {
    return decode_params(op.kind, op.attrs, operand_types);
  } catch (const AttrError& e) {
    return InvalidParams{e.what(), ErrorKind::spec};
  } catch (const InferError& e) {
    return InvalidParams{e.what(), e.kind};
  }
}

} // namespace

void throw_params_mismatch(const Op& op) {
  const auto* invalid = std::get_if<InvalidParams>(&op.params);
  throw Error(ErrorKind::internal, "kiln." + std::string(op_info(op.kind).name) + " at " + op.loc.to_string() + ": " +
                                       (invalid ? invalid->reason : "parameters of another op kind"));
}

std::string type_to_string(const ValueType& type) {
  return std::string(type.is_buffer ? "buffer " : "") + dtype_name(type.dtype) + " " + shape_to_string(type.shape);
}

std::string SourceLoc::to_string() const {
  if (!known()) return "<unknown>";
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

ValueId Function::add_arg(ValueType type, std::string name) {
  ValueId id = ValueId(values.size());
  values.push_back(ValueInfo{std::move(type), kNoOp, uint32_t(args.size())});
  args.push_back(id);
  arg_names.push_back(std::move(name));
  return id;
}

OpId Function::add_op(OpKind kind, std::vector<ValueId> operands, const std::vector<ValueType>& result_types,
                      Attrs attrs, SourceLoc loc) {
  OpId id = OpId(ops.size());
  Op op{kind, std::move(operands), {}, std::move(attrs), std::move(loc), {}};
  op.params = decode_params_or_invalid(*this, op);
  for (uint32_t i = 0; i < result_types.size(); ++i) {
    op.results.push_back(ValueId(values.size()));
    values.push_back(ValueInfo{result_types[i], int32_t(id), i});
  }
  ops.push_back(std::move(op));
  return id;
}

std::vector<ValueType> Function::arg_types() const {
  std::vector<ValueType> types;
  for (ValueId v : args)
    types.push_back(type_of(v));
  return types;
}

std::vector<ValueType> Function::output_types() const {
  std::vector<ValueType> types;
  for (ValueId v : outputs)
    types.push_back(type_of(v));
  return types;
}

const Function* Module::find(const std::string& fn_name) const {
  for (const Function& f : functions)
    if (f.name == fn_name) return &f;
  return nullptr;
}

Function* Module::find(const std::string& fn_name) {
  for (Function& f : functions)
    if (f.name == fn_name) return &f;
  return nullptr;
}

} // namespace kiln::ir
