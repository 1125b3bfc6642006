#include "ir/verify.hpp"
#include "ir/custom_ops.hpp"
#include "ir/ops.hpp"

namespace kiln::ir {

namespace {

std::string op_place(const Function& fn, OpId id) {
  const Op& op = fn.ops[id];
  return "@" + fn.name + " op " + std::to_string(id) + " (kiln." + std::string(op_info(op.kind).name) + " at " +
         op.loc.to_string() + ")";
}

void check_value(const Function& fn, ValueId v, size_t defined_before, const std::string& where) {
  if (v >= fn.values.size() || v >= defined_before)
    throw Error(ErrorKind::internal, where + ": uses value %" + std::to_string(v) + " before it is defined");
}

// Values are numbered so that everything an op may use was created before its first result.
size_t first_result_id(const Function& fn, OpId id) {
  const Op& op = fn.ops[id];
  if (!op.results.empty()) return op.results.front();
  for (OpId next = id + 1; next < fn.ops.size(); ++next)
    if (!fn.ops[next].results.empty()) return fn.ops[next].results.front();
  return fn.values.size();
}

bool is_registered_custom(const Op& op) { return op.kind == OpKind::custom && custom_op_is_registered(op.attrs); }

} // namespace

std::vector<ValueType> infer_call(const Module& module, const std::string& callee, std::span<const ValueType> operands,
                                  const SourceLoc& loc) {
  const Function* target = module.find(callee);
  std::string where = "func.call @" + callee + " at " + loc.to_string() + ": ";
  if (!target) throw Error(ErrorKind::shape, where + "no function named @" + callee);
  std::vector<ValueType> params = target->arg_types();
  if (params.size() != operands.size())
    throw Error(ErrorKind::shape, where + "takes " + std::to_string(params.size()) + " arguments, got " +
                                      std::to_string(operands.size()));
  for (size_t i = 0; i < params.size(); ++i)
    if (!(params[i] == operands[i]))
      throw Error(ErrorKind::shape, where + "argument " + std::to_string(i) + " is " + type_to_string(operands[i]) +
                                        ", expected " + type_to_string(params[i]));
  return target->output_types();
}

void verify_function(const Module& module, const Function& fn) {
  for (size_t i = 0; i < fn.args.size(); ++i)
    if (fn.values.at(fn.args[i]).def_op != kNoOp)
      throw Error(ErrorKind::internal, "@" + fn.name + ": argument " + std::to_string(i) + " is not an argument value");
  for (OpId id = 0; id < fn.ops.size(); ++id) {
    const Op& op = fn.ops[id];
    size_t limit = first_result_id(fn, id);
    std::vector<ValueType> in;
    for (ValueId v : op.operands) {
      check_value(fn, v, limit, op_place(fn, id));
      in.push_back(fn.type_of(v));
    }
    for (size_t r = 0; r < op.results.size(); ++r) {
      const ValueInfo& info = fn.values.at(op.results[r]);
      if (info.def_op != int32_t(id) || info.def_index != r)
        throw Error(ErrorKind::internal, op_place(fn, id) + ": result " + std::to_string(r) + " is not owned by it");
    }
    std::vector<ValueType> expected;
    if (op.kind == OpKind::call)
      expected = infer_call(module, op.attrs.get_string("callee"), in, op.loc);
    else if (op_info(op.kind).infer || is_registered_custom(op))
      expected = infer_op(op.kind, in, op.attrs, op.loc);
    else
      continue; // constant_external, and custom ops opaque to the IR
    if (expected.size() != op.results.size())
      throw Error(ErrorKind::shape, op_place(fn, id) + ": has " + std::to_string(op.results.size()) +
                                        " results, expected " + std::to_string(expected.size()));
    for (size_t r = 0; r < expected.size(); ++r)
      if (!(expected[r] == fn.type_of(op.results[r])))
        throw Error(ErrorKind::shape, op_place(fn, id) + ": result " + std::to_string(r) + " is " +
                                          type_to_string(fn.type_of(op.results[r])) + ", inferred " +
                                          type_to_string(expected[r]));
  }
  for (ValueId v : fn.outputs)
    check_value(fn, v, fn.values.size(), "@" + fn.name + " return");
}

void verify_module(const Module& module) {
  if (module.functions.empty()) throw Error(ErrorKind::internal, "module @" + module.name + " has no functions");
  for (const Function& fn : module.functions)
    verify_function(module, fn);
}

} // namespace kiln::ir
