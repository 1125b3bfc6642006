#include "ir/operand_dtypes.hpp"

namespace kiln::ir {

OperandDTypes operand_dtypes(OpKind kind) {
  const OpInfo& info = op_info(kind);
  if (info.has(kFloatOperands)) return OperandDTypes::floating;
  if (info.has(kWideNumericOperands)) return OperandDTypes::wide_numeric;
  if (info.has(kNumericOperands)) return OperandDTypes::numeric;
  return OperandDTypes::any; // or checked by the op's shape inference
}

namespace {

bool admits(OperandDTypes rule, DType dtype) {
  switch (rule) {
  case OperandDTypes::any: return true;
  case OperandDTypes::numeric: return dtype != DType::boolean;
  case OperandDTypes::wide_numeric: return dtype != DType::boolean && dtype != DType::i8 && dtype != DType::u8;
  case OperandDTypes::floating: return dtype_is_float(dtype);
  }
  return false;
}

const char* admitted_text(OperandDTypes rule) {
  switch (rule) {
  case OperandDTypes::any: return "any dtype";
  case OperandDTypes::numeric: return "any dtype but i1 (bool)";
  case OperandDTypes::wide_numeric: return "f32, f64, f16, bf16, i32 or i64";
  case OperandDTypes::floating: return "f32, f64, f16 or bf16";
  }
  return "";
}

} // namespace

void check_operand_dtypes(OpKind kind, std::span<const ValueType> operands) {
  const OperandDTypes rule = operand_dtypes(kind);
  for (size_t i = 0; i < operands.size(); ++i)
    if (!admits(rule, operands[i].dtype))
      throw InferError("operand " + std::to_string(i) + " is " + dtype_name(operands[i].dtype) +
                           ", which this op does not compute in (it takes " + admitted_text(rule) + "): cast it first",
                       ErrorKind::dtype);
}

} // namespace kiln::ir
