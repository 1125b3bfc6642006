#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include "runtime/executable.hpp"
#include "runtime/tier_set.hpp"
#include "runtime/weight_map.hpp"
#include <algorithm>
#include <cmath>
#include <kiln/compare_tiers.hpp>
#include <map>
#include <span>
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
  TierDifference d{.interp = interp, .jit = jit, .first_index = -1};
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
      << interp.item_as_double(first_index) << ", " << tier << " " << jit.item_as_double(first_index)
      << " (max abs error " << max_abs_error << ", max relative error " << max_rel_error
      << " over the finite elements)";
  const std::string who = tier == "jit" ? "the JIT" : "the " + tier;
  if (!fused_step.empty() && narrowed)
    out << "; it is inside a step " << who << " fused (" << fused_step
        << "), found by running the step's ops up to each one on " << who;
  else if (!fused_step.empty())
    out << "; " << who << " fused it with other ops (" << fused_step
        << ") whose results it does not keep, and no shorter run of them differs";
  return out.str();
}

namespace {

bool is_bound_data(const ir::Op& op) {
  return op.kind == ir::OpKind::constant || op.kind == ir::OpKind::constant_external;
}

// The ops `ops` (indices into graph, in order) as a function of the values they read from other ops,
// their constants copied in (so the JIT sees literals as it did), with the last op's results as
// outputs. `reads` receives the values the function's arguments stand for.
std::shared_ptr<const ir::Function> run_of_ops(const ir::Function& graph, std::span<const size_t> ops,
                                               std::vector<ir::ValueId>& reads) {
  auto fn = std::make_shared<ir::Function>();
  fn->name = graph.name;
  std::map<ir::ValueId, ir::ValueId> mapped;
  auto copy_op = [&](const ir::Op& op, std::vector<ir::ValueId> operands) {
    std::vector<ir::ValueType> types;
    for (ir::ValueId r : op.results)
      types.push_back(graph.type_of(r));
    const ir::OpId id = fn->add_op(op.kind, std::move(operands), types, op.attrs, op.loc);
    for (size_t r = 0; r < op.results.size(); ++r)
      mapped[op.results[r]] = fn->ops[id].results[r];
  };
  for (size_t index : ops) {
    const ir::Op& op = graph.ops[index];
    std::vector<ir::ValueId> operands;
    for (ir::ValueId v : op.operands) {
      if (!mapped.contains(v)) {
        const ir::ValueInfo& info = graph.values[v];
        if (info.def_op != ir::kNoOp && is_bound_data(graph.ops[info.def_op])) {
          copy_op(graph.ops[info.def_op], {});
        } else {
          mapped[v] = fn->add_arg(graph.type_of(v));
          reads.push_back(v);
        }
      }
      operands.push_back(mapped.at(v));
    }
    copy_op(op, std::move(operands));
  }
  for (ir::ValueId r : graph.ops[ops.back()].results)
    fn->outputs.push_back(mapped.at(r));
  return fn;
}

// Inside a step the JIT fused, the first op whose result differs when the step's ops up to it
// run alone on the JIT (their inputs the interpreter's values); nullopt when none does.
std::optional<TierDifference> first_difference_inside(const runtime::ExecutableFactory& other,
                                                      const std::shared_ptr<const ir::Function>& graph,
                                                      const runtime::WeightMap& weights,
                                                      const std::vector<Tensor>& interp_values,
                                                      std::span<const size_t> step_ops, double tolerance) {
  const std::vector<std::string> names = ir::value_names(*graph);
  for (size_t count = 1; count <= step_ops.size(); ++count) {
    std::vector<ir::ValueId> reads;
    auto run = run_of_ops(*graph, step_ops.first(count), reads);
    std::vector<Tensor> inputs;
    for (ir::ValueId v : reads)
      inputs.push_back(interp_values.at(v));
    const std::vector<Tensor> jit = other(run, weights)->run(inputs, {});
    const ir::Op& op = graph->ops[step_ops[count - 1]];
    for (size_t r = 0; r < op.results.size(); ++r)
      if (auto d = difference(interp_values.at(op.results[r]), jit.at(r), tolerance)) {
        d->op = ir::op_place(op);
        d->value = names[op.results[r]];
        return d;
      }
  }
  return std::nullopt;
}

// Both tiers' executables of one static graph, every value kept, compared in graph order; a
// difference in the result of a fused step is then looked for op by op inside it.
std::optional<TierDifference> first_difference(const runtime::ExecutableFactory& interp,
                                               const runtime::ExecutableFactory& other,
                                               const std::shared_ptr<const ir::Function>& graph,
                                               const runtime::WeightMap& weights, const std::vector<Tensor>& inputs,
                                               double tolerance) {
  std::vector<Tensor> interp_values, jit_values;
  interp(graph, weights)->run(inputs, {.preserved = &interp_values});
  other(graph, weights)->run(inputs, {.preserved = &jit_values});
  const std::vector<std::string> names = ir::value_names(*graph);
  std::vector<size_t> step_ops; // ops since the last value both tiers kept: the JIT fused them
  for (size_t index = 0; index < graph->ops.size(); ++index) {
    const ir::Op& op = graph->ops[index];
    if (is_bound_data(op)) continue;
    step_ops.push_back(index);
    for (ir::ValueId v : op.results) {
      if (!jit_values.at(v).defined() || !interp_values.at(v).defined()) continue;
      if (auto d = difference(interp_values[v], jit_values[v], tolerance)) {
        d->op = ir::op_place(op);
        d->value = names[v];
        if (step_ops.size() == 1) return d;
        for (size_t i : step_ops)
          d->fused_step += (d->fused_step.empty() ? "kiln." : ", kiln.") +
                           std::string(ir::op_info(graph->ops[i].kind).name) + " " + names[graph->ops[i].results.at(0)];
        if (auto inside = first_difference_inside(other, graph, weights, interp_values, step_ops, tolerance)) {
          inside->fused_step = d->fused_step;
          inside->narrowed = true;
          return inside;
        }
        return d;
      }
    }
    if (std::all_of(op.results.begin(), op.results.end(), [&](ir::ValueId v) { return jit_values.at(v).defined(); }))
      step_ops.clear();
  }
  return std::nullopt;
}

} // namespace

namespace detail {

std::optional<TierDifference> compare_tiers(kiln::detail::CallableCore& core, const std::vector<Tensor>& inputs,
                                            double tolerance, const std::string& tier) {
  const runtime::TierSet& tiers = core.session().tiers();
  const std::string other_name = tier.empty() ? core.promote_to() : tier;
  if (other_name != "jit" && other_name != "accelerator")
    throw Error(ErrorKind::spec, "debug::compare_tiers: no tier '" + other_name + "' to compare (jit or accelerator)");
  const runtime::ExecutableFactory* other = tiers.find(other_name);
  if (!tiers.interp() || !other)
    throw Error(ErrorKind::unsupported,
                other_name == "jit" ? "debug::compare_tiers: this build has no JIT tier (-Djit=disabled)"
                                    : "debug::compare_tiers: this build has no accelerator tier (-Dvulkan=disabled)");
  const kiln::detail::TreeLeaves args = core.tensor_arguments(inputs);
  std::optional<TierDifference> found;
  core.inspect_signature(args, inputs,
                         [&](const std::shared_ptr<const ir::Function>& graph, const runtime::WeightMap& weights,
                             const ir::InlinedCalls&) {
                           found = first_difference(*tiers.interp(), *other, graph, weights, inputs, tolerance);
                         });
  if (found) found->tier = other_name;
  return found;
}

} // namespace detail

} // namespace kiln::debug
