#include "exec/threads.hpp"
#include "jit/dnnl/conv2d.hpp"
#include "jit/dnnl/engine.hpp"
#include "jit/tier/batch_norm_folding.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"
#include <algorithm>
#include <exception>
#include <kiln/error.hpp>
#include <mutex>

namespace kiln::jit::tier {

namespace {

// One convolution of a chain, with the epilogue its primitive applies.
struct ConvStage {
  ir::OpId id = 0;
  std::shared_ptr<const dnnl_ops::Conv2dPrimitive> primitive;
  Tensor weight; // the primitive may read a constant weight in place
  bool has_bias = false;
  std::shared_ptr<const FoldedConvWeights> folded; // a batch_norm folded in: its weight and bias
  Epilogue epilogue;
  int64_t out_slice_floats = 0; // the result of one batch slice (the whole batch when unsliced)
};

// Runs a chain of convolutions, each feeding the next (one convolution is a chain of one). Between
// them the activations stay in the convolutions' own blocked layout, in two buffers of the step's
// scratch that alternate (even and odd stages): cnn b8 spent 0.66 ms per call reordering to NCHW and back. With
// `slices` > 1 the batch is cut into that many equal slices, one per thread, each running the whole chain on its own
// images (the primitives were made for a slice): no thread waits for another between
// convolutions, and a slice's activations stay in its core's cache.
class ConvChainRunner final : public exec::StepRunner {
public:
  ConvChainRunner(std::vector<ConvStage> stages, int64_t slices, int64_t input_slice_floats)
      : stages_(std::move(stages)), slices_(slices), input_slice_floats_(input_slice_floats) {
    for (size_t i = 0; i + 1 < stages_.size(); ++i) {
      size_t& between = i % 2 ? odd_bytes_ : even_bytes_;
      between = std::max(between, dnnl_ops::scratch_piece(stages_[i].primitive->output_bytes()));
    }
    for (const ConvStage& stage : stages_)
      stage_scratch_bytes_ = std::max(stage_scratch_bytes_, stage.primitive->scratch_bytes());
  }

  // Each slice: the even and odd activations, then one stage's scratch at a time.
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
  size_t slice_scratch_bytes() const { return even_bytes_ + odd_bytes_ + stage_scratch_bytes_; }

  void run_slice(std::span<const exec::View> inputs, std::span<const exec::View> outputs, int64_t slice,
                 std::span<std::byte> scratch) const {
    float* const between[2] = {reinterpret_cast<float*>(scratch.data()),
                               reinterpret_cast<float*>(scratch.data() + even_bytes_)};
    const std::span<std::byte> stage_scratch = scratch.subspan(even_bytes_ + odd_bytes_, stage_scratch_bytes_);
    size_t next = 0;
    const float* input = inputs[next++].as<const float>() + slice * input_slice_floats_;
    for (size_t i = 0; i < stages_.size(); ++i) {
      const ConvStage& stage = stages_[i];
      const bool last = i + 1 == stages_.size();
      dnnl_ops::Conv2dArgs args;
      args.input = input;
      args.input_in_own_layout = i > 0;
      if (stage.has_bias)
        args.bias = stage.folded ? stage.folded->bias.data<float>() : inputs[next++].as<const float>();
      const auto residual_count = int(stage.epilogue.residuals.size());
      ResidualPointers residuals(inputs.subspan(next), residual_count, slice * stage.out_slice_floats);
      next += size_t(residual_count);
      args.residuals = residuals.span();
      args.out = last ? outputs[0].as<float>() + slice * stage.out_slice_floats : between[i % 2];
      args.output_in_own_layout = !last;
      stage.primitive->execute(args, stage_scratch);
      input = args.out;
    }
  }

  std::vector<ConvStage> stages_;
  int64_t slices_;
  int64_t input_slice_floats_;
  size_t even_bytes_ = 0, odd_bytes_ = 0; // the activations between stages, in their layouts
  size_t stage_scratch_bytes_ = 0;        // the most any one stage's primitive takes
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
Epilogue conv_epilogue(const GraphRewriter& rw, const ir::Op& op, const std::optional<FoldedBatchNorm>& folded,
                       const dnnl_ops::Conv2dParams* with_post_ops) {
  const ir::ValueId start = folded ? rw.op(folded->batch_norm).results[0] : op.results[0];
  const auto keeps_direct = [&](std::span<const dnnl_ops::PostOp> post_ops) {
    if (dnnl_ops::residual_count(post_ops) == 0) return true;
    dnnl_ops::Conv2dParams longer = *with_post_ops;
    longer.post_ops.assign(post_ops.begin(), post_ops.end());
    return dnnl_ops::Conv2dPrimitive::is_direct_for(longer);
  };
  Epilogue epilogue =
      with_post_ops ? collect_epilogue(rw, start, false, keeps_direct) : Epilogue{{}, std::nullopt, {}, {}, start};
  if (folded) epilogue.ops.insert(epilogue.ops.begin(), folded->batch_norm);
  return epilogue;
}

Planned<ConvStagePlan> plan_conv_stage(const GraphRewriter& rw, ir::OpId id, int64_t slices) {
  const ir::Op& op = rw.op(id);
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) return "not f32";
  const std::optional<Tensor> weight = constant_tensor(rw, op.operands[1]);
  if (!weight) return "the weight is not a constant";
  const ir::ConvParams& conv = ir::params_of<ir::ConvParams>(op);
  dnnl_ops::Conv2dParams params{rw.dims(op.operands[0]),
                                rw.dims(op.operands[1]),
                                conv.stride,
                                conv.padding,
                                conv.dilation,
                                conv.groups,
                                op.operands.size() > 2,
                                {}};
  std::optional<FoldedBatchNorm> folded = fold_batch_norm(rw, op, *weight);
  params.has_bias = params.has_bias || folded;
  params.input_dims[0] /= slices;
  Epilogue epilogue = conv_epilogue(rw, op, folded, &params);
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

// The convolution that alone reads `previous`'s result as its input, in the layout `previous`
// writes it.
std::optional<ConvStage> chained_conv(const GraphRewriter& rw, const ConvStage& previous, int64_t slices) {
  const std::optional<ir::OpId> user = rw.single_user(previous.epilogue.result);
  if (!user || !rw.is_open(*user)) return std::nullopt;
  const ir::Op& op = rw.op(*user);
  if (op.kind != ir::OpKind::conv2d || op.operands[0] != previous.epilogue.result) return std::nullopt;
  Planned<ConvStagePlan> planned = plan_conv_stage(rw, *user, slices);
  if (refusal_of(planned)) return std::nullopt;
  ConvStage next = make_conv_stage(rw, *user, std::get<ConvStagePlan>(std::move(planned)));
  if (!next.primitive->reads_layout_of(*previous.primitive)) return std::nullopt;
  return next;
}

// One slice per thread when the batch divides evenly among them, else the whole batch at once.
int64_t batch_slices(const std::vector<int64_t>& input_dims) {
  const int64_t threads = exec::num_threads(), batch = input_dims.empty() ? 0 : input_dims[0];
  return threads > 1 && batch >= threads && batch % threads == 0 ? threads : 1;
}

// The head of a chain; the convolutions it reads are decided when it is lowered.
std::optional<std::string> refuse_conv2d(const GraphRewriter& rw, ir::OpId id) {
  const std::vector<int64_t> input_dims = rw.dims(rw.op(id).operands[0]);
  if (input_dims.size() != 4) return "the input is not NCHW";
  return refusal_of(plan_conv_stage(rw, id, batch_slices(input_dims)));
}

void lower_conv2d(GraphRewriter& rw, ir::OpId id) {
  const ir::Op& head = rw.op(id);
  const int64_t slices = batch_slices(rw.dims(head.operands[0]));
  Planned<ConvStagePlan> first = plan_conv_stage(rw, id, slices);
  std::optional<std::string> epilogue_refusal = std::get<ConvStagePlan>(first).epilogue_refusal;
  std::vector<ConvStage> stages{make_conv_stage(rw, id, std::get<ConvStagePlan>(std::move(first)))};
  while (auto next = chained_conv(rw, stages.back(), slices))
    stages.push_back(std::move(*next));

  const std::string name(kDnnlConv2d.name);
  exec::LoweredStep step{name, {head.operands[0]}, {stages.back().epilogue.result}, id, nullptr};
  for (size_t i = 0; i < stages.size(); ++i) {
    const ConvStage& stage = stages[i];
    const ir::Op& op = rw.op(stage.id);
    if (stage.has_bias && !stage.folded) step.operands.push_back(op.operands[2]);
    step.operands.insert(step.operands.end(), stage.epilogue.residuals.begin(), stage.epilogue.residuals.end());
    std::string note =
        stage.primitive->implementation() + ", constant weight '" + constant_name(rw, op.operands[1]) + "'";
    if (stage.folded) note += ", batch_norm op " + std::to_string(stage.epilogue.ops.front()) + " folded in";
    if (i > 0) note += ", reads op " + std::to_string(stages[i - 1].id) + "'s result in its blocked layout";
    if (slices > 1) note += ", batch in " + std::to_string(slices) + " slices, one per thread";
    if (i == 0 && epilogue_refusal) note += ", not its epilogue: " + *epilogue_refusal;
    rw.take(stage.id, name, note);
    take_epilogue(rw, stage.epilogue, name, stage.id);
  }
  const ConvStage& last = stages.back();
  const ir::OpId end = last.epilogue.ops.empty() ? last.id : last.epilogue.ops.back();
  const int64_t input_slice_floats = numel_of(rw.dims(head.operands[0])) / slices;
  step.runner = std::make_shared<ConvChainRunner>(std::move(stages), slices, input_slice_floats);
  if (end == id)
    rw.emit_step(std::move(step));
  else
    rw.emit_step_at(end, std::move(step));
}

} // namespace

const Implementation kDnnlConv2d{{"dnnl.conv2d"}, refuse_conv2d, lower_conv2d};

} // namespace kiln::jit::tier
