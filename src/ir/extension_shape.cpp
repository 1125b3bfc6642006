#include "ir/extension_shape.hpp"
#include "ir/ops.hpp"
#include <algorithm>
#include <array>

namespace kiln::ir {

namespace {

static_assert(int(DType::f32) == KILN_EXT_F32 && int(DType::f64) == KILN_EXT_F64 && int(DType::f16) == KILN_EXT_F16 &&
                  int(DType::bf16) == KILN_EXT_BF16 && int(DType::i8) == KILN_EXT_I8 &&
                  int(DType::i32) == KILN_EXT_I32 && int(DType::i64) == KILN_EXT_I64 && int(DType::u8) == KILN_EXT_U8 &&
                  int(DType::boolean) == KILN_EXT_BOOL,
              "kiln_ext_dtype must list kiln::DType in the same order");

// Symbolic names of the inputs, numbered in order of first appearance: name i is token -1 - i.
class SymbolTokens {
public:
  int64_t token(const std::string& name) {
    auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) it = names_.insert(names_.end(), name);
    return -1 - int64_t(it - names_.begin());
  }
  const std::string* name(int64_t token) const {
    const int64_t index = -1 - token;
    return index >= 0 && index < int64_t(names_.size()) ? &names_[size_t(index)] : nullptr;
  }

private:
  std::vector<std::string> names_;
};

kiln_ext_tensor_desc to_desc(const ValueType& type, size_t index, SymbolTokens& symbols) {
  if (type.rank() > KILN_EXT_MAX_RANK)
    throw InferError("input " + std::to_string(index) + " has rank " + std::to_string(type.rank()) +
                     "; extension ops take ranks up to " + std::to_string(KILN_EXT_MAX_RANK));
  kiln_ext_tensor_desc desc{};
  desc.dtype = int32_t(type.dtype);
  desc.rank = int32_t(type.rank());
  for (size_t d = 0; d < type.shape.size(); ++d)
    desc.dims[d] = type.shape[d].is_symbolic() ? symbols.token(type.shape[d].name()) : type.shape[d].size();
  return desc;
}

ValueType from_desc(const kiln_ext_tensor_desc& desc, size_t index, const SymbolTokens& symbols) {
  const std::string which = "the shape function's output " + std::to_string(index);
  if (desc.dtype < KILN_EXT_F32 || desc.dtype > KILN_EXT_BOOL)
    throw InferError(which + " has dtype " + std::to_string(desc.dtype) + ", which is no kiln_ext_dtype");
  if (desc.rank < 0 || desc.rank > KILN_EXT_MAX_RANK)
    throw InferError(which + " has rank " + std::to_string(desc.rank) + "; expected 0 to " +
                     std::to_string(KILN_EXT_MAX_RANK));
  ValueType type{DType(desc.dtype), {}, false};
  for (int32_t d = 0; d < desc.rank; ++d) {
    const int64_t dim = desc.dims[d];
    if (dim >= 0) {
      type.shape.push_back(Dim(dim));
      continue;
    }
    const std::string* name = symbols.name(dim);
    if (!name)
      throw InferError(which + " has dim " + std::to_string(dim) + " at axis " + std::to_string(d) +
                       ", which is neither a size nor a symbolic dim of its inputs");
    type.shape.push_back(Dim(*name));
  }
  return type;
}

} // namespace

std::vector<ValueType> infer_extension_op(const ExtensionOp& op, const ExtensionAttrs& attrs,
                                          std::span<const ValueType> operands) {
  SymbolTokens symbols;
  std::vector<kiln_ext_tensor_desc> inputs;
  for (size_t i = 0; i < operands.size(); ++i)
    inputs.push_back(to_desc(operands[i], i, symbols));
  std::array<kiln_ext_tensor_desc, KILN_EXT_MAX_OUTPUTS> outputs{};
  int32_t count = KILN_EXT_MAX_OUTPUTS;
  char message[512] = {};
  const int status = op.infer(op.user_data, attrs.view(), inputs.data(), int32_t(inputs.size()), outputs.data(), &count,
                              message, sizeof message);
  message[sizeof message - 1] = '\0';
  if (status != 0)
    throw InferError(message[0] ? std::string(message)
                                : "the shape function returned " + std::to_string(status) + " without a message");
  if (count < 0 || count > KILN_EXT_MAX_OUTPUTS)
    throw InferError("the shape function gave " + std::to_string(count) + " outputs; expected 0 to " +
                     std::to_string(KILN_EXT_MAX_OUTPUTS));
  std::vector<ValueType> types;
  for (int32_t i = 0; i < count; ++i)
    types.push_back(from_desc(outputs[size_t(i)], size_t(i), symbols));
  return types;
}

} // namespace kiln::ir
