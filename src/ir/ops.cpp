#include "ir/ops.hpp"
#include "core/checked_arithmetic.hpp"
#include "ir/custom_ops.hpp"
#include "ir/operand_dtypes.hpp"
#include "ir/shape_inference.hpp"
#include <array>

namespace kiln::ir {

namespace {

// Refuses results too large to exist, before anything sizes a buffer from them.
std::vector<ValueType> checked_results(std::vector<ValueType> results, const std::string& where) {
  for (size_t i = 0; i < results.size(); ++i)
    checked_static_byte_size(results[i].shape, results[i].dtype, where + "result " + std::to_string(i));
  return results;
}

// In OpKind order: both come from op_table.def.
constexpr std::array<OpInfo, kNumOpKinds> kOpTable{{
#define KILN_OP(n, min, max, cls, inferred, decoder, traits)                                                           \
  {OpKind::n, #n, min, max, OpClass::cls, inferred, decoder, traits},
#include "ir/op_table.def"
#undef KILN_OP
}};

} // namespace

const OpInfo& op_info(OpKind kind) { return kOpTable[size_t(kind)]; }

std::string op_place(const Op& op) {
  std::string place = "kiln." + std::string(op_info(op.kind).name);
  if (op.loc.known()) place += " at " + op.loc.to_string();
  return place;
}

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (const OpInfo& info : kOpTable)
    if (info.name == name) return info.kind;
  return std::nullopt;
}

std::vector<ValueType> infer_op(OpKind kind, std::span<const ValueType> operands, const Attrs& attrs,
                                const SourceLoc& loc) {
  const OpInfo& info = op_info(kind);
  std::string where = "kiln." + std::string(info.name) + " at " + loc.to_string() + ": ";
  int n = int(operands.size());
  if (n < info.min_operands || (info.max_operands >= 0 && n > info.max_operands))
    throw Error(ErrorKind::shape, where + "takes " + std::to_string(info.min_operands) +
                                      (info.max_operands == info.min_operands ? ""
                                       : info.max_operands < 0                ? " or more"
                                                               : " to " + std::to_string(info.max_operands)) +
                                      " operands, got " + std::to_string(n));
  if (kind == OpKind::custom) return checked_results(infer_custom_op(operands, attrs, loc), where);
  if (!info.infer) throw Error(ErrorKind::internal, where + "has no shape inference");
  std::vector<ValueType> results;
  try {
    check_operand_dtypes(kind, operands);
    results = info.infer(operands, decode_params(kind, attrs, operands));
  } catch (const AttrError& e) {
    throw Error(ErrorKind::spec, where + e.what());
  } catch (const SizeError& e) {
    throw SizeError(where + e.message());
  } catch (const InferError& e) {
    throw Error(e.kind, where + e.what());
  } catch (const Error& e) {
    throw Error(e.kind(), where + e.message());
  }
  return checked_results(std::move(results), where);
}

} // namespace kiln::ir
