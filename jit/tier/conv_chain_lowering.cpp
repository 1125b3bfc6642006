#include "jit/dnnl/conv2d.hpp"
#include "jit/dnnl/engine.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"
#include <kiln/error.hpp>

namespace kiln::jit::tier {

std::array<int64_t, 2> pair_attr(const ir::Op& op, const std::string& name) {
  const std::vector<int64_t>& values = op.attrs.get_ints(name);
  if (values.size() != 2)
    throw Error(ErrorKind::internal, "jit partitioner: attribute '" + name + "' needs two values");
  return {values[0], values[1]};
}

namespace {

// One convolution of a chain, with the epilogue its primitive applies.
struct ConvStage {
  ir::OpId id = 0;
  std::shared_ptr<const dnnl_ops::Conv2dPrimitive> primitive;
  Tensor weight; // the primitive may read a constant weight in place
  bool has_bias = false;
  Epilogue epilogue;
};

// Runs a chain of convolutions, each feeding the next (one convolution is a chain of one). Between
// them the activations stay in the convolutions' own blocked layout, in this thread's chain
// buffers: cnn b8 spent 0.66 ms per call reordering to NCHW and back.
class ConvChainRunner final : public interp::StepRunner {
public:
  explicit ConvChainRunner(std::vector<ConvStage> stages) : stages_(std::move(stages)) {}

  void run(std::span<const interp::View> inputs, std::span<const interp::View> outputs) const override {
    size_t next = 0;
    const float* input = inputs[next++].as<const float>();
    for (size_t i = 0; i < stages_.size(); ++i) {
      const ConvStage& stage = stages_[i];
      const bool last = i + 1 == stages_.size();
      dnnl_ops::Conv2dArgs args;
      args.input = input;
      args.input_in_own_layout = i > 0;
      if (stage.has_bias) args.bias = inputs[next++].as<const float>();
      const auto residual_count = int(stage.epilogue.residuals.size());
      ResidualPointers residuals(inputs.subspan(next), residual_count);
      next += size_t(residual_count);
      args.residuals = residuals.span();
      const auto slot = i % 2 ? dnnl_ops::ThreadBuffer::chain_odd : dnnl_ops::ThreadBuffer::chain_even;
      args.out = last ? outputs[0].as<float>()
                      : static_cast<float*>(dnnl_ops::thread_buffer(slot, stage.primitive->output_bytes()));
      args.output_in_own_layout = !last;
      stage.primitive->execute(args);
      input = args.out;
    }
  }

private:
  std::vector<ConvStage> stages_;
};

// The convolution at `id` with its epilogue, as oneDNN would run it; nullopt (with the refusal
// recorded when `record`) when it cannot.
std::optional<ConvStage> plan_conv_stage(GraphRewriter& rw, ir::OpId id, bool record) {
  const ir::Op& op = rw.op(id);
  auto refuse = [&](const std::string& lowering, const std::string& why) {
    if (record) rw.refuse(id, lowering, why);
    return std::nullopt;
  };
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) return refuse("dnnl.conv2d", "not f32");
  const std::optional<Tensor> weight = constant_tensor(rw, op.operands[1]);
  if (!weight) return refuse("dnnl.conv2d", "the weight is not a constant");
  ConvStage stage{id, nullptr, *weight, op.operands.size() > 2, {}};
  dnnl_ops::Conv2dParams params{
      rw.dims(op.operands[0]),   rw.dims(op.operands[1]),    pair_attr(op, "stride"), pair_attr(op, "padding"),
      pair_attr(op, "dilation"), op.attrs.get_int("groups"), stage.has_bias,          {}};
  stage.epilogue = collect_epilogue(rw, op.results[0], false);
  params.post_ops = stage.epilogue.post_ops;
  if (auto why = dnnl_ops::Conv2dPrimitive::refuse(params)) {
    if (record) rw.refuse(id, "dnnl.conv2d with its epilogue", *why);
    stage.epilogue = Epilogue{{}, std::nullopt, {}, {}, op.results[0]};
    params.post_ops.clear();
    if (auto bare_why = dnnl_ops::Conv2dPrimitive::refuse(params)) return refuse("dnnl.conv2d", *bare_why);
  }
  stage.primitive = std::make_shared<const dnnl_ops::Conv2dPrimitive>(
      params, dnnl_ops::ConstantWeight{weight->data<float>(), constant_name(rw, op.operands[1]), 0, nullptr});
  return stage;
}

// The convolution that alone reads `previous`'s result as its input, in the layout `previous`
// writes it.
std::optional<ConvStage> chained_conv(GraphRewriter& rw, const ConvStage& previous) {
  const std::optional<ir::OpId> user = rw.single_user(previous.epilogue.result);
  if (!user || !rw.is_open(*user)) return std::nullopt;
  const ir::Op& op = rw.op(*user);
  if (op.kind != ir::OpKind::conv2d || op.operands[0] != previous.epilogue.result) return std::nullopt;
  std::optional<ConvStage> next = plan_conv_stage(rw, *user, false);
  if (!next || !next->primitive->reads_layout_of(*previous.primitive)) return std::nullopt;
  return next;
}

} // namespace

bool lower_conv2d(GraphRewriter& rw, ir::OpId id) {
  std::optional<ConvStage> first = plan_conv_stage(rw, id, true);
  if (!first) return false;
  std::vector<ConvStage> stages{std::move(*first)};
  while (auto next = chained_conv(rw, stages.back()))
    stages.push_back(std::move(*next));

  const ir::Op& head = rw.op(id);
  GraphRewriter::CustomOp custom{"jit.conv2d", {head.operands[0]}, {stages.back().epilogue.result}, head.loc, nullptr};
  for (size_t i = 0; i < stages.size(); ++i) {
    const ConvStage& stage = stages[i];
    const ir::Op& op = rw.op(stage.id);
    if (stage.has_bias) custom.operands.push_back(op.operands[2]);
    custom.operands.insert(custom.operands.end(), stage.epilogue.residuals.begin(), stage.epilogue.residuals.end());
    std::string note =
        stage.primitive->implementation() + ", constant weight '" + constant_name(rw, op.operands[1]) + "'";
    if (i > 0) note += ", reads op " + std::to_string(stages[i - 1].id) + "'s result in its blocked layout";
    rw.take(stage.id, "dnnl.conv2d", note);
    take_epilogue(rw, stage.epilogue, "dnnl.conv2d", stage.id);
  }
  const ConvStage& last = stages.back();
  const ir::OpId end = last.epilogue.ops.empty() ? last.id : last.epilogue.ops.back();
  custom.runner = std::make_shared<ConvChainRunner>(std::move(stages));
  if (end == id)
    rw.emit_custom(custom);
  else
    rw.emit_custom_at(end, std::move(custom));
  return true;
}

} // namespace kiln::jit::tier
