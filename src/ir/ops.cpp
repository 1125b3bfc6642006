#include "ir/ops.hpp"
#include "core/checked_arithmetic.hpp"
#include "ir/custom_ops.hpp"
#include "ir/shape_inference.hpp"
#include <array>
#include <type_traits>
#include <variant>

namespace kiln::ir {

namespace {

constexpr int kAny = -1;

OpInfo make(OpKind kind, std::string_view name) {
  using C = OpClass;
  namespace I = infer;
  switch (kind) {
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::relu:
  case OpKind::gelu:
  case OpKind::silu:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos: return {kind, name, 1, 1, C::unary, I::unary};
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::pow:
  case OpKind::maximum:
  case OpKind::minimum: return {kind, name, 2, 2, C::binary, I::binary};
  case OpKind::compare: return {kind, name, 2, 2, C::elementwise_other, I::compare};
  case OpKind::where: return {kind, name, 3, 3, C::elementwise_other, I::where};
  case OpKind::cast: return {kind, name, 1, 1, C::elementwise_other, I::cast};
  case OpKind::reduce_sum:
  case OpKind::reduce_mean:
  case OpKind::reduce_max:
  case OpKind::reduce_min: return {kind, name, 1, 1, C::reduction, I::reduce};
  case OpKind::argmax: return {kind, name, 1, 1, C::reduction, I::argmax};
  case OpKind::softmax:
  case OpKind::log_softmax: return {kind, name, 1, 1, C::normalization, I::softmax};
  case OpKind::layer_norm: return {kind, name, 1, 3, C::normalization, I::layer_norm};
  case OpKind::rms_norm: return {kind, name, 1, 2, C::normalization, I::layer_norm};
  case OpKind::batch_norm: return {kind, name, 3, 5, C::normalization, I::batch_norm};
  case OpKind::matmul: return {kind, name, 2, 2, C::linalg, I::matmul};
  case OpKind::conv2d: return {kind, name, 2, 3, C::nn, I::conv2d};
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d: return {kind, name, 1, 1, C::nn, I::pool2d};
  case OpKind::reshape: return {kind, name, 1, 1, C::shape, I::reshape};
  case OpKind::transpose: return {kind, name, 1, 1, C::shape, I::transpose};
  case OpKind::broadcast_to: return {kind, name, 1, 1, C::shape, I::broadcast_to};
  case OpKind::concat: return {kind, name, 1, kAny, C::shape, I::concat};
  case OpKind::split: return {kind, name, 1, 1, C::shape, I::split};
  case OpKind::slice: return {kind, name, 1, 1, C::shape, I::slice};
  case OpKind::squeeze: return {kind, name, 1, 1, C::shape, I::squeeze};
  case OpKind::unsqueeze: return {kind, name, 1, 1, C::shape, I::unsqueeze};
  case OpKind::gather: return {kind, name, 2, 2, C::shape, I::gather};
  case OpKind::pad: return {kind, name, 1, 1, C::shape, I::pad};
  case OpKind::constant: return {kind, name, 0, 0, C::creation, I::constant};
  case OpKind::constant_external: return {kind, name, 0, 0, C::creation, nullptr};
  case OpKind::full: return {kind, name, 0, 0, C::creation, I::full};
  case OpKind::arange: return {kind, name, 0, 0, C::creation, I::arange};
  case OpKind::buffer_store: return {kind, name, 2, 2, C::effect, I::buffer_store};
  case OpKind::call: return {kind, name, 0, kAny, C::call, nullptr};
  case OpKind::custom: return {kind, name, 0, kAny, C::custom, nullptr};
  }
  return {kind, name, 0, 0, C::custom, nullptr};
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

namespace {
template <class T, size_t I = 0> constexpr size_t alternative_of() {
  if constexpr (std::is_same_v<T, std::variant_alternative_t<I, decltype(Attr::value)>>)
    return I;
  else
    return alternative_of<T, I + 1>();
}
constexpr RequiredAttr kBool(std::string_view n) { return {n, alternative_of<bool>(), "bool"}; }
constexpr RequiredAttr kInt(std::string_view n) { return {n, alternative_of<int64_t>(), "i64"}; }
constexpr RequiredAttr kFloat(std::string_view n) { return {n, alternative_of<double>(), "f64"}; }
constexpr RequiredAttr kString(std::string_view n) { return {n, alternative_of<std::string>(), "string"}; }
constexpr RequiredAttr kInts(std::string_view n) { return {n, alternative_of<Attr::Ints>(), "array<i64>"}; }
constexpr RequiredAttr kShape(std::string_view n) { return {n, alternative_of<Shape>(), "shape"}; }
constexpr RequiredAttr kDType(std::string_view n) { return {n, alternative_of<DType>(), "dtype"}; }
constexpr RequiredAttr kTensor(std::string_view n) { return {n, alternative_of<Tensor>(), "dense tensor"}; }

constexpr RequiredAttr kNone[] = {{"", 0, ""}};
constexpr RequiredAttr kGelu[] = {kString("approximate")};
constexpr RequiredAttr kCompare[] = {kString("predicate")};
constexpr RequiredAttr kCast[] = {kDType("dtype")};
constexpr RequiredAttr kReduce[] = {kInts("axes"), kBool("keepdims")};
constexpr RequiredAttr kArgmax[] = {kInt("axis"), kBool("keepdims")};
constexpr RequiredAttr kAxis[] = {kInt("axis")};
constexpr RequiredAttr kConv[] = {kInts("stride"), kInts("padding"), kInts("dilation"), kInt("groups")};
constexpr RequiredAttr kMaxPool[] = {kInts("kernel"), kInts("stride"), kInts("padding")};
constexpr RequiredAttr kAvgPool[] = {kInts("kernel"), kInts("stride"), kInts("padding"), kBool("count_include_pad")};
constexpr RequiredAttr kShapeAttr[] = {kShape("shape")};
constexpr RequiredAttr kPerm[] = {kInts("perm")};
constexpr RequiredAttr kSplit[] = {kInt("axis"), kInts("sizes")};
constexpr RequiredAttr kSlice[] = {kInts("starts"), kInts("ends"), kInts("steps")};
constexpr RequiredAttr kAxes[] = {kInts("axes")};
constexpr RequiredAttr kPad[] = {kInts("pads"), kFloat("value")};
constexpr RequiredAttr kConstant[] = {kTensor("value")};
constexpr RequiredAttr kName[] = {kString("name")};
constexpr RequiredAttr kFull[] = {kShape("shape"), kFloat("value"), kDType("dtype")};
constexpr RequiredAttr kArange[] = {kFloat("start"), kFloat("stop"), kFloat("step"), kDType("dtype")};
constexpr RequiredAttr kCall[] = {kString("callee")};
constexpr RequiredAttr kCustom[] = {kString("op")};

std::span<const RequiredAttr> none() { return std::span(kNone, 0); }
} // namespace

std::span<const RequiredAttr> required_attrs(OpKind kind) {
  using K = OpKind;
  switch (kind) {
  case K::neg:
  case K::abs:
  case K::exp:
  case K::log:
  case K::sqrt:
  case K::rsqrt:
  case K::tanh:
  case K::sigmoid:
  case K::relu:
  case K::silu:
  case K::erf:
  case K::sin:
  case K::cos: return none();
  case K::gelu: return kGelu;
  case K::add:
  case K::sub:
  case K::mul:
  case K::div:
  case K::pow:
  case K::maximum:
  case K::minimum: return none();
  case K::compare: return kCompare;
  case K::where: return none();
  case K::cast: return kCast;
  case K::reduce_sum:
  case K::reduce_mean:
  case K::reduce_max:
  case K::reduce_min: return kReduce;
  case K::argmax: return kArgmax;
  case K::softmax:
  case K::log_softmax: return kAxis;
  // eps has a default where it is read (get_float_or), so only the axis is required.
  case K::layer_norm:
  case K::rms_norm: return kAxis;
  case K::batch_norm: return none();
  case K::matmul: return none();
  case K::conv2d: return kConv;
  case K::max_pool2d: return kMaxPool;
  case K::avg_pool2d: return kAvgPool;
  case K::reshape:
  case K::broadcast_to: return kShapeAttr;
  case K::transpose: return kPerm;
  case K::concat: return kAxis;
  case K::split: return kSplit;
  case K::slice: return kSlice;
  case K::squeeze:
  case K::unsqueeze: return kAxes;
  case K::gather: return kAxis;
  case K::pad: return kPad;
  case K::constant: return kConstant;
  case K::constant_external: return kName;
  case K::full: return kFull;
  case K::arange: return kArange;
  case K::buffer_store: return none();
  case K::call: return kCall;
  case K::custom: return kCustom;
  }
  return none();
}

std::optional<std::string> missing_attr(OpKind kind, const Attrs& attrs) {
  for (const RequiredAttr& required : required_attrs(kind)) {
    const Attr* attr = attrs.find(std::string(required.name));
    if (!attr) return "missing attribute '" + std::string(required.name) + "' (" + std::string(required.kind) + ")";
    if (attr->value.index() != required.alternative)
      return "attribute '" + std::string(required.name) + "' must be " + std::string(required.kind);
  }
  return std::nullopt;
}

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
    results = info.infer(operands, attrs);
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
