#pragma once
#include "exec/implementation_list.hpp"
#include "exec/step_runner.hpp"
#include "exec/view.hpp"
#include "runtime/executable.hpp"
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace kiln::exec {

struct StepImplementations;

// Every arena offset (and every arena block size) is a multiple of this.
inline constexpr size_t kArenaAlignment = 64;

// A block the arena must hold from op `first` to op `last` (inclusive, indices into the op order).
struct LiveInterval {
  size_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
};

// Offsets of the blocks in one arena: blocks whose intervals overlap never share bytes.
struct ArenaLayout {
  std::vector<size_t> offsets; // one per interval, aligned to kArenaAlignment
  size_t peak_bytes = 0;
};

// Greedy by size, best fit: the largest blocks are placed first, each into the smallest gap left
// between the blocks it overlaps in time (TFLite Micro's greedy memory planner).
ArenaLayout plan_arena(std::span<const LiveInterval> intervals);

// Where a value's memory comes from during one call.
enum class Storage : uint8_t {
  argument, // the caller's input tensor (buffer arguments are written through it)
  bound,    // a constant attribute, a weight, or an op over those computed once when planning
  arena,    // the call's arena, at arena_offset
  output,   // the fresh output tensor handed back to the caller
  alias,    // the memory of alias_root (a reshape, squeeze or unsqueeze that needs no copy)
};

struct ValuePlan {
  DType dtype = DType::f32;
  std::vector<int64_t> dims; // static; View::dims point here
  size_t bytes = 0;
  Storage storage = Storage::arena;
  size_t arena_offset = 0;    // Storage::arena
  uint32_t arg_index = 0;     // Storage::argument
  ir::ValueId alias_root = 0; // Storage::alias: never itself an alias
  Tensor bound;               // Storage::bound: keeps the constant's or weight's storage alive
  // Storage::bound: its key among the session's weight forms (runtime/weight_forms.hpp); nullopt for
  // an embedded constant and what is computed from one, whose forms are the plan's own.
  std::optional<runtime::WeightFormKey> bound_key;
  // Storage::bound: the transpose of a bound f32 matrix (F::linear's transpose of a weight) whose
  // only readers are matmuls, which read its operand instead (the interpreter's matmul runners and
  // the JIT's oneDNN matmul take B transposed). `bound` stays unset, so the weight is not copied (a
  // mapped file's weights are used in place), unless a step that reads the value itself needs it.
  bool read_through = false;
};

// What the executor does for one op.
enum class StepKind : uint8_t {
  kernel,       // call `kernel`
  bind,         // constant / constant_external: the value is bound, nothing runs
  alias,        // reshape-like op whose result aliases its input: nothing runs
  buffer_store, // copy operand 1 into operand 0's memory (the caller's buffer)
  runner,       // call `runner` (a step a tier lowered, a matmul over packed weights, an extension op)
};

struct PlanStep {
  const ir::Op* op = nullptr; // a lowered step's first op
  StepKind kind = StepKind::kernel;
  Kernel kernel = nullptr;
  const StepRunner* runner = nullptr;
  bool lowered = false;    // a LoweredStep a tier built, possibly of several ops
  uint32_t first_view = 0; // the step's inputs, then its outputs, in view_templates()
  uint32_t num_inputs = 0;
  uint32_t num_outputs = 0;
  size_t scratch_bytes = 0; // kernel and runner steps: working memory, in the arena at scratch_offset
  size_t scratch_offset = 0;
  PreparedState prepared; // StepKind::kernel: what its kernel derived from the op and its dims
};

// One graph output. A value produced by a kernel is written straight into the fresh output tensor
// (its first occurrence); arguments, bound values and repeated outputs are copied after the run.
struct OutputSlot {
  ir::ValueId value = 0;
  bool written_by_op = false;
};

// Built once per executable: step order, static dims of every value, where every value lives and the
// arena layout. Immutable afterwards, so one plan serves many concurrent calls.
class ExecutionPlan {
public:
  // `steps` is the run order a tier chose (empty: every op of the graph in order); each op left as a
  // step of its own runs what `implementations` (the interpreter backend's lists, which must outlive
  // the plan) picks for it. Throws kiln::Error for graphs the interpreter cannot run: symbolic dims
  // (shape), a weight missing from `weights` (weight), an op no implementation takes (unsupported: a
  // call left in the graph, a custom op of no loaded extension), and (unsupported) for
  // `implementations` without lists.
  ExecutionPlan(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                const StepImplementations& implementations, std::vector<PlannedStep> steps = {});
  ExecutionPlan(const ExecutionPlan&) = delete;
  ExecutionPlan& operator=(const ExecutionPlan&) = delete;

  const ir::Function& graph() const { return *graph_; }
  const std::vector<ValuePlan>& values() const { return values_; }
  const std::vector<PlanStep>& steps() const { return steps_; }
  // How step `index` came to run as it does: the interpreter's walk for an op of its own; for a
  // lowered step, the tier's implementation alone.
  const ImplementationWalk& walk(size_t index) const { return walks_.at(index); }
  // Per step: the op's input views then its output views, with dtype and dims set and data null.
  const std::vector<View>& view_templates() const { return view_templates_; }
  // The value each view template shows.
  const std::vector<ir::ValueId>& view_values() const { return view_values_; }
  const std::vector<OutputSlot>& outputs() const { return outputs_; }
  // Values whose memory is another value's (Storage::alias), in op order.
  const std::vector<ir::ValueId>& aliases() const { return aliases_; }
  // Peak bytes of one call's arena.
  size_t arena_bytes() const { return arena_bytes_; }
  // The arena's peak and the bytes of the bound values and runners' copies of weights.
  runtime::ExecutableMemory memory() const;
  // A read-through value (ValuePlan::read_through) computed now, for debugging hooks that show it.
  Tensor read_through_value(ir::ValueId value) const;

private:
  void plan_values(const runtime::WeightMap& weights, std::span<const ir::Op* const> own_ops);
  void precompute_bound_ops(std::span<const ir::Op* const> own_ops, runtime::WeightForms* forms);
  void compute_bound_op(const ir::Op& op, runtime::WeightForms* forms);
  void materialize_read_through_values(runtime::WeightForms* forms);
  void plan_steps(std::span<const PlannedStep> steps, runtime::WeightForms* forms);
  ImplementationWalk choose_implementation(const ir::Op& op, PlanStep& step, runtime::WeightForms* forms);
  void prepare_kernel(PlanStep& step) const;
  void plan_arena_offsets();
  void plan_outputs();

  std::shared_ptr<const ir::Function> graph_;
  const StepImplementations* implementations_;
  std::vector<ValuePlan> values_;
  std::vector<PlanStep> steps_;
  std::vector<ImplementationWalk> walks_; // one per step
  std::vector<View> view_templates_;
  std::vector<ir::ValueId> view_values_;
  std::vector<OutputSlot> outputs_;
  std::vector<ir::ValueId> aliases_;
  std::vector<std::shared_ptr<const StepRunner>> own_runners_;          // the runners of runner steps
  std::vector<std::shared_ptr<const std::vector<Tensor>>> precomputed_; // shared with other plans
  size_t arena_bytes_ = 0;
};

} // namespace kiln::exec
