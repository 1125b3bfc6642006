#include "jit/tier/graph_rewriter.hpp"
#include "ir/text/value_labels.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::tier {

GraphRewriter::GraphRewriter(const ir::Function& source, const runtime::WeightMap& weights)
    : source_(source), weights_(weights), uses_(source.values.size(), 0), last_user_(source.values.size()),
      state_(source.ops.size(), State::open), walks_(source.ops.size()), scheduled_(source.ops.size()),
      produced_(source.values.size(), false) {
  for (size_t id = 0; id < source.ops.size(); ++id)
    for (ir::ValueId v : source.ops[id].operands) {
      ++uses_.at(v);
      last_user_[v] = ir::OpId(id);
    }
  for (ir::ValueId v : source.outputs)
    ++uses_.at(v);
  for (ir::ValueId arg : source.args)
    produced_.at(arg) = true;
}

std::optional<ir::OpId> GraphRewriter::single_user(ir::ValueId v) const {
  if (uses_.at(v) != 1) return std::nullopt;
  return last_user_[v]; // empty when the one use is a graph output
}

const ir::Op* GraphRewriter::producer(ir::ValueId v) const {
  const int32_t def = source_.values.at(v).def_op;
  return def == ir::kNoOp ? nullptr : &source_.ops[size_t(def)];
}

void GraphRewriter::emit_producers(std::span<const ir::ValueId> values) {
  for (ir::ValueId v : values) {
    if (produced_.at(v)) continue;
    const int32_t def = source_.values[v].def_op;
    if (def == ir::kNoOp || state_[size_t(def)] != State::deferred)
      throw Error(ErrorKind::internal,
                  "jit partitioner: value " + ir::value_name(source_, v) + " used before it is emitted");
    // The step it waited for did not take it: it runs on its own after all, as the last entry of its list.
    exec::ImplementationWalk& walk = walks_[size_t(def)];
    if (!walk.empty()) walk.back().refusal = "the step it waited for did not take it";
    walk.push_back(exec::Verdict{"interp", std::nullopt, {}});
    keep_op(ir::OpId(def));
  }
}

void GraphRewriter::record_walk(ir::OpId id, exec::ImplementationWalk walk) { walks_.at(id) = std::move(walk); }

void GraphRewriter::keep_op(ir::OpId id) {
  const ir::Op& op = source_.ops.at(id);
  emit_producers(op.operands);
  state_[id] = State::emitted;
  for (ir::ValueId v : op.results)
    produced_[v] = true;
  steps_.emplace_back(id);
}

void GraphRewriter::take(ir::OpId id, std::string_view implementation, const std::string& note) {
  exec::ImplementationWalk& walk = walks_.at(id);
  const bool chosen = state_[id] == State::open && !walk.empty() && !walk.back().refusal &&
                      walk.back().implementation == implementation;
  if (chosen)
    walk.back().note = note;
  else
    walk = {exec::Verdict{std::string(implementation), std::nullopt, note}};
  state_[id] = State::absorbed;
}

void GraphRewriter::emit_step(exec::LoweredStep step) {
  emit_producers(step.operands);
  for (ir::ValueId v : step.results)
    produced_.at(v) = true;
  steps_.emplace_back(std::move(step));
}

void GraphRewriter::emit_step_at(ir::OpId at_op, exec::LoweredStep step) { scheduled_.at(at_op) = std::move(step); }

void GraphRewriter::emit_scheduled(ir::OpId id) {
  if (!scheduled_.at(id)) return;
  emit_step(std::move(*scheduled_[id]));
  scheduled_[id].reset();
}

Partition GraphRewriter::finish() {
  emit_producers(source_.outputs);
  Partition partition;
  for (size_t id = 0; id < walks_.size(); ++id) {
    if (walks_[id].empty() || walks_[id].back().refusal)
      throw Error(ErrorKind::internal, "jit partitioner: no implementation took " + ir::op_name(source_, ir::OpId(id)));
    ++partition.ops_per_lowering[walks_[id].back().implementation];
  }
  partition.steps = std::move(steps_);
  partition.walks = std::move(walks_);
  return partition;
}

} // namespace kiln::jitc::tier
