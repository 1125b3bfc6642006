#include "jit/dnnl/deconv2d.hpp"
#include "jit/tier/epilogue.hpp"
#include "jit/tier/lowerings.hpp"

namespace kiln::jitc::tier {

namespace {

class Deconv2dRunner final : public exec::StepRunner {
public:
  Deconv2dRunner(dnnl_ops::Deconv2dPrimitive primitive, Tensor weight, bool has_bias)
      : primitive_(std::move(primitive)), weight_(std::move(weight)), has_bias_(has_bias) {}
  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override {
    primitive_.execute(inputs[0].as<const float>(), has_bias_ ? inputs[2].as<const float>() : nullptr,
                       outputs[0].as<float>(), scratch);
  }
  size_t scratch_bytes() const override { return primitive_.scratch_bytes(); }

private:
  dnnl_ops::Deconv2dPrimitive primitive_;
  Tensor weight_; // keeps the constant alive: the primitive may read it in place
  bool has_bias_;
};

struct Deconv2dPlan {
  dnnl_ops::Deconv2dParams params;
  Tensor weight;
};

// The weight must be a constant or a registry weight, reordered once when the step is built; a
// weight computed in the graph stays with the interpreter's kernel.
Planned<Deconv2dPlan> plan_deconv2d(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  if (!is_f32(rw, op.operands) || !is_f32(rw, op.results)) return "not f32";
  const std::optional<Tensor> weight = constant_tensor(rw, op.operands[1]);
  if (!weight) return "the weight is not a constant";
  const ir::ConvTransposeParams& p = ir::params_of<ir::ConvTransposeParams>(op);
  const ir::ConvParams& c = p.conv;
  Deconv2dPlan plan{{rw.dims(op.operands[0]),
                     rw.dims(op.operands[1]),
                     {c.stride[0], c.stride[1]},
                     {c.padding[0], c.padding[1]},
                     p.output_padding,
                     {c.dilation[0], c.dilation[1]},
                     c.groups,
                     op.operands.size() > 2},
                    *weight};
  if (auto reason = dnnl_ops::Deconv2dPrimitive::refuse(plan.params)) return *reason;
  return plan;
}

std::optional<std::string> refuse_deconv2d(const GraphRewriter& rw, ir::OpId id) {
  return refusal_of(plan_deconv2d(rw, id));
}

void lower_deconv2d(GraphRewriter& rw, ir::OpId id) {
  Deconv2dPlan plan = std::get<Deconv2dPlan>(plan_deconv2d(rw, id));
  const ir::Op& op = rw.op(id);
  dnnl_ops::Deconv2dPrimitive primitive(plan.params, constant_weight(rw, op.operands[1], plan.weight));
  const std::string note = primitive.implementation();
  rw.take(id, kDnnlDeconv2d.name, note);
  rw.emit_step({std::string(kDnnlDeconv2d.name), op.operands, op.results, id,
                std::make_shared<Deconv2dRunner>(std::move(primitive), std::move(plan.weight), plan.params.has_bias)});
}

} // namespace

constexpr ir::OpKind kDeconvolutions[] = {ir::OpKind::conv_transpose2d};
const Implementation kDnnlDeconv2d{{"dnnl.conv_transpose2d"}, refuse_deconv2d, lower_deconv2d, kDeconvolutions};

} // namespace kiln::jitc::tier
