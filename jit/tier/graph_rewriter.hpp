#pragma once
#include "interp/step_runner.hpp"
#include "jit/tier/partitioner.hpp"
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::jit::tier {

// The state of one partitioning: the source graph with its use counts, the new graph being built
// (same arguments, source values remapped), the runners of its custom ops and the decision taken
// for every source op.
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

  // Source ops the walk must not emit again: taken by a lowering or waiting to be asked for.
  bool is_open(ir::OpId id) const { return state_.at(id) == State::open; }
  bool is_absorbed(ir::OpId id) const { return state_.at(id) == State::absorbed; }
  bool is_deferred(ir::OpId id) const { return state_.at(id) == State::deferred; }

  // The new graph's value for a source value, emitting the deferred op that produces it first.
  ir::ValueId mapped(ir::ValueId v);
  // Emits a source op unchanged (it runs its interpreter kernel).
  void copy_op(ir::OpId id);
  // Emits the op only if some later op asks for its result.
  void defer(ir::OpId id) { state_.at(id) = State::deferred; }
  // Records that a lowering took the op; `note` is what KILN_LOG=jit prints for it.
  void take(ir::OpId id, const std::string& lowering, const std::string& note);
  // Records why a candidate lowering passed over the op.
  void refuse(ir::OpId id, const std::string& lowering, const std::string& why);

  // A custom op whose source results are `results`: emitted now, or when the walk reaches
  // `at_op` (the last op of a fused chain) when that is later.
  struct CustomOp {
    std::string name;
    std::vector<ir::ValueId> operands; // source values
    std::vector<ir::ValueId> results;  // source values
    ir::SourceLoc loc;
    std::shared_ptr<const interp::StepRunner> runner;
  };
  void emit_custom(const CustomOp& custom);
  void emit_custom_at(ir::OpId at_op, CustomOp custom);
  // Emits the custom op scheduled at this source op, if any; true when there was one.
  bool emit_scheduled(ir::OpId id);

  Partition finish();

private:
  // Adds an op to the new graph over the mapped operands; its results stand for `results` from now on.
  ir::OpId emit(ir::OpKind kind, std::span<const ir::ValueId> operands, std::span<const ir::ValueId> results,
                const ir::Attrs& attrs, const ir::SourceLoc& loc);
  enum class State { open, deferred, absorbed, emitted };
  static constexpr ir::ValueId kUnmapped = ~ir::ValueId{0};

  void log_decisions() const;

  const ir::Function& source_;
  const runtime::WeightMap& weights_;
  std::vector<int> uses_;
  std::vector<std::optional<ir::OpId>> last_user_;
  std::vector<State> state_;
  std::vector<std::string> lowering_;
  std::vector<std::string> note_;
  std::vector<std::vector<std::string>> refusals_;
  std::vector<std::optional<CustomOp>> scheduled_;
  std::shared_ptr<ir::Function> graph_;
  std::vector<ir::ValueId> remap_;
  interp::StepRunners runners_;
};

} // namespace kiln::jit::tier
