#include "exec/plan.hpp"
#include "core/checked_arithmetic.hpp"
#include "exec/precomputed_values.hpp"
#include "exec/step_implementations.hpp"
#include "ir/ops.hpp"
#include "ir/passes/side_effects.hpp"
#include "ir/text/value_labels.hpp"
#include <algorithm>
#include <numeric>
#include <set>

namespace kiln::exec {

namespace {

size_t round_up(size_t bytes) { return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool overlap_in_time(const LiveInterval& a, const LiveInterval& b) { return a.first <= b.last && b.first <= a.last; }

struct PlacedBlock {
  size_t offset;
  size_t bytes;
  size_t interval;
};

// The lowest-waste offset for a block of `bytes` among the blocks it overlaps in time (sorted by offset).
size_t best_fit_offset(const std::vector<const PlacedBlock*>& conflicts, size_t bytes) {
  size_t best = 0, best_gap = 0, gap_start = 0;
  bool found = false;
  for (const PlacedBlock* block : conflicts) {
    if (block->offset > gap_start) {
      size_t gap = block->offset - gap_start;
      if (gap >= bytes && (!found || gap < best_gap)) best = gap_start, best_gap = gap, found = true;
    }
    gap_start = std::max(gap_start, block->offset + block->bytes);
  }
  return found ? best : gap_start;
}

bool aliases_its_input(ir::OpKind kind) {
  return kind == ir::OpKind::reshape || kind == ir::OpKind::squeeze || kind == ir::OpKind::unsqueeze;
}

void check_bound_tensor(const Tensor& tensor, const ValuePlan& value, const ir::Op& op, ErrorKind kind) {
  if (!tensor.defined() || !tensor.is_concrete())
    throw Error(kind, ir::op_place(op) + ": the bound tensor is not a concrete tensor");
  if (tensor.dtype() != value.dtype || tensor.dims() != value.dims)
    throw Error(kind, ir::op_place(op) + ": the bound tensor is " + tensor.layout().to_string() +
                          ", the graph expects " + dtype_name(value.dtype) + " " +
                          shape_to_string(shape_from_dims(value.dims)));
}

// Ops over constants and weights only are computed once when planning (ORT folds initializers
// the same way): e.g. the transpose F::linear stages for each weight would otherwise be redone on
// every call. Results far larger than their operands (a broadcast or a `full`) are left to run
// per call so the plan does not hold them.
constexpr size_t kPrecomputeSlackBytes = 64 * 1024;

bool worth_precomputing(const ir::Op& op, const std::vector<ValuePlan>& values,
                        const StepImplementations& implementations) {
  if (op.results.empty() || !ir::is_pure(op, nullptr) || !implementations.kernel_for(op.kind)) return false;
  size_t operand_bytes = 0;
  for (ir::ValueId v : op.operands) {
    if (values[v].storage != Storage::bound) return false;
    operand_bytes += values[v].bytes;
  }
  size_t result_bytes = 0;
  for (ir::ValueId v : op.results)
    result_bytes += values[v].bytes;
  return result_bytes <= 2 * operand_bytes + kPrecomputeSlackBytes;
}

} // namespace

ArenaLayout plan_arena(std::span<const LiveInterval> intervals) {
  ArenaLayout layout;
  layout.offsets.assign(intervals.size(), 0);
  std::vector<size_t> order(intervals.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return intervals[a].bytes > intervals[b].bytes; });

  std::vector<PlacedBlock> placed; // kept sorted by offset
  std::vector<const PlacedBlock*> conflicts;
  for (size_t i : order) {
    const size_t bytes = round_up(intervals[i].bytes);
    if (bytes == 0) continue;
    conflicts.clear();
    for (const PlacedBlock& block : placed)
      if (overlap_in_time(intervals[block.interval], intervals[i])) conflicts.push_back(&block);
    const size_t offset = best_fit_offset(conflicts, bytes);
    layout.offsets[i] = offset;
    // Offsets are ends of placed blocks, so checking each end keeps every later sum in range.
    const auto end = size_t(checked_add(int64_t(offset), int64_t(bytes), "interpreter arena offset"));
    layout.peak_bytes = std::max(layout.peak_bytes, end);
    auto at = std::upper_bound(placed.begin(), placed.end(), offset,
                               [](size_t off, const PlacedBlock& block) { return off < block.offset; });
    placed.insert(at, PlacedBlock{offset, bytes, i});
  }
  return layout;
}

ExecutionPlan::ExecutionPlan(std::shared_ptr<const ir::Function> graph, const runtime::WeightMap& weights,
                             const StepImplementations& implementations, std::vector<PlannedStep> steps)
    : graph_(std::move(graph)), implementations_(&implementations) {
  if (!graph_) throw Error(ErrorKind::internal, "interpreter plan: no graph");
  if (!implementations.list || !implementations.cpu_isa || !implementations.kernel_for ||
      !implementations.scratch_bytes || !implementations.prepare)
    throw Error(ErrorKind::unsupported,
                "interpreter plan of @" + graph_->name + ": the tier backend it was given has no implementation lists");
  if (steps.empty())
    for (size_t id = 0; id < graph_->ops.size(); ++id)
      steps.emplace_back(ir::OpId(id));
  std::vector<const ir::Op*> own_ops;
  for (const PlannedStep& step : steps)
    if (const ir::OpId* id = std::get_if<ir::OpId>(&step)) own_ops.push_back(&graph_->ops.at(*id));
  plan_values(weights, own_ops);
  plan_steps(steps, weights.forms());
  materialize_read_through_values(weights.forms());
  plan_arena_offsets();
  plan_outputs();
}

// Ops taken into a lowered step are not steps of their own: they are neither precomputed nor aliased.
void ExecutionPlan::plan_values(const runtime::WeightMap& weights, std::span<const ir::Op* const> own_ops) {
  const ir::Function& fn = *graph_;
  values_.resize(fn.values.size());
  for (size_t v = 0; v < fn.values.size(); ++v) {
    const ir::ValueType& type = fn.values[v].type;
    if (!shape_is_static(type.shape))
      throw Error(ErrorKind::shape, "interpreter plan of @" + fn.name + ": " + ir::value_name(fn, ir::ValueId(v)) +
                                        " has type " + ir::type_to_string(type) +
                                        "; graphs are specialised to static dims before they are planned");
    values_[v].dtype = type.dtype;
    values_[v].dims = static_dims(type.shape);
    values_[v].bytes = size_t(checked_static_byte_size(
        type.shape, type.dtype, "interpreter plan of @" + fn.name + ": " + ir::value_name(fn, ir::ValueId(v))));
  }
  for (size_t i = 0; i < fn.args.size(); ++i) {
    values_[fn.args[i]].storage = Storage::argument;
    values_[fn.args[i]].arg_index = uint32_t(i);
  }
  for (const ir::Op& op : fn.ops) {
    if (op.kind == ir::OpKind::constant) {
      ValuePlan& value = values_[op.results.at(0)];
      value.bound = ir::params_of<ir::ConstantParams>(op).value;
      check_bound_tensor(value.bound, value, op, ErrorKind::shape);
      value.storage = Storage::bound;
    } else if (op.kind == ir::OpKind::constant_external) {
      ValuePlan& value = values_[op.results.at(0)];
      const std::string& name = ir::params_of<ir::ExternalParams>(op).name;
      auto weight = weights.find(name);
      if (weight == weights.end())
        throw Error(ErrorKind::weight, ir::op_place(op) + ": no weight named '" + name + "' is bound");
      value.bound = weight->second;
      value.bound_key = weights.key(name);
      check_bound_tensor(value.bound, value, op, ErrorKind::weight);
      value.storage = Storage::bound;
    }
  }
  precompute_bound_ops(own_ops, weights.forms());
  for (ir::ValueId v : fn.outputs)
    if (values_.at(v).storage == Storage::arena) values_[v].storage = Storage::output;
  for (const ir::Op* own : own_ops) {
    const ir::Op& op = *own;
    if (!aliases_its_input(op.kind)) continue;
    ValuePlan& result = values_[op.results.at(0)];
    ir::ValueId source = op.operands.at(0);
    ir::ValueId root = values_[source].storage == Storage::alias ? values_[source].alias_root : source;
    // A buffer may be stored into later in the call; an alias would see the new contents.
    const bool root_is_buffer = values_[root].storage == Storage::argument && fn.type_of(root).is_buffer;
    if (result.storage != Storage::arena || root_is_buffer) continue;
    result.storage = Storage::alias;
    result.alias_root = root;
    aliases_.push_back(op.results[0]);
  }
}

namespace {

// Which values only matmuls that are steps of their own read, as B: not a graph output, not read
// inside a lowered step nor by any other op.
std::vector<bool> read_only_as_matmul_b(const ir::Function& fn, std::span<const ir::Op* const> own_ops,
                                        const std::vector<ValuePlan>& values) {
  std::vector<bool> own(fn.ops.size(), false);
  for (const ir::Op* op : own_ops)
    own[size_t(op - fn.ops.data())] = true;
  std::vector<bool> only_b(values.size(), true);
  for (ir::ValueId v : fn.outputs)
    only_b[v] = false;
  for (size_t id = 0; id < fn.ops.size(); ++id)
    for (size_t i = 0; i < fn.ops[id].operands.size(); ++i) {
      const bool as_b = own[id] && fn.ops[id].kind == ir::OpKind::matmul && i == 1 &&
                        values[fn.ops[id].results.at(0)].dtype == DType::f32;
      if (!as_b) only_b[fn.ops[id].operands[i]] = false;
    }
  return only_b;
}

} // namespace

// In op order, so a transpose of a value computed here (of a folded weight) is read through too: a
// transpose swapping the axes of a bound f32 matrix that only matmuls read as B is marked read
// through; other ops over bound values only are computed.
void ExecutionPlan::precompute_bound_ops(std::span<const ir::Op* const> own_ops, runtime::WeightForms* forms) {
  const std::vector<bool> only_b = read_only_as_matmul_b(*graph_, own_ops, values_);
  for (const ir::Op* own : own_ops) {
    if (own->results.empty()) continue;
    const bool swaps_matrix = own->kind == ir::OpKind::transpose &&
                              ir::params_of<ir::TransposeParams>(*own).perm == std::vector<int64_t>{1, 0};
    const ValuePlan& source = values_[own->operands.empty() ? 0 : own->operands[0]];
    if (swaps_matrix && source.storage == Storage::bound && source.dtype == DType::f32 && only_b[own->results[0]]) {
      values_[own->results[0]].storage = Storage::bound;
      values_[own->results[0]].read_through = true;
      continue;
    }
    if (!worth_precomputing(*own, values_, *implementations_)) continue;
    for (ir::ValueId v : own->operands) // a matmul over bound values reads B itself
      if (values_[v].read_through && !values_[v].bound.defined())
        compute_bound_op(graph_->ops.at(size_t(graph_->values[v].def_op)), forms);
    compute_bound_op(*own, forms);
  }
}

void ExecutionPlan::compute_bound_op(const ir::Op& op, runtime::WeightForms* forms) {
  const std::optional<runtime::WeightFormKey> key = precomputed_key(op, values_);
  PrecomputedResults results = runtime::shared_form<std::vector<Tensor>>(forms, key, [&] {
    std::vector<View> views;
    for (ir::ValueId v : op.operands)
      views.push_back(View{const_cast<void*>(values_[v].bound.raw_data()), values_[v].dtype, values_[v].dims});
    std::vector<Tensor> computed;
    for (ir::ValueId v : op.results) {
      computed.push_back(Tensor::empty(values_[v].dims, values_[v].dtype));
      views.push_back(View{computed.back().raw_data(), values_[v].dtype, values_[v].dims});
    }
    const StepImplementations& implementations = *implementations_;
    const std::span<const View> inputs = std::span(views).first(op.operands.size()),
                                outputs = std::span(views).subspan(op.operands.size());
    // Once, when planning: its working memory need not come from the arena.
    const PreparedState prepared = implementations.prepare(op, inputs, outputs);
    std::vector<std::byte> scratch(implementations.scratch_bytes(op, inputs, outputs));
    implementations.kernel_for(op.kind)(KernelArgs{op, inputs, outputs, scratch, prepared.get()});
    return computed;
  });
  for (size_t i = 0; i < op.results.size(); ++i) {
    values_[op.results[i]].bound = (*results)[i];
    values_[op.results[i]].bound_key = precomputed_result_key(key, i);
    values_[op.results[i]].storage = Storage::bound;
  }
  precomputed_.push_back(std::move(results));
}

// A read-through value that a step reads itself after all (a matmul no runner took, whose kernel
// reads B as laid out) is computed as any other bound op's result.
void ExecutionPlan::materialize_read_through_values(runtime::WeightForms* forms) {
  for (const PlanStep& step : steps_) {
    const bool reads_through = step.kind == StepKind::runner && !step.lowered && step.op->kind == ir::OpKind::matmul;
    if (step.kind == StepKind::bind || step.kind == StepKind::alias || reads_through) continue;
    for (ir::ValueId v : std::span(view_values_).subspan(step.first_view, step.num_inputs))
      if (values_[v].read_through && !values_[v].bound.defined())
        compute_bound_op(graph_->ops.at(size_t(graph_->values[v].def_op)), forms);
  }
}

Tensor ExecutionPlan::read_through_value(ir::ValueId value) const {
  const ir::Op& transpose = graph_->ops.at(size_t(graph_->values.at(value).def_op));
  const ValuePlan& source = values_[transpose.operands[0]];
  Tensor result = Tensor::empty(values_[value].dims, DType::f32);
  const View views[] = {View{const_cast<void*>(source.bound.raw_data()), source.dtype, source.dims},
                        View{result.raw_data(), DType::f32, values_[value].dims}};
  const StepImplementations& implementations = *implementations_;
  const PreparedState prepared = implementations.prepare(transpose, std::span(views, 1), std::span(views + 1, 1));
  implementations.kernel_for(ir::OpKind::transpose)(
      KernelArgs{transpose, std::span(views, 1), std::span(views + 1, 1), {}, prepared.get()});
  return result;
}

void ExecutionPlan::plan_steps(std::span<const PlannedStep> steps, runtime::WeightForms* forms) {
  for (const PlannedStep& planned : steps) {
    PlanStep step;
    ImplementationWalk walk;
    std::span<const ir::ValueId> operands, results;
    if (const auto* lowered = std::get_if<LoweredStep>(&planned)) {
      step.op = &graph_->ops.at(lowered->op);
      step.kind = StepKind::runner;
      step.lowered = true;
      step.runner = lowered->runner.get();
      own_runners_.push_back(lowered->runner);
      walk.push_back(Verdict{lowered->implementation, std::nullopt, {}});
      operands = lowered->operands;
      results = lowered->results;
    } else {
      step.op = &graph_->ops.at(std::get<ir::OpId>(planned));
      walk = choose_implementation(*step.op, step, forms);
      operands = step.op->operands;
      results = step.op->results;
    }
    step.first_view = uint32_t(view_templates_.size());
    step.num_inputs = uint32_t(operands.size());
    step.num_outputs = uint32_t(results.size());
    for (ir::ValueId v : operands) {
      view_templates_.push_back(View{nullptr, values_.at(v).dtype, values_[v].dims});
      view_values_.push_back(v);
    }
    for (ir::ValueId v : results) {
      view_templates_.push_back(View{nullptr, values_.at(v).dtype, values_[v].dims});
      view_values_.push_back(v);
    }
    if (step.kind == StepKind::runner) step.scratch_bytes = step.runner->scratch_bytes();
    if (step.kind == StepKind::kernel) prepare_kernel(step);
    steps_.push_back(step);
    walks_.push_back(std::move(walk));
  }
}

// Once per plan: the kernel checks the op's static dims (so shape errors surface here, not at the
// first call) and derives what every call would otherwise recompute.
void ExecutionPlan::prepare_kernel(PlanStep& step) const {
  const std::span<const View> inputs = std::span(view_templates_).subspan(step.first_view, step.num_inputs),
                              outputs = std::span(view_templates_)
                                            .subspan(step.first_view + step.num_inputs, step.num_outputs);
  const StepImplementations& implementations = *implementations_;
  step.prepared = implementations.prepare(*step.op, inputs, outputs);
  step.scratch_bytes = implementations.scratch_bytes(*step.op, inputs, outputs);
}

// Values bound or aliased when planning need no code; any other op runs what the first entry of its
// kind's list that takes it creates.
ImplementationWalk ExecutionPlan::choose_implementation(const ir::Op& op, PlanStep& step, runtime::WeightForms* forms) {
  const Storage storage = op.results.empty() ? Storage::arena : values_[op.results[0]].storage;
  if (storage == Storage::bound) {
    step.kind = StepKind::bind;
    const bool constant = op.kind == ir::OpKind::constant || op.kind == ir::OpKind::constant_external;
    return {Verdict{constant ? "bound" : "precomputed", std::nullopt, {}}};
  }
  if (storage == Storage::alias) {
    step.kind = StepKind::alias;
    return {Verdict{"alias", std::nullopt, {}}};
  }
  const StepQuery query{*graph_, op, values_, forms};
  ImplementationWalk walk;
  const StepImplementations& implementations = *implementations_;
  const Implementation* taker = walk_implementations(
      implementations.list(op.kind), implementations.cpu_isa(),
      [&](const Implementation& entry) { return entry.refuse ? entry.refuse(query) : std::nullopt; }, walk);
  if (!taker)
    throw Error(ErrorKind::unsupported, ir::op_place(op) + ": no interpreter implementation takes it" +
                                            (walk.empty() ? "" : " (" + walk_to_string(walk) + ")"));
  StepChoice choice = taker->create(query);
  walk.back().note = std::move(choice.note);
  step.kind = choice.kind;
  step.kernel = choice.kernel;
  step.runner = choice.runner.get();
  if (choice.runner) own_runners_.push_back(std::move(choice.runner));
  return walk;
}

// Values no step writes (inside a lowered step) are never live and take no arena bytes.
void ExecutionPlan::plan_arena_offsets() {
  const ir::Function& fn = *graph_;
  std::vector<LiveInterval> live(values_.size());
  for (size_t i = 0; i < steps_.size(); ++i) {
    const PlanStep& step = steps_[i];
    std::span<const ir::ValueId> views(view_values_.data() + step.first_view, step.num_inputs + step.num_outputs);
    for (ir::ValueId v : views.subspan(step.num_inputs))
      live[v] = LiveInterval{values_[v].bytes, int64_t(i), int64_t(i)};
    // An alias keeps the memory it reads alive for as long as the alias is used.
    for (ir::ValueId v : views.first(step.num_inputs)) {
      ir::ValueId root = values_[v].storage == Storage::alias ? values_[v].alias_root : v;
      live[root].last = std::max(live[root].last, int64_t(i));
    }
  }
  std::vector<ir::ValueId> arena_values;
  std::vector<LiveInterval> intervals;
  for (size_t v = 0; v < values_.size(); ++v) {
    if (values_[v].storage != Storage::arena) continue;
    arena_values.push_back(ir::ValueId(v));
    intervals.push_back(live[v]);
  }
  // A kernel's scratch lives while its step runs.
  std::vector<size_t> scratch_steps;
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i].scratch_bytes == 0) continue;
    scratch_steps.push_back(i);
    intervals.push_back(LiveInterval{steps_[i].scratch_bytes, int64_t(i), int64_t(i)});
  }
  ArenaLayout layout = plan_arena(intervals);
  for (size_t i = 0; i < arena_values.size(); ++i)
    values_[arena_values[i]].arena_offset = layout.offsets[i];
  for (size_t i = 0; i < scratch_steps.size(); ++i)
    steps_[scratch_steps[i]].scratch_offset = layout.offsets[arena_values.size() + i];
  check_allocation_size(layout.peak_bytes, "the interpreter arena of @" + fn.name);
  arena_bytes_ = layout.peak_bytes;
}

void ExecutionPlan::plan_outputs() {
  std::vector<bool> written(values_.size(), false);
  for (ir::ValueId v : graph_->outputs) {
    const bool by_op = values_.at(v).storage == Storage::output && !written[v];
    written[v] = written[v] || by_op;
    outputs_.push_back(OutputSlot{v, by_op});
  }
}

// Bound values counted once per storage: the weights by name, everything else bound as constants;
// plus the weight copies the runners keep.
runtime::ExecutableMemory ExecutionPlan::memory() const {
  runtime::ExecutableMemory memory{.arena_bytes = arena_bytes_};
  std::set<const void*> counted;
  for (const ir::Op& op : graph_->ops)
    for (ir::ValueId v : op.results) {
      const ValuePlan& value = values_[v];
      if (value.storage != Storage::bound || !value.bound.defined() || !counted.insert(value.bound.raw_data()).second)
        continue;
      (op.kind == ir::OpKind::constant_external ? memory.weight_bytes : memory.constant_bytes) += value.bytes;
    }
  for (const PlanStep& step : steps_)
    if (step.runner) {
      memory.constant_bytes += step.runner->constant_bytes();
      memory.device_bytes += step.runner->device_bytes();
    }
  return memory;
}

} // namespace kiln::exec
