#include "jit/elementwise/region_check.hpp"
#include "ir/ops.hpp"
#include "jit/elementwise/emitter.hpp"
#include <cmath>
#include <optional>

namespace kiln::jitc {

using ir::OpKind;

namespace {

bool is_supported_dtype(DType dtype) { return dtype == DType::f32 || dtype == DType::i32 || dtype == DType::boolean; }

std::string node_name(const Region& region, size_t index) {
  return "node " + std::to_string(index) + " (kiln." + std::string(ir::op_info(region.nodes[index].kind).name) + ")";
}

bool refuse(std::string* why_not, std::string reason) {
  if (why_not) *why_not = std::move(reason);
  return false;
}

std::optional<DType> cast_target(const RegionNode& node) {
  if (const auto* cast = std::get_if<ir::CastParams>(&node.params)) return cast->dtype;
  return std::nullopt;
}

// The op table's arity; a constant is a literal with none, and pow may take its exponent as
// `scalar` instead of a second argument.
size_t expected_arity(const RegionNode& node) {
  if (node.kind == OpKind::constant) return 0;
  if (node.kind == OpKind::pow) return node.args.size() == 2 ? 2 : 1;
  return size_t(ir::op_info(node.kind).min_operands);
}

// The result dtype the op gives for these argument dtypes, or an error message.
std::optional<DType> infer_dtype(const Region& region, const RegionNode& node, std::string* error) {
  auto arg = [&](size_t i) { return arg_dtype(region, node.args[i]); };
  auto all_f32 = [&] {
    for (size_t i = 0; i < node.args.size(); ++i) {
      if (arg(i) == DType::f32) continue;
      *error = "argument " + std::to_string(i) + " is " + dtype_name(arg(i)) + ", expected f32";
      return false;
    }
    return true;
  };
  const OpKind kind = node.kind;
  if (kind == OpKind::constant) return DType::f32;
  if (kind == OpKind::pow && node.args.size() == 2) {
    *error = "only a constant exponent is fused (pow with one argument and `scalar`)";
    return std::nullopt;
  }
  if (kind == OpKind::pow && !std::isfinite(node.scalar)) {
    *error = "the exponent must be finite";
    return std::nullopt;
  }
  if (kind == OpKind::compare) {
    if (!std::holds_alternative<ir::CompareParams>(node.params)) {
      *error = "compare needs its predicate";
      return std::nullopt;
    }
    return all_f32() ? std::optional(DType::boolean) : std::nullopt;
  }
  if (kind == OpKind::where) {
    if (arg(0) != DType::boolean || arg(1) != arg(2)) {
      *error = std::string("expects (bool, T, T), got (") + dtype_name(arg(0)) + ", " + dtype_name(arg(1)) + ", " +
               dtype_name(arg(2)) + ")";
      return std::nullopt;
    }
    return arg(1);
  }
  if (kind == OpKind::cast) {
    if (auto target = cast_target(node); target && is_supported_dtype(*target)) return target;
    *error = "cast needs a dtype of f32, i32 or i1";
    return std::nullopt;
  }
  if (kind == OpKind::gelu && !std::holds_alternative<ir::GeluParams>(node.params)) {
    *error = "gelu needs its form";
    return std::nullopt;
  }
  if ((kind == OpKind::leaky_relu && !std::holds_alternative<ir::LeakyReluParams>(node.params)) ||
      (kind == OpKind::elu && !std::holds_alternative<ir::EluParams>(node.params)) ||
      (kind == OpKind::softplus && !std::holds_alternative<ir::SoftplusParams>(node.params))) {
    *error = std::string(ir::op_info(kind).name) + " needs its parameters";
    return std::nullopt;
  }
  // Every other elementwise op of the op table computes f32 from f32.
  if (!ir::is_elementwise(kind)) {
    *error = "not an elementwise op the JIT fuses";
    return std::nullopt;
  }
  return all_f32() ? std::optional(DType::f32) : std::nullopt;
}

bool check_args(const Region& region, size_t index, std::string* why_not) {
  const RegionNode& node = region.nodes[index];
  if (node.args.size() != expected_arity(node))
    return refuse(why_not, node_name(region, index) + ": expected " + std::to_string(expected_arity(node)) +
                               " arguments, got " + std::to_string(node.args.size()));
  for (int32_t a : node.args) {
    bool valid = a >= 0 ? size_t(a) < index : size_t(-int64_t(a) - 1) < region.inputs.size();
    if (!valid)
      return refuse(why_not, node_name(region, index) + ": argument " + std::to_string(a) +
                                 " names neither an earlier node nor an input");
  }
  return true;
}

} // namespace

DType arg_dtype(const Region& region, int32_t arg) {
  if (arg >= 0) return region.nodes[size_t(arg)].dtype;
  return region.inputs[size_t(-int64_t(arg) - 1)].dtype;
}

bool gelu_uses_tanh(const RegionNode& node) {
  const auto* gelu = std::get_if<ir::GeluParams>(&node.params);
  return gelu && gelu->form == ir::GeluForm::tanh;
}

bool check_region(const Region& region, std::string* why_not) {
  for (size_t k = 0; k < region.inputs.size(); ++k)
    if (!is_supported_dtype(region.inputs[k].dtype))
      return refuse(why_not, "input " + std::to_string(k) + " has dtype " + dtype_name(region.inputs[k].dtype) +
                                 " (f32, i32 or i1 only)");
  if (region.nodes.empty() || region.outputs.empty()) return refuse(why_not, "the region has no nodes or no outputs");
  if (region.nodes.size() > kMaxRegionNodes)
    return refuse(why_not, "the region has " + std::to_string(region.nodes.size()) + " nodes, more than " +
                               std::to_string(kMaxRegionNodes));
  for (size_t i = 0; i < region.nodes.size(); ++i) {
    if (!check_args(region, i, why_not)) return false;
    std::string error;
    std::optional<DType> inferred = infer_dtype(region, region.nodes[i], &error);
    if (!inferred) return refuse(why_not, node_name(region, i) + ": " + error);
    if (*inferred != region.nodes[i].dtype)
      return refuse(why_not, node_name(region, i) + ": declared dtype " + dtype_name(region.nodes[i].dtype) +
                                 " but the op gives " + dtype_name(*inferred));
  }
  for (int32_t out : region.outputs)
    if (out < 0 || size_t(out) >= region.nodes.size())
      return refuse(why_not, "output " + std::to_string(out) + " is not a node index");
  return true;
}

} // namespace kiln::jitc
