#include "exec/plan.hpp"
#include "exec/threads.hpp"
#include "ir/text/value_labels.hpp"
#include "jit/dnnl/conv2d.hpp"
#include "jit/dnnl/engine.hpp"
#include "jit/tier/batch_norm_folding.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"
#include <algorithm>
#include <exception>
#include <kiln/error.hpp>
#include <map>
#include <mutex>
#include <set>

namespace kiln::jitc::tier {

// The convolutions this lowering takes: conv1d runs as oneDNN's 2-D convolution of one row.
constexpr ir::OpKind kConvolutions[] = {ir::OpKind::conv2d, ir::OpKind::conv1d};

namespace {

bool is_convolution(ir::OpKind kind) {
  return std::find(std::begin(kConvolutions), std::end(kConvolutions), kind) != std::end(kConvolutions);
}

// One convolution of a graph of them, with the epilogue its primitive applies, and where it reads
// its tensors: the step's inputs (plain NCHW) or earlier stages' results (in their own layouts).
struct ConvStage {
  ir::OpId id = 0;
  std::shared_ptr<const dnnl_ops::Conv2dPrimitive> primitive;
  Tensor weight; // the primitive may read a constant weight in place
  bool has_bias = false;
  std::shared_ptr<const FoldedConvWeights> folded; // a batch_norm folded in: its weight and bias
  Epilogue epilogue;
  int64_t out_slice_floats = 0;         // the result of one batch slice (the whole batch when unsliced)
  std::optional<size_t> input_stage;    // else the step's input 0
  std::optional<size_t> bias_input;     // the step input holding the bias, unless folded
  std::optional<size_t> residual_stage; // the one residual, an earlier stage's result
  std::vector<size_t> residual_inputs;  // else the step inputs holding the residuals
  size_t result_offset = 0;             // in a slice's scratch, unless the last stage
};

// Runs a graph of convolutions in order (one convolution is a graph of one). Between them the
// activations stay in the convolutions' own layouts, in the step's scratch: cnn b8 spent 0.66 ms
// per call reordering to NCHW and back, and a residual block reads its input twice. With `slices`
// > 1 the batch is cut into that many equal slices, one per thread, each running the whole graph
// on its own images (the primitives were made for a slice): no thread waits for another between
// convolutions, and a slice's activations stay in its core's cache.
class ConvGraphRunner final : public exec::StepRunner {
public:
  ConvGraphRunner(std::vector<ConvStage> stages, int64_t slices, int64_t input_slice_floats)
      : stages_(std::move(stages)), slices_(slices), input_slice_floats_(input_slice_floats) {
    plan_results();
    for (const ConvStage& stage : stages_)
      stage_scratch_bytes_ = std::max(stage_scratch_bytes_, stage.primitive->scratch_bytes());
  }

  // Each slice: the stages' results while they are read, then one stage's scratch at a time.
  size_t scratch_bytes() const override { return size_t(slices_) * slice_scratch_bytes(); }

  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override {
    if (slices_ == 1) return run_slice(inputs, outputs, 0, scratch);
    std::exception_ptr failure;
    std::mutex failure_mutex;
    exec::parallel_for(slices_, true, [&](int64_t slice) {
      try {
        run_slice(inputs, outputs, slice,
                  scratch.subspan(size_t(slice) * slice_scratch_bytes(), slice_scratch_bytes()));
      } catch (...) { // an exception must not leave an OpenMP region
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    });
    if (failure) std::rethrow_exception(failure);
  }

private:
  // Lays the results of all stages but the last into a slice's scratch, each from its stage to
  // the last stage reading it (the plan's own arena layout).
  void plan_results() {
    std::vector<exec::LiveInterval> intervals;
    for (size_t i = 0; i + 1 < stages_.size(); ++i)
      intervals.push_back({stages_[i].primitive->output_bytes(), int64_t(i), int64_t(i)});
    for (size_t i = 0; i < stages_.size(); ++i)
      for (std::optional<size_t> read : {stages_[i].input_stage, stages_[i].residual_stage})
        if (read) intervals.at(*read).last = std::max(intervals.at(*read).last, int64_t(i));
    const exec::ArenaLayout layout = exec::plan_arena(intervals);
    for (size_t i = 0; i < intervals.size(); ++i)
      stages_[i].result_offset = layout.offsets[i];
    results_bytes_ = dnnl_ops::scratch_piece(layout.peak_bytes);
  }

  size_t slice_scratch_bytes() const { return results_bytes_ + stage_scratch_bytes_; }

  void run_slice(std::span<const exec::View> inputs, std::span<const exec::View> outputs, int64_t slice,
                 std::span<std::byte> scratch) const {
    const auto result_of = [&](size_t stage) {
      return reinterpret_cast<float*>(scratch.data() + stages_[stage].result_offset);
    };
    const std::span<std::byte> stage_scratch = scratch.subspan(results_bytes_, stage_scratch_bytes_);
    for (size_t i = 0; i < stages_.size(); ++i) {
      const ConvStage& stage = stages_[i];
      const bool last = i + 1 == stages_.size();
      dnnl_ops::Conv2dArgs args;
      args.input =
          stage.input_stage ? result_of(*stage.input_stage) : inputs[0].as<const float>() + slice * input_slice_floats_;
      args.input_in_own_layout = stage.input_stage.has_value();
      if (stage.has_bias)
        args.bias = stage.folded ? stage.folded->bias.data<float>() : inputs[*stage.bias_input].as<const float>();
      std::array<const float*, dnnl_ops::kMaxPostOps> residuals{};
      size_t residual_count = 0;
      if (stage.residual_stage) residuals[residual_count++] = result_of(*stage.residual_stage);
      for (size_t input : stage.residual_inputs)
        residuals[residual_count++] = inputs[input].as<const float>() + slice * stage.out_slice_floats;
      args.residuals = std::span(residuals).first(residual_count);
      args.residual_in_own_layout = stage.residual_stage.has_value();
      args.out = last ? outputs[0].as<float>() + slice * stage.out_slice_floats : result_of(i);
      args.output_in_own_layout = !last;
      stage.primitive->execute(args, stage_scratch);
    }
  }

  std::vector<ConvStage> stages_;
  int64_t slices_;
  int64_t input_slice_floats_;
  size_t results_bytes_ = 0;       // the stages' results in a slice, laid out by liveness
  size_t stage_scratch_bytes_ = 0; // the most any one stage's primitive takes
};

// The convolution at `id` with its epilogue, as oneDNN would run it on a batch in `slices` slices.
struct ConvStagePlan {
  dnnl_ops::Conv2dParams params;
  Tensor weight;
  Epilogue epilogue;
  std::optional<std::string> epilogue_refusal; // why the epilogue stays out
  std::optional<FoldedBatchNorm> folded;
};

// The epilogue after the convolution `op`, or after the batch_norm folded into it (which it
// then starts with).
// A residual joins the post-ops only where the convolution keeps a direct implementation with it
// (on AVX2, oneDNN's direct kernels add one only before any activation): the add then runs in the
// next fused kernel instead of sending the convolution to oneDNN's GEMM one.
// Without residuals_allowed the epilogue stops before any residual add.
Epilogue conv_epilogue(const GraphRewriter& rw, const ir::Op& op, const std::optional<FoldedBatchNorm>& folded,
                       const dnnl_ops::Conv2dParams* with_post_ops, bool residuals_allowed = true) {
  const ir::ValueId start = folded ? rw.op(folded->batch_norm).results[0] : op.results[0];
  const auto keeps_direct = [&](std::span<const dnnl_ops::PostOp> post_ops) {
    if (dnnl_ops::residual_count(post_ops) == 0) return true;
    if (!residuals_allowed) return false;
    dnnl_ops::Conv2dParams longer = *with_post_ops;
    longer.post_ops.assign(post_ops.begin(), post_ops.end());
    return dnnl_ops::Conv2dPrimitive::is_direct_for(longer);
  };
  Epilogue epilogue =
      with_post_ops ? collect_epilogue(rw, start, false, keeps_direct) : Epilogue{{}, std::nullopt, {}, {}, start};
  if (folded) epilogue.ops.insert(epilogue.ops.begin(), folded->batch_norm);
  return epilogue;
}

// The convolution as oneDNN's 2-D one: conv1d's [N, C, L] input and [O, C / groups, K] weight are
// the same bytes as [N, C, 1, L] and [O, C / groups, 1, K], its result as [N, O, 1, L'].
dnnl_ops::Conv2dParams as_conv2d(const GraphRewriter& rw, const ir::Op& op) {
  const ir::ConvParams& conv = ir::params_of<ir::ConvParams>(op);
  std::vector<int64_t> x = rw.dims(op.operands[0]), w = rw.dims(op.operands[1]);
  const bool has_bias = op.operands.size() > 2;
  if (conv.stride.size() != 1)
    return {x,
            w,
            {conv.stride[0], conv.stride[1]},
            {conv.padding[0], conv.padding[1]},
            {conv.dilation[0], conv.dilation[1]},
            conv.groups,
            has_bias,
            {}};
  x.insert(x.begin() + std::min<ptrdiff_t>(2, ptrdiff_t(x.size())), 1);
  w.insert(w.begin() + std::min<ptrdiff_t>(2, ptrdiff_t(w.size())), 1);
  return {x, w, {1, conv.stride[0]}, {0, conv.padding[0]}, {1, conv.dilation[0]}, conv.groups, has_bias, {}};
}

Planned<ConvStagePlan> plan_conv_stage(const GraphRewriter& rw, ir::OpId id, int64_t slices,
                                       bool residuals_allowed = true) {
  const ir::Op& op = rw.op(id);
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) return "not f32";
  const std::optional<Tensor> weight = constant_tensor(rw, op.operands[1]);
  if (!weight) return "the weight is not a constant";
  dnnl_ops::Conv2dParams params = as_conv2d(rw, op);
  std::optional<FoldedBatchNorm> folded = fold_batch_norm(rw, op, *weight);
  params.has_bias = params.has_bias || folded;
  params.input_dims[0] /= slices;
  Epilogue epilogue = conv_epilogue(rw, op, folded, &params, residuals_allowed);
  ConvStagePlan plan{std::move(params), *weight, std::move(epilogue), std::nullopt, std::move(folded)};
  plan.params.post_ops = plan.epilogue.post_ops;
  if (auto why = dnnl_ops::Conv2dPrimitive::refuse(plan.params)) {
    if (plan.epilogue.post_ops.empty()) return *why;
    plan.epilogue_refusal = *why;
    plan.epilogue = conv_epilogue(rw, op, plan.folded, nullptr);
    plan.params.post_ops.clear();
    if (auto bare_why = dnnl_ops::Conv2dPrimitive::refuse(plan.params)) return *bare_why;
  }
  return plan;
}

ConvStage make_conv_stage(const GraphRewriter& rw, ir::OpId id, ConvStagePlan plan) {
  const ir::Op& op = rw.op(id);
  ConvStage stage{id, nullptr, plan.weight, plan.params.has_bias, nullptr, std::move(plan.epilogue)};
  const dnnl_ops::ConstantWeight weight =
      plan.folded ? plan.folded->weight : constant_weight(rw, op.operands[1], plan.weight);
  if (plan.folded) stage.folded = plan.folded->folded;
  stage.primitive = std::make_shared<const dnnl_ops::Conv2dPrimitive>(plan.params, weight);
  stage.out_slice_floats = numel_of(stage.primitive->output_dims());
  return stage;
}

// Grows a graph of convolutions from a head: in the source's order, each convolution that reads an
// earlier stage's result joins, until an op other than the stages' epilogues reads one. A residual
// produced by a convolution not yet in the graph (resnet's downsample) brings that convolution in
// first. Every stage result but the last must be read by the graph alone: it never reaches NCHW.
class ConvGraphBuilder {
public:
  ConvGraphBuilder(const GraphRewriter& rw, ir::OpId head, int64_t slices) : rw_(rw), head_(head), slices_(slices) {}

  std::vector<ConvStage> build(ConvStagePlan head_plan, std::vector<ir::ValueId>& operands) {
    operands_.push_back(rw_.op(head_).operands[0]);
    ConvStage head = make_conv_stage(rw_, head_, std::move(head_plan));
    const std::vector<ir::ValueId> head_residuals = head.epilogue.residuals;
    add(std::move(head), head_residuals);
    for (ir::OpId id = head_ + 1; id < rw_.source().ops.size(); ++id) {
      if (taken_.contains(id) || !reads_stage(rw_.op(id))) continue;
      if (!try_join(id)) break;
    }
    while (stages_.size() > 1 && !results_stay_inside())
      drop_last();
    operands = operands_;
    return std::move(stages_);
  }

private:
  bool reads_stage(const ir::Op& op) const {
    return std::any_of(op.operands.begin(), op.operands.end(), [&](ir::ValueId v) { return stage_of_.contains(v); });
  }

  // A convolution reading a stage's result in that stage's layout, with its residual available.
  bool try_join(ir::OpId id, bool residuals_allowed = true) {
    const ir::Op& op = rw_.op(id);
    if (!is_convolution(op.kind) || !rw_.is_open(id) || taken_.contains(id)) return false;
    const auto input = stage_of_.find(op.operands[0]);
    if (input == stage_of_.end()) return false;
    Planned<ConvStagePlan> planned = plan_conv_stage(rw_, id, slices_, residuals_allowed);
    if (refusal_of(planned)) return false;
    ConvStagePlan& plan = std::get<ConvStagePlan>(planned);
    for (ir::ValueId residual : plan.epilogue.residuals)
      if (!available(residual)) return false;
    ConvStage stage = make_conv_stage(rw_, id, std::move(plan));
    if (!stage.primitive->reads_layout_of(*stages_[input->second].primitive)) return false;
    stage.input_stage = input->second;
    const std::vector<ir::ValueId> residuals = stage.epilogue.residuals;
    if (residuals.size() == 1 && stage_of_.contains(residuals[0])) {
      const size_t producer = stage_of_.at(residuals[0]);
      if (!stage.primitive->adds_in_layout_of(*stages_[producer].primitive)) return false;
      stage.residual_stage = producer;
    } else if (std::any_of(residuals.begin(), residuals.end(), [&](ir::ValueId v) { return stage_of_.contains(v); })) {
      return false;
    }
    const std::vector<ir::ValueId> residual_operands = stage.residual_stage ? std::vector<ir::ValueId>{} : residuals;
    add(std::move(stage), residual_operands);
    return true;
  }

  // A residual the graph can read when a stage needs it: a stage's result (bringing in the
  // convolution that makes it when that reads the graph), or a value made before the head.
  bool available(ir::ValueId residual) {
    if (stage_of_.contains(residual)) return true;
    const ir::Op* def = rw_.producer(residual);
    if (!def) return true;
    const auto def_id = ir::OpId(def - rw_.source().ops.data());
    if (def_id < head_) return true;
    for (ir::OpId id = head_ + 1; id < def_id; ++id) {
      const ir::Op& op = rw_.op(id);
      if (!is_convolution(op.kind) || !stage_of_.contains(op.operands[0]) || !try_join(id, false)) continue;
      if (stage_of_.contains(residual)) return true;
      drop_last();
    }
    return false;
  }

  void add(ConvStage stage, const std::vector<ir::ValueId>& residual_operands) {
    const ir::Op& op = rw_.op(stage.id);
    operands_before_.push_back(operands_.size());
    if (stage.has_bias && !stage.folded) stage.bias_input = operand(op.operands[2]);
    for (ir::ValueId v : residual_operands)
      stage.residual_inputs.push_back(operand(v));
    taken_.insert(stage.id);
    taken_.insert(stage.epilogue.ops.begin(), stage.epilogue.ops.end());
    stage_of_[stage.epilogue.result] = stages_.size();
    stages_.push_back(std::move(stage));
  }

  void drop_last() {
    const ConvStage& stage = stages_.back();
    taken_.erase(stage.id);
    for (ir::OpId id : stage.epilogue.ops)
      taken_.erase(id);
    stage_of_.erase(stage.epilogue.result);
    stages_.pop_back();
    operands_.resize(operands_before_.back());
    operands_before_.pop_back();
  }

  size_t operand(ir::ValueId v) {
    operands_.push_back(v);
    return operands_.size() - 1;
  }

  // Whether every stage result but the last is read only by the graph's ops.
  bool results_stay_inside() const {
    for (size_t i = 0; i + 1 < stages_.size(); ++i) {
      const ir::ValueId v = stages_[i].epilogue.result;
      int inside = 0;
      for (ir::OpId id : taken_)
        for (ir::ValueId operand : rw_.op(id).operands)
          inside += operand == v;
      if (inside != rw_.uses(v)) return false;
    }
    return true;
  }

  const GraphRewriter& rw_;
  ir::OpId head_;
  int64_t slices_;
  std::vector<ConvStage> stages_;
  std::map<ir::ValueId, size_t> stage_of_; // a stage's result -> the stage
  std::set<ir::OpId> taken_;               // the stages' convolutions and epilogues
  std::vector<ir::ValueId> operands_;      // the step's inputs
  std::vector<size_t> operands_before_;    // per stage: the step's inputs before it added its own
};

// One slice per thread when the batch divides evenly among them, else the whole batch at once.
int64_t batch_slices(const std::vector<int64_t>& input_dims) {
  const int64_t threads = exec::num_threads(), batch = input_dims.empty() ? 0 : input_dims[0];
  return threads > 1 && batch >= threads && batch % threads == 0 ? threads : 1;
}

// The head of a graph; the convolutions that join it are decided when it is lowered.
std::optional<std::string> refuse_conv2d(const GraphRewriter& rw, ir::OpId id) {
  const std::vector<int64_t> input_dims = as_conv2d(rw, rw.op(id)).input_dims;
  if (input_dims.size() != 4) return "the input is not NCHW ([N, C, L] for conv1d)";
  return refusal_of(plan_conv_stage(rw, id, batch_slices(input_dims)));
}

void lower_conv2d(GraphRewriter& rw, ir::OpId id) {
  const ir::Op& head = rw.op(id);
  const int64_t slices = batch_slices(rw.dims(head.operands[0]));
  Planned<ConvStagePlan> first = plan_conv_stage(rw, id, slices);
  std::optional<std::string> epilogue_refusal = std::get<ConvStagePlan>(first).epilogue_refusal;
  std::vector<ir::ValueId> operands;
  std::vector<ConvStage> stages =
      ConvGraphBuilder(rw, id, slices).build(std::get<ConvStagePlan>(std::move(first)), operands);

  const std::string name(kDnnlConv2d.name);
  exec::LoweredStep step{name, operands, {stages.back().epilogue.result}, id, nullptr};
  ir::OpId end = id;
  for (size_t i = 0; i < stages.size(); ++i) {
    const ConvStage& stage = stages[i];
    const ir::Op& op = rw.op(stage.id);
    std::string note =
        stage.primitive->implementation() + ", constant weight '" + constant_name(rw, op.operands[1]) + "'";
    if (op.kind == ir::OpKind::conv1d) note += ", as a 2-D convolution of one row";
    if (stage.folded) note += ", batch_norm " + ir::op_name(rw.source(), stage.epilogue.ops.front()) + " folded in";
    if (stage.input_stage)
      note += ", reads " + ir::op_name(rw.source(), stages[*stage.input_stage].id) + "'s result in its own layout";
    if (stage.residual_stage)
      note += ", adds " + ir::op_name(rw.source(), stages[*stage.residual_stage].id) + "'s result in its own layout";
    if (slices > 1) note += ", batch in " + std::to_string(slices) + " slices, one per thread";
    if (i == 0 && epilogue_refusal) note += ", not its epilogue: " + *epilogue_refusal;
    rw.take(stage.id, name, note);
    take_epilogue(rw, stage.epilogue, name, stage.id);
    end = std::max(end, stage.epilogue.ops.empty()
                            ? stage.id
                            : *std::max_element(stage.epilogue.ops.begin(), stage.epilogue.ops.end()));
  }
  const int64_t input_slice_floats = numel_of(rw.dims(head.operands[0])) / slices;
  step.runner = std::make_shared<ConvGraphRunner>(std::move(stages), slices, input_slice_floats);
  if (end == id)
    rw.emit_step(std::move(step));
  else
    rw.emit_step_at(end, std::move(step));
}

} // namespace

const Implementation kDnnlConv2d{{"dnnl.conv2d"}, refuse_conv2d, lower_conv2d, kConvolutions};

} // namespace kiln::jitc::tier
