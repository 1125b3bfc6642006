#pragma once
#include "ir/ops.hpp"

// Which dtypes an op computes in where its shape inference leaves that open: the k*Operands trait
// of its op table row. The interpreter has a kernel for every dtype an op's rule admits (the JIT
// may refuse one and fall back to it); infer_op refuses the others when the op is traced or
// parsed, never when the graph is called.
namespace kiln::ir {

enum class OperandDTypes {
  any,          // every dtype kiln has
  numeric,      // every dtype but bool: integers wrap around, as torch's
  wide_numeric, // every dtype but bool, i8 and u8
  floating,     // f32, f64, f16 and bf16
};

OperandDTypes operand_dtypes(OpKind kind);

// InferError(dtype) naming the first operand whose dtype the op's rule does not admit.
void check_operand_dtypes(OpKind kind, std::span<const ValueType> operands);

} // namespace kiln::ir
