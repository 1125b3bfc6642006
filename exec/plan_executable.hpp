#pragma once
#include "core/inlinable.hpp"
#include "exec/plan.hpp"
#include "runtime/executable.hpp"
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::exec {

// How an executable built on the plan executor presents itself.
struct ExecutableOptions {
  std::string tier = "interp";
  std::vector<PlannedStep> steps;              // empty: every op of the graph, in order
  std::map<std::string, int> ops_per_lowering; // empty: every op counts as "interp"
};

// Runs an ExecutionPlan step by step: kernels and runners the interpreter's lists chose, and the
// steps a tier lowered. The executable of both tiers: interp/interpreter_tier.cpp makes it the tier
// "interp", the JIT builds it over its partition. run() may be called from many threads
// at once: each call borrows its per-call views and an arena from a pool (or uses the arena the
// caller lends in RunOptions), so a warm run_into allocates nothing.
class PlanExecutable final : public runtime::Executable {
public:
  // `implementations`: the interpreter backend's lists (ExecutionPlan).
  PlanExecutable(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                 const StepImplementations& implementations, ExecutableOptions options = {});
  ~PlanExecutable() override;

  void run_into(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                const runtime::RunOptions& options) const override;
  void run_bound(std::span<void* const> data, size_t thread_slot, std::span<std::byte> arena = {}) const override;
  std::string_view tier() const override { return tier_; }
  runtime::ExecutableMemory memory() const override { return plan_.memory(); }
  std::map<std::string, int> ops_per_lowering() const override;
  std::string step_implementation(size_t step) const override;
  const ir::Function& graph() const override { return plan_.graph(); }
  const ExecutionPlan& plan() const { return plan_; }

private:
  struct CallState;
  class BorrowedState;

  std::unique_ptr<CallState> make_state() const;
  std::byte* call_arena(CallState& state, std::span<std::byte> lent) const;
  KILN_INLINABLE void use_arena(CallState& state, std::span<std::byte> lent) const;
  void switch_arena(CallState& state, std::span<std::byte> lent) const;
  KILN_INLINABLE void bind_values(CallState& state, std::span<void* const> data) const;
  KILN_INLINABLE void bind_views(CallState& state, std::span<void* const> data) const;
  void bind_call(CallState& state, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                 std::span<std::byte> lent_arena) const;
  void run_step(CallState& state, const PlanStep& step, size_t index, const runtime::RunOptions& options) const;
  KILN_INLINABLE void run_plain(CallState& state, std::span<void* const> data) const;
  void refresh_views(CallState& state) const;
  KILN_INLINABLE void execute(const PlanStep& step, const KernelArgs& args) const;
  void copy_remaining_outputs(const CallState& state, std::span<void* const> output_data) const;

  std::string tier_;
  bool check_numerics_; // KILN_DEBUG_NANS, read when the executable is built
  std::map<std::string, int> ops_per_lowering_;
  ExecutionPlan plan_;
  bool copies_outputs_ = false;                // an output is not written by a step (an argument, a constant, a repeat)
  std::vector<const PlanStep*> working_steps_; // the steps that do something at run time, in order
  // Where bind_values writes the call's i-th pointer (arguments, then outputs): the value's slot in
  // CallState::value_data, or the spare slot past the values for an output no step writes.
  std::vector<ir::ValueId> bound_values_;
  // The views that read or write the caller's memory: view `view` takes the call's pointer `data`.
  struct BoundView {
    uint32_t data, view;
  };
  std::vector<BoundView> bound_views_;
  struct alignas(64) PoolSlot {
    std::atomic<CallState*> state{nullptr}; // owned: a call state no call is using
  };
  mutable std::array<PoolSlot, 8> pool_;
};

} // namespace kiln::exec
