#include "exec/plan_executable.hpp"
#include "core/environment.hpp"
#include "core/tensor_impl.hpp"
#include "core/thread_slot.hpp"
#include "exec/non_finite_check.hpp"
#include <cstring>

namespace kiln::exec {

// Everything one call writes: the data pointer of every value and the op views, and the arena
// unless the caller lends one. Reused by later calls, so a warm call only fills in pointers.
struct PlanExecutable::CallState {
  std::shared_ptr<void> own_arena; // made at the first call that brings no arena of its own
  std::byte* arena = nullptr;      // the arena value_data points into
  std::vector<void*> value_data;   // one per value, and a spare slot (bound_values_)
  std::vector<View> views;
  // Each working step's arguments, over `views` and the arena: built when the arena is chosen.
  std::vector<KernelArgs> step_args;
  // The views hold what value_data says, except the caller's pointers, which bind_views writes into
  // them directly. False after a debugging run (run_step points views at temporaries) or a new arena.
  bool views_current = false;
  std::vector<void*> call_data; // run_into's tensors' data pointers, as run_bound takes them
};

// A call state taken from the pool for one call and given back when the call ends (or throws).
// The pool is a few slots, one per cache line; a thread takes and gives back at its own slot
// first, so threads calling at once neither share a lock nor, mostly, a cache line.
class PlanExecutable::BorrowedState {
public:
  BorrowedState(const PlanExecutable& owner, size_t thread_slot)
      : owner_(owner), first_(thread_slot % owner.pool_.size()),
        state_(owner.pool_[first_].state.exchange(nullptr, std::memory_order_acquire)) {
    if (!state_) state_ = take_elsewhere();
  }
  ~BorrowedState() {
    CallState* empty = nullptr;
    if (!owner_.pool_[first_].state.compare_exchange_strong(empty, state_, std::memory_order_release,
                                                            std::memory_order_relaxed))
      give_back_elsewhere();
  }
  BorrowedState(const BorrowedState&) = delete;
  BorrowedState& operator=(const BorrowedState&) = delete;
  CallState& operator*() const { return *state_; }

private:
  // Another thread holds this thread's slot's state: another slot's, else a new one.
  CallState* take_elsewhere() const {
    for (size_t k = 1; k < owner_.pool_.size(); ++k) {
      std::atomic<CallState*>& slot = owner_.pool_[(first_ + k) % owner_.pool_.size()].state;
      if (slot.load(std::memory_order_relaxed))
        if (CallState* state = slot.exchange(nullptr, std::memory_order_acquire)) return state;
    }
    return owner_.make_state().release();
  }
  void give_back_elsewhere() {
    for (size_t k = 1; k < owner_.pool_.size(); ++k) {
      CallState* empty = nullptr;
      if (owner_.pool_[(first_ + k) % owner_.pool_.size()].state.compare_exchange_strong(
              empty, state_, std::memory_order_release, std::memory_order_relaxed))
        return;
    }
    delete state_; // every slot is full: more threads call at once than the pool keeps
  }

  const PlanExecutable& owner_;
  size_t first_;
  CallState* state_; // owned until given back
};

namespace {

Tensor wrap_value(void* data, const ValuePlan& value) { return Tensor::wrap(data, value.dims, value.dtype); }

std::vector<Tensor> wrap_views(const ExecutionPlan& plan, std::span<const View> views,
                               std::span<const ir::ValueId> values) {
  std::vector<Tensor> tensors;
  tensors.reserve(views.size());
  for (size_t i = 0; i < views.size(); ++i)
    tensors.push_back(wrap_value(views[i].data, plan.values()[values[i]]));
  return tensors;
}

// A tensor's first element, read in place (Tensor::raw_data is a call per tensor); callers
// checked the types, so a symbolic or undefined tensor here is the same error raw_data gives.
void* concrete_data(const Tensor& tensor) {
  const detail::TensorImpl* impl = tensor.impl().get();
  if (!impl || impl->graph) return const_cast<Tensor&>(tensor).raw_data();
  return impl->data;
}

} // namespace

PlanExecutable::PlanExecutable(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                               const StepImplementations& implementations, ExecutableOptions options)
    : tier_(std::move(options.tier)), check_numerics_(env::debug_nans().value_or(false)),
      ops_per_lowering_(std::move(options.ops_per_lowering)),
      plan_(std::move(graph), weights, implementations, std::move(options.steps)) {
  for (const OutputSlot& slot : plan_.outputs())
    copies_outputs_ = copies_outputs_ || !slot.written_by_op;
  for (const PlanStep& step : plan_.steps())
    if (step.kind != StepKind::bind && step.kind != StepKind::alias) working_steps_.push_back(&step);
  const ir::ValueId spare = ir::ValueId(plan_.values().size());
  bound_values_ = plan_.graph().args;
  for (const OutputSlot& slot : plan_.outputs())
    bound_values_.push_back(slot.written_by_op ? slot.value : spare);
  // A view of an argument or a written output, or of an alias of one, reads the caller's memory.
  std::vector<int64_t> data_of_value(plan_.values().size() + 1, -1);
  for (size_t i = bound_values_.size(); i-- > 0;)
    data_of_value[bound_values_[i]] = int64_t(i);
  for (size_t view = 0; view < plan_.view_values().size(); ++view) {
    ir::ValueId value = plan_.view_values()[view];
    if (plan_.values()[value].storage == Storage::alias) value = plan_.values()[value].alias_root;
    if (data_of_value[value] >= 0) bound_views_.push_back({uint32_t(data_of_value[value]), uint32_t(view)});
  }
}

PlanExecutable::~PlanExecutable() {
  for (PoolSlot& slot : pool_)
    delete slot.state.load();
}

std::string PlanExecutable::step_implementation(size_t step) const {
  const ImplementationWalk& walk = plan_.walk(step);
  return walk.empty() ? "" : walk.back().implementation;
}

std::map<std::string, int> PlanExecutable::ops_per_lowering() const {
  if (!ops_per_lowering_.empty()) return ops_per_lowering_;
  return {{"interp", int(plan_.graph().ops.size())}};
}

std::unique_ptr<PlanExecutable::CallState> PlanExecutable::make_state() const {
  auto state = std::make_unique<CallState>();
  state->value_data.assign(plan_.values().size() + 1, nullptr);
  state->call_data.assign(bound_values_.size(), nullptr);
  for (size_t v = 0; v < plan_.values().size(); ++v) {
    const ValuePlan& value = plan_.values()[v];
    // Kernels take inputs through non-const views; bound values are only ever read.
    if (value.storage == Storage::bound && value.bound.defined())
      state->value_data[v] = const_cast<void*>(value.bound.raw_data());
  }
  state->views = plan_.view_templates();
  return state;
}

std::byte* PlanExecutable::call_arena(CallState& state, std::span<std::byte> lent) const {
  if (lent.empty()) {
    if (!state.own_arena) state.own_arena = detail::allocate_aligned(plan_.arena_bytes(), false);
    return static_cast<std::byte*>(state.own_arena.get());
  }
  if (lent.size() < plan_.arena_bytes())
    throw Error(ErrorKind::spec, "@" + plan_.graph().name + " needs an arena of " +
                                     std::to_string(plan_.arena_bytes()) + " bytes, the caller's holds " +
                                     std::to_string(lent.size()));
  if (reinterpret_cast<uintptr_t>(lent.data()) % kArenaAlignment != 0)
    throw Error(ErrorKind::spec, "the caller's arena must be aligned to " + std::to_string(kArenaAlignment) + " bytes");
  return lent.data();
}

// Points the arena's values into the call's arena: the caller's when it lends one, else the state's
// own. A warm call finds them pointing there already.
void PlanExecutable::use_arena(CallState& state, std::span<std::byte> lent) const {
  const bool current = lent.empty() ? state.own_arena && state.arena == state.own_arena.get()
                                    : state.arena == lent.data() && lent.size() >= plan_.arena_bytes();
  if (!current) switch_arena(state, lent);
}

void PlanExecutable::switch_arena(CallState& state, std::span<std::byte> lent) const {
  std::byte* arena = call_arena(state, lent);
  state.arena = arena;
  for (size_t v = 0; v < plan_.values().size(); ++v)
    if (plan_.values()[v].storage == Storage::arena) state.value_data[v] = arena + plan_.values()[v].arena_offset;
  state.step_args.clear();
  for (const PlanStep* step : working_steps_) {
    const std::span<const View> views(state.views.data() + step->first_view, step->num_inputs + step->num_outputs);
    state.step_args.push_back({*step->op, views.first(step->num_inputs), views.subspan(step->num_inputs),
                               std::span(arena + step->scratch_offset, step->scratch_bytes), step->prepared.get()});
  }
  state.views_current = false;
}

// Arguments are read through the caller's memory (buffer arguments also written through it), and
// outputs that a step writes are written there directly: value_data says so for the debugging run
// and copy_remaining_outputs, and bind_views for the plain run.
void PlanExecutable::bind_values(CallState& state, std::span<void* const> data) const {
  for (size_t i = 0; i < bound_values_.size(); ++i)
    state.value_data[bound_values_[i]] = data[i];
  for (ir::ValueId v : plan_.aliases())
    state.value_data[v] = state.value_data[plan_.values()[v].alias_root];
}

void PlanExecutable::bind_views(CallState& state, std::span<void* const> data) const {
  if (!state.views_current) refresh_views(state);
  for (const BoundView& bound : bound_views_)
    state.views[bound.view].data = data[bound.data];
}

// Every view from value_data (the caller's pointers are bound after): after a new arena or a
// debugging run.
void PlanExecutable::refresh_views(CallState& state) const {
  for (size_t view = 0; view < state.views.size(); ++view)
    state.views[view].data = state.value_data[plan_.view_values()[view]];
  state.views_current = true;
}

void PlanExecutable::bind_call(CallState& state, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                               std::span<std::byte> lent_arena) const {
  const ir::Function& fn = plan_.graph();
  if (inputs.size() != fn.args.size() || outputs.size() != plan_.outputs().size())
    throw Error(ErrorKind::spec, "interpreter run of @" + fn.name + ": expected " + std::to_string(fn.args.size()) +
                                     " inputs and " + std::to_string(plan_.outputs().size()) + " outputs, got " +
                                     std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  use_arena(state, lent_arena);
  for (size_t i = 0; i < inputs.size(); ++i)
    state.call_data[i] = concrete_data(inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i)
    state.call_data[inputs.size() + i] = concrete_data(outputs[i]);
  bind_values(state, state.call_data);
}

void PlanExecutable::run_step(CallState& state, const PlanStep& step, size_t index,
                              const runtime::RunOptions& options) const {
  const size_t num_views = step.num_inputs + step.num_outputs;
  std::span<View> views(state.views.data() + step.first_view, num_views);
  std::span<const ir::ValueId> values(plan_.view_values().data() + step.first_view, num_views);
  for (size_t i = 0; i < num_views; ++i)
    views[i].data = state.value_data[values[i]];
  std::span<const View> inputs = views.first(step.num_inputs);
  std::span<const View> outputs = views.subspan(step.num_inputs);

  const runtime::OpHooks* hooks = options.hooks;
  // Debugging shows every op's value: a read-through transpose is computed for it (ValuePlan).
  std::vector<Tensor> shown_read_through;
  if (hooks || options.preserved || options.check_numerics || check_numerics_)
    for (size_t i = 0; i < num_views; ++i)
      if (!views[i].data && plan_.values()[values[i]].read_through) {
        shown_read_through.push_back(plan_.read_through_value(values[i]));
        views[i].data = shown_read_through.back().raw_data();
      }
  std::vector<Tensor> hook_inputs;
  if (hooks && (hooks->before || hooks->after)) hook_inputs = wrap_views(plan_, inputs, values.first(step.num_inputs));
  if (hooks && hooks->before) hooks->before(index, *step.op, hook_inputs);

  execute(step, KernelArgs{*step.op, inputs, outputs, std::span(state.arena + step.scratch_offset, step.scratch_bytes),
                           step.prepared.get()});

  if (hooks && hooks->after)
    hooks->after(index, *step.op, hook_inputs, wrap_views(plan_, outputs, values.subspan(step.num_inputs)));
  if (options.check_numerics || check_numerics_) check_finite_outputs(plan_, index, outputs);
  if (options.preserved)
    for (size_t i = 0; i < outputs.size(); ++i)
      (*options.preserved)[values[step.num_inputs + i]] =
          wrap_value(outputs[i].data, plan_.values()[values[step.num_inputs + i]]).clone();
}

// One step on its arguments: a kernel, a tier's runner, or a buffer store (operand 0 takes
// operand 1's bytes).
void PlanExecutable::execute(const PlanStep& step, const KernelArgs& args) const {
  switch (step.kind) {
  case StepKind::kernel: step.kernel(args); break;
  case StepKind::runner: step.runner->run(args.inputs, args.outputs, args.scratch); break;
  case StepKind::buffer_store: {
    const size_t bytes = plan_.values()[plan_.view_values()[step.first_view]].bytes;
    if (bytes) std::memmove(args.inputs[0].data, args.inputs[1].data, bytes);
    break;
  }
  case StepKind::bind:
  case StepKind::alias: break;
  }
}

// The steps of a call without hooks, preserved values or numeric checks: the warm call's loop.
// Bind and alias steps do nothing at run time, so it runs only the working steps, on the arguments
// use_arena built for them.
[[gnu::always_inline]] inline void PlanExecutable::run_plain(CallState& state, std::span<void* const> data) const {
  bind_views(state, data);
  const KernelArgs* args = state.step_args.data(); // read once: a kernel's writes cannot move them
  for (const PlanStep* step : working_steps_)
    execute(*step, *args++);
}

void PlanExecutable::copy_remaining_outputs(const CallState& state, std::span<void* const> output_data) const {
  for (size_t i = 0; i < plan_.outputs().size(); ++i) {
    const OutputSlot& slot = plan_.outputs()[i];
    const size_t bytes = plan_.values()[slot.value].bytes;
    if (!slot.written_by_op && bytes) std::memcpy(output_data[i], state.value_data[slot.value], bytes);
  }
}

void PlanExecutable::run_into(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                              const runtime::RunOptions& options) const {
  BorrowedState borrowed(*this, detail::thread_slot());
  CallState& state = *borrowed;
  bind_call(state, inputs, outputs, options.arena);
  if (options.preserved) {
    options.preserved->assign(plan_.values().size(), Tensor());
    for (ir::ValueId v : plan_.graph().args)
      (*options.preserved)[v] = inputs[plan_.values()[v].arg_index].clone();
  }
  if (!options.hooks && !options.preserved && !options.check_numerics && !check_numerics_)
    run_plain(state, state.call_data);
  else {
    for (size_t i = 0; i < plan_.steps().size(); ++i)
      run_step(state, plan_.steps()[i], i, options);
    state.views_current = false;
  }
  if (copies_outputs_) copy_remaining_outputs(state, std::span(state.call_data).subspan(inputs.size()));
}

void PlanExecutable::run_bound(std::span<void* const> data, size_t thread_slot, std::span<std::byte> arena) const {
  if (check_numerics_) return runtime::Executable::run_bound(data, thread_slot, arena); // KILN_DEBUG_NANS
  BorrowedState borrowed(*this, thread_slot);
  CallState& state = *borrowed;
  use_arena(state, arena);
  if (copies_outputs_) bind_values(state, data);
  run_plain(state, data);
  if (copies_outputs_) copy_remaining_outputs(state, data.subspan(plan_.graph().args.size()));
}

} // namespace kiln::exec
