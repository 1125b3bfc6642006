#include "ir/operand_dtypes.hpp"

namespace kiln::ir {

OperandDTypes operand_dtypes(OpKind kind) {
  switch (kind) {
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::relu:
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round:
  case OpKind::sign:
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::pow:
  case OpKind::maximum:
  case OpKind::minimum:
  case OpKind::floor_divide:
  case OpKind::remainder:
  case OpKind::clamp:
  case OpKind::reduce_sum:
  case OpKind::reduce_prod:
  case OpKind::argmax:
  case OpKind::argmin:
  case OpKind::topk: return OperandDTypes::numeric;
  case OpKind::matmul: return OperandDTypes::wide_numeric;
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::gelu:
  case OpKind::silu:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos:
  case OpKind::hardsigmoid:
  case OpKind::hardswish:
  case OpKind::leaky_relu:
  case OpKind::elu:
  case OpKind::softplus:
  case OpKind::log1p:
  case OpKind::expm1:
  case OpKind::reduce_mean:
  case OpKind::layer_norm:
  case OpKind::rms_norm:
  case OpKind::batch_norm:
  case OpKind::conv2d:
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d: return OperandDTypes::floating;
  default: return OperandDTypes::any; // or checked by the op's shape inference
  }
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
