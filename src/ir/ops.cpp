#include "ir/ops.hpp"
#include "core/checked_arithmetic.hpp"
#include "ir/custom_ops.hpp"
#include "ir/shape_inference.hpp"
#include <array>

namespace kiln::ir {

namespace {

constexpr int kAny = -1;

OpInfo make(OpKind kind, std::string_view name) {
  using C = OpClass;
  namespace I = infer;
  namespace D = decode;
  switch (kind) {
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::relu: return {kind, name, 1, 1, C::unary, I::unary, D::none};
  case OpKind::exp:
  case OpKind::log:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::silu:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos: return {kind, name, 1, 1, C::unary, I::unary, D::none, kTranscendental};
  case OpKind::gelu: return {kind, name, 1, 1, C::unary, I::unary, D::gelu, kTranscendental};
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::maximum:
  case OpKind::minimum: return {kind, name, 2, 2, C::binary, I::broadcast, D::none};
  case OpKind::pow: return {kind, name, 2, 2, C::binary, I::broadcast, D::none, kTranscendental};
  case OpKind::compare: return {kind, name, 2, 2, C::elementwise_other, I::compare, D::compare};
  case OpKind::where: return {kind, name, 3, 3, C::elementwise_other, I::where, D::none};
  case OpKind::cast: return {kind, name, 1, 1, C::elementwise_other, I::cast, D::cast};
  case OpKind::clamp: return {kind, name, 3, 3, C::elementwise_other, I::broadcast, D::none};
  case OpKind::reduce_sum:
  case OpKind::reduce_mean:
  case OpKind::reduce_max:
  case OpKind::reduce_min: return {kind, name, 1, 1, C::reduction, I::reduce, D::reduce};
  case OpKind::argmax: return {kind, name, 1, 1, C::reduction, I::argmax, D::argmax};
  case OpKind::softmax:
  case OpKind::log_softmax: return {kind, name, 1, 1, C::normalization, I::softmax, D::axis};
  case OpKind::layer_norm: return {kind, name, 1, 3, C::normalization, I::layer_norm, D::norm};
  case OpKind::rms_norm: return {kind, name, 1, 2, C::normalization, I::layer_norm, D::norm};
  case OpKind::batch_norm: return {kind, name, 3, 5, C::normalization, I::batch_norm, D::batch_norm};
  case OpKind::matmul: return {kind, name, 2, 2, C::linalg, I::matmul, D::none};
  case OpKind::conv2d: return {kind, name, 2, 3, C::nn, I::conv2d, D::conv};
  case OpKind::max_pool2d: return {kind, name, 1, 1, C::nn, I::pool2d, D::max_pool};
  case OpKind::avg_pool2d: return {kind, name, 1, 1, C::nn, I::pool2d, D::avg_pool};
  case OpKind::reshape: return {kind, name, 1, 1, C::shape, I::reshape, D::shape};
  case OpKind::transpose: return {kind, name, 1, 1, C::shape, I::transpose, D::transpose};
  case OpKind::broadcast_to: return {kind, name, 1, 1, C::shape, I::broadcast_to, D::shape};
  case OpKind::concat: return {kind, name, 1, kAny, C::shape, I::concat, D::axis};
  case OpKind::split: return {kind, name, 1, 1, C::shape, I::split, D::split};
  case OpKind::slice: return {kind, name, 1, 1, C::shape, I::slice, D::slice};
  case OpKind::squeeze: return {kind, name, 1, 1, C::shape, I::squeeze, D::squeeze};
  case OpKind::unsqueeze: return {kind, name, 1, 1, C::shape, I::unsqueeze, D::unsqueeze};
  case OpKind::gather: return {kind, name, 2, 2, C::shape, I::gather, D::axis};
  case OpKind::pad: return {kind, name, 1, 1, C::shape, I::pad, D::pad};
  case OpKind::constant: return {kind, name, 0, 0, C::creation, I::constant, D::constant, kNeverFolded};
  case OpKind::constant_external: return {kind, name, 0, 0, C::creation, nullptr, D::external, kNeverFolded};
  case OpKind::full: return {kind, name, 0, 0, C::creation, I::full, D::full};
  case OpKind::arange: return {kind, name, 0, 0, C::creation, I::arange, D::arange};
  case OpKind::buffer_store:
    return {kind, name, 2, 2, C::effect, I::buffer_store, D::none, kSideEffects | kNeverFolded};
  // A call has the effects of its callee (ir/passes/side_effects.hpp).
  case OpKind::call: return {kind, name, 0, kAny, C::call, nullptr, D::call, kNeverFolded};
  // An extension may do anything.
  case OpKind::custom: return {kind, name, 0, kAny, C::custom, nullptr, D::custom, kSideEffects | kNeverFolded};
  }
  return {kind, name, 0, 0, C::custom, nullptr, D::none};
}

// Refuses results too large to exist, before anything sizes a buffer from them.
std::vector<ValueType> checked_results(std::vector<ValueType> results, const std::string& where) {
  for (size_t i = 0; i < results.size(); ++i)
    checked_static_byte_size(results[i].shape, results[i].dtype, where + "result " + std::to_string(i));
  return results;
}

const std::array<OpInfo, kNumOpKinds>& table() {
  static const std::array<OpInfo, kNumOpKinds> t = [] {
    std::array<OpInfo, kNumOpKinds> a{};
    size_t i = 0;
#define KILN_OP_ROW(n) a[i] = make(OpKind::n, #n), ++i;
    KILN_OP_KINDS(KILN_OP_ROW)
#undef KILN_OP_ROW
    return a;
  }();
  return t;
}

} // namespace

const OpInfo& op_info(OpKind kind) { return table()[size_t(kind)]; }

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (const OpInfo& info : table())
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
    results = info.infer(operands, decode_params(kind, attrs, operands));
  } catch (const AttrError& e) {
    throw Error(ErrorKind::spec, where + e.what());
  } catch (const SizeError& e) {
    throw SizeError(where + e.message());
  } catch (const InferError& e) {
    throw Error(ErrorKind::shape, where + e.what());
  } catch (const Error& e) {
    throw Error(e.kind(), where + e.message());
  }
  return checked_results(std::move(results), where);
}

} // namespace kiln::ir
