#include "jit/tier/graph_rewriter.hpp"
#include "ir/ops.hpp"
#include "runtime/log.hpp"

namespace kiln::jit::tier {

GraphRewriter::GraphRewriter(const ir::Function& source, const runtime::WeightMap& weights)
    : source_(source), weights_(weights), uses_(source.values.size(), 0), last_user_(source.values.size()),
      state_(source.ops.size(), State::open), lowering_(source.ops.size()), note_(source.ops.size()),
      refusals_(source.ops.size()), scheduled_(source.ops.size()), produced_(source.values.size(), false) {
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
      throw Error(ErrorKind::internal, "jit partitioner: value %" + std::to_string(v) + " used before it is emitted");
    copy_op(ir::OpId(def));
  }
}

void GraphRewriter::copy_op(ir::OpId id) {
  const ir::Op& original = source_.ops.at(id);
  emit_producers(original.operands);
  state_[id] = State::emitted;
  for (ir::ValueId v : original.results)
    produced_[v] = true;
  steps_.emplace_back(id);
  // An extension op runs its extension's kernel, not an interpreter kernel: say so in KILN_LOG=jit
  // and in ops_per_lowering.
  const bool extension = original.kind == ir::OpKind::custom;
  lowering_[id] = extension ? "extension" : "interp";
  if (extension) note_[id] = ir::params_of<ir::CustomParams>(original).op;
}

void GraphRewriter::take(ir::OpId id, const std::string& lowering, const std::string& note) {
  state_.at(id) = State::absorbed;
  lowering_[id] = lowering;
  note_[id] = note;
}

void GraphRewriter::refuse(ir::OpId id, const std::string& lowering, const std::string& why) {
  refusals_.at(id).push_back(lowering + " refused: " + why);
}

void GraphRewriter::emit_step(interp::LoweredStep step) {
  emit_producers(step.operands);
  for (ir::ValueId v : step.results)
    produced_.at(v) = true;
  steps_.emplace_back(std::move(step));
}

void GraphRewriter::emit_step_at(ir::OpId at_op, interp::LoweredStep step) { scheduled_.at(at_op) = std::move(step); }

bool GraphRewriter::emit_scheduled(ir::OpId id) {
  if (!scheduled_.at(id)) return false;
  emit_step(std::move(*scheduled_[id]));
  scheduled_[id].reset();
  return true;
}

void GraphRewriter::log_decisions() const {
  for (size_t id = 0; id < source_.ops.size(); ++id) {
    const ir::Op& original = source_.ops[id];
    std::string line = "op " + std::to_string(id) + " kiln." + std::string(ir::op_info(original.kind).name) + " at " +
                       original.loc.to_string() + ": " + lowering_[id];
    if (!note_[id].empty()) line += " (" + note_[id] + ")";
    if (lowering_[id] == "interp" && !refusals_[id].empty()) {
      line += " (";
      for (size_t i = 0; i < refusals_[id].size(); ++i)
        line += (i ? "; " : "") + refusals_[id][i];
      line += ")";
    }
    runtime::log_line(runtime::LogChannel::jit, line);
  }
}

Partition GraphRewriter::finish() {
  emit_producers(source_.outputs);
  Partition partition;
  for (const std::string& lowering : lowering_)
    ++partition.ops_per_lowering[lowering];
  if (runtime::log_enabled(runtime::LogChannel::jit)) log_decisions();
  partition.steps = std::move(steps_);
  return partition;
}

} // namespace kiln::jit::tier
