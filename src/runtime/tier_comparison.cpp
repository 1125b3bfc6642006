#include "ir/ops.hpp"
#include "ir/text/printer.hpp"
#include "runtime/executable.hpp"
#include "runtime/weight_map.hpp"
#include <cmath>
#include <kiln/compare_tiers.hpp>
#include <sstream>

namespace kiln::debug {

namespace {

bool same(double want, double got, double tolerance) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::isfinite(got) && std::fabs(got - want) <= tolerance * (1 + std::fabs(want));
}

// The first element where jit differs from interp, with the errors over both tiers' finite values.
std::optional<TierDifference> difference(const Tensor& interp, const Tensor& jit, double tolerance) {
  TierDifference d{"", "", "", interp, jit, -1, 0, 0};
  for (int64_t i = 0; i < interp.numel(); ++i) {
    const double want = interp.item_as_double(i), got = jit.item_as_double(i);
    if (d.first_index < 0 && !same(want, got, tolerance)) d.first_index = i;
    if (std::isfinite(want) && std::isfinite(got)) {
      d.max_abs_error = std::max(d.max_abs_error, std::fabs(got - want));
      if (want != 0) d.max_rel_error = std::max(d.max_rel_error, std::fabs(got - want) / std::fabs(want));
    }
  }
  if (d.first_index < 0) return std::nullopt;
  return d;
}

} // namespace

std::string TierDifference::message() const {
  std::ostringstream out;
  out << value << " = " << op << " differs between the tiers at element " << first_index << ": interpreter "
      << interp.item_as_double(first_index) << ", jit " << jit.item_as_double(first_index) << " (max abs error "
      << max_abs_error << ", max relative error " << max_rel_error << " over the finite elements)";
  if (!fused_before.empty()) out << "; the JIT fused it with " << fused_before << ", whose results it does not keep";
  return out.str();
}

namespace {

// Both tiers' executables of one static graph, every value kept, compared in graph order.
std::optional<TierDifference> first_difference(const std::shared_ptr<const ir::Function>& graph,
                                               const runtime::WeightMap& weights, const std::vector<Tensor>& inputs,
                                               double tolerance) {
  std::vector<Tensor> interp_values, jit_values;
  (*runtime::find_tier("interp"))(graph, weights)->run(inputs, {.preserved = &interp_values});
  (*runtime::find_tier("jit"))(graph, weights)->run(inputs, {.preserved = &jit_values});
  const std::vector<std::string> names = ir::printed_value_names(*graph);
  std::string fused; // ops since the last value both tiers kept
  for (const ir::Op& op : graph->ops) {
    if (op.kind == ir::OpKind::constant || op.kind == ir::OpKind::constant_external) continue; // bound data
    for (ir::ValueId v : op.results) {
      if (!jit_values.at(v).defined() || !interp_values.at(v).defined()) {
        fused += (fused.empty() ? "" : ", ") + ("kiln." + std::string(ir::op_info(op.kind).name)) + " " + names[v];
        continue;
      }
      if (auto d = difference(interp_values[v], jit_values[v], tolerance)) {
        d->op = ir::op_place(op);
        d->value = names[v];
        d->fused_before = fused;
        return d;
      }
      fused.clear();
    }
  }
  return std::nullopt;
}

} // namespace

namespace detail {

std::optional<TierDifference> compare_tiers(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs,
                                            double tolerance) {
  if (!runtime::find_tier("interp") || !runtime::find_tier("jit"))
    throw Error(ErrorKind::unsupported, "debug::compare_tiers: this build has no JIT tier (-Djit=disabled)");
  const kiln::detail::TreeLeaves args = core.tensor_arguments(inputs);
  std::optional<TierDifference> found;
  core.inspect_signature(args, inputs,
                         [&](const std::shared_ptr<const ir::Function>& graph, const runtime::WeightMap& weights,
                             const ir::InlinedCalls&) { found = first_difference(graph, weights, inputs, tolerance); });
  return found;
}

} // namespace detail

} // namespace kiln::debug
