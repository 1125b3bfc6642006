#include "exec/non_finite_check.hpp"
#include "core/half.hpp"
#include "ir/ops.hpp"
#include "ir/text/value_labels.hpp"
#include <cmath>
#include <kiln/error.hpp>
#include <unordered_set>

namespace kiln::exec {

namespace {

struct NonFiniteCount {
  int64_t nan = 0;
  int64_t inf = 0;
};

template <class T, class ToFloat> NonFiniteCount count_in(const View& view, ToFloat to_float) {
  NonFiniteCount count;
  const T* data = view.as<const T>();
  for (int64_t i = 0, n = view.numel(); i < n; ++i) {
    const auto x = to_float(data[i]);
    count.nan += std::isnan(x);
    count.inf += std::isinf(x);
  }
  return count;
}

NonFiniteCount count_non_finite(const View& view) {
  const auto same = [](auto x) { return x; };
  switch (view.dtype) {
  case DType::f32: return count_in<float>(view, same);
  case DType::f64: return count_in<double>(view, same);
  case DType::f16: return count_in<uint16_t>(view, f16_to_float);
  case DType::bf16: return count_in<uint16_t>(view, bf16_to_float);
  case DType::i8:
  case DType::i32:
  case DType::i64:
  case DType::u8:
  case DType::boolean: return {};
  }
  return {};
}

// The ops a lowered step took: those between its results and its operands, constants aside (they
// are bound, not run).
size_t fused_op_count(const ir::Function& graph, std::span<const ir::ValueId> operands,
                      std::span<const ir::ValueId> results) {
  std::unordered_set<ir::ValueId> outside(operands.begin(), operands.end());
  std::unordered_set<int32_t> ops;
  std::vector<ir::ValueId> pending(results.begin(), results.end());
  while (!pending.empty()) {
    const ir::ValueId v = pending.back();
    pending.pop_back();
    const int32_t def = graph.values.at(v).def_op;
    if (!outside.insert(v).second || def == ir::kNoOp) continue;
    const ir::Op& op = graph.ops[size_t(def)];
    if (op.kind == ir::OpKind::constant || op.kind == ir::OpKind::constant_external) continue;
    if (ops.insert(def).second) pending.insert(pending.end(), op.operands.begin(), op.operands.end());
  }
  return ops.size();
}

// "%7 = kiln.log at model.cpp:42:17", or for a lowered step of several ops the step and its first
// op, with how to narrow it down to one op.
std::string describe_value(const ExecutionPlan& plan, size_t index, ir::ValueId value) {
  const PlanStep& step = plan.steps()[index];
  const std::string name = ir::value_name(plan.graph(), value);
  if (!step.lowered) return name + " = " + ir::op_place(*step.op);
  const std::span<const ir::ValueId> values(plan.view_values().data() + step.first_view,
                                            step.num_inputs + step.num_outputs);
  const size_t ops = fused_op_count(plan.graph(), values.first(step.num_inputs), values.subspan(step.num_inputs));
  const std::string& implementation = plan.walk(index).back().implementation;
  if (ops <= 1) return name + " = " + ir::op_place(*step.op) + " (run by " + implementation + ")";
  return name + ", the result of a fused step of " + std::to_string(ops) + " ops run by " + implementation +
         " whose first op is " + ir::op_place(*step.op) + " (KILN_JIT=off runs each op on its own),";
}

// Bound values (constants, weights, what was computed from them when planning) and aliases are not
// produced by the call: a constant -inf mask is not an error.
bool computes_outputs(StepKind kind) {
  switch (kind) {
  case StepKind::kernel:
  case StepKind::runner:
  case StepKind::buffer_store: return true;
  case StepKind::bind:
  case StepKind::alias: return false;
  }
  return false;
}

} // namespace

void check_finite_outputs(const ExecutionPlan& plan, size_t index, std::span<const View> outputs) {
  const PlanStep& step = plan.steps()[index];
  if (!computes_outputs(step.kind)) return;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NonFiniteCount count = count_non_finite(outputs[i]);
    if (!count.nan && !count.inf) continue;
    const ir::ValueId value = plan.view_values()[step.first_view + step.num_inputs + i];
    throw Error(ErrorKind::numeric, "KILN_DEBUG_NANS: " + describe_value(plan, index, value) + " produced " +
                                        std::to_string(count.nan) + " NaN and " + std::to_string(count.inf) +
                                        " Inf of " + std::to_string(outputs[i].numel()) + " values");
  }
}

} // namespace kiln::exec
