#pragma once
#include <initializer_list>
#include <kiln/dtype.hpp>
#include <kiln/scalar.hpp>
#include <kiln/tensor.hpp>
#include <variant>

// PyTorch's type promotion (torch.promote_types, torch.result_type), which every binary op of the
// functional API applies when it is traced, so the graph holds the casts and both tiers agree.
namespace kiln {

// The smallest dtype both a and b convert to without losing their category: bool < integer <
// floating; i32 and i64 give i64, f16 and bf16 give f32, u8 and i8 give i32 (kiln has no i16).
DType promote_types(DType a, DType b);

// The result dtype of an op over these operands: categories first (a higher category wins), and
// within the highest category tensors with dims over 0-d tensors over scalars; a floating scalar
// with integer tensors gives the default float dtype (f32), an integer scalar with bool tensors i64.
using PromotionOperand = std::variant<Tensor, Scalar>;
DType result_type(std::initializer_list<PromotionOperand> operands);

} // namespace kiln
