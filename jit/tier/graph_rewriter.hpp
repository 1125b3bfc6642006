#pragma once
#include "exec/implementation_list.hpp"
#include "exec/step_runner.hpp"
#include "jit/tier/partitioner.hpp"
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jitc::tier {

// The state of one partitioning: the source graph with its use counts, the steps chosen so far (in
// run order) and how every source op came to run as it does.
class GraphRewriter {
public:
  GraphRewriter(const ir::Function& source, const runtime::WeightMap& weights);

  const ir::Function& source() const { return source_; }
  const runtime::WeightMap& weights() const { return weights_; }
  const ir::Op& op(ir::OpId id) const { return source_.ops.at(id); }
  // Uses of a source value by ops, plus one per appearance among the graph outputs.
  int uses(ir::ValueId v) const { return uses_.at(v); }
  // The one op that uses v, when v has exactly one use and is not a graph output.
  std::optional<ir::OpId> single_user(ir::ValueId v) const;
  // The op defining v; null for arguments.
  const ir::Op* producer(ir::ValueId v) const;
  std::vector<int64_t> dims(ir::ValueId v) const { return static_dims(source_.type_of(v).shape); }
  DType dtype(ir::ValueId v) const { return source_.type_of(v).dtype; }

  // Source ops the walk must not decide again: taken by a lowering or waiting to be asked for.
  bool is_open(ir::OpId id) const { return state_.at(id) == State::open; }
  bool is_deferred(ir::OpId id) const { return state_.at(id) == State::deferred; }

  // How the walk down the op's list went; its last verdict names the implementation about to take it.
  void record_walk(ir::OpId id, exec::ImplementationWalk walk);
  // The op stays a step of its own: the interpreter's implementation list runs it.
  void keep_op(ir::OpId id);
  // The op becomes a step of its own only if a later step reads its result.
  void defer(ir::OpId id) { state_.at(id) = State::deferred; }
  // Records that `implementation` took the op into a lowered step; `note` is what KILN_LOG=jit
  // prints for it. The op its walk chose the implementation for keeps that walk; any other (fused
  // into the step) gets this one verdict.
  void take(ir::OpId id, std::string_view implementation, const std::string& note);

  // A lowered step, emitted now, or when the partition reaches `at_op` (the last op of a fused chain)
  // when that is later.
  void emit_step(exec::LoweredStep step);
  void emit_step_at(ir::OpId at_op, exec::LoweredStep step);
  // Emits the step scheduled at this source op, if any.
  void emit_scheduled(ir::OpId id);

  Partition finish();

private:
  enum class State { open, deferred, absorbed, emitted };

  // Makes sure a step already produced each value: emits the deferred ops producing them.
  void emit_producers(std::span<const ir::ValueId> values);

  const ir::Function& source_;
  const runtime::WeightMap& weights_;
  std::vector<int> uses_;
  std::vector<std::optional<ir::OpId>> last_user_;
  std::vector<State> state_;
  std::vector<exec::ImplementationWalk> walks_;
  std::vector<std::optional<exec::LoweredStep>> scheduled_;
  std::vector<bool> produced_; // per source value: an argument, or written by a step already emitted
  std::vector<exec::PlannedStep> steps_;
};

} // namespace kiln::jitc::tier
