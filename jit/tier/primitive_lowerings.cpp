#include "jit/dnnl/layer_norm.hpp"
#include "jit/dnnl/pool2d.hpp"
#include "jit/dnnl/softmax.hpp"
#include "jit/tier/lowerings.hpp"

namespace kiln::jitc::tier {

namespace {

// A primitive with one input and one output of its own dims.
template <class Primitive> class UnaryPrimitiveRunner final : public exec::StepRunner {
public:
  explicit UnaryPrimitiveRunner(Primitive primitive) : primitive_(std::move(primitive)) {}
  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override {
    primitive_.execute(inputs[0].as<const float>(), outputs[0].as<float>(), scratch);
  }
  size_t scratch_bytes() const override { return primitive_.scratch_bytes(); }

private:
  Primitive primitive_;
};

class LayerNormRunner final : public exec::StepRunner {
public:
  LayerNormRunner(dnnl_ops::LayerNormPrimitive primitive, bool has_weight, bool has_bias)
      : primitive_(std::move(primitive)), has_weight_(has_weight), has_bias_(has_bias) {}
  void run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
           std::span<std::byte> scratch) const override {
    const float* weight = has_weight_ ? inputs[1].as<const float>() : nullptr;
    const float* bias = has_bias_ ? inputs[2].as<const float>() : nullptr;
    primitive_.execute(inputs[0].as<const float>(), weight, bias, outputs[0].as<float>(), scratch);
  }
  size_t scratch_bytes() const override { return primitive_.scratch_bytes(); }

private:
  dnnl_ops::LayerNormPrimitive primitive_;
  bool has_weight_;
  bool has_bias_;
};

bool all_f32(const GraphRewriter& rw, const ir::Op& op) {
  for (ir::ValueId v : op.operands)
    if (rw.dtype(v) != DType::f32) return false;
  for (ir::ValueId v : op.results)
    if (rw.dtype(v) != DType::f32) return false;
  return true;
}

// The shared check of every one-op lowering: f32, and params the primitive accepts.
template <class Primitive, class Params>
std::optional<std::string> refuse_one_op(const GraphRewriter& rw, ir::OpId id, const Params& params) {
  if (!all_f32(rw, rw.op(id))) return "not f32";
  return Primitive::refuse(params);
}

// The shared tail of every one-op lowering: build, emit a step over the op's operands.
template <class Primitive, class Params, class MakeRunner>
void lower_one_op(GraphRewriter& rw, ir::OpId id, std::string_view implementation, const Params& params,
                  MakeRunner make_runner) {
  const ir::Op& op = rw.op(id);
  Primitive primitive(params);
  const std::string note = primitive.implementation();
  rw.take(id, implementation, note);
  rw.emit_step({std::string(implementation), op.operands, op.results, id, make_runner(std::move(primitive))});
}

template <class Primitive> auto unary_runner() {
  return [](Primitive primitive) { return std::make_shared<UnaryPrimitiveRunner<Primitive>>(std::move(primitive)); };
}

dnnl_ops::SoftmaxParams softmax_params(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  return {rw.dims(op.operands[0]), ir::params_of<ir::AxisParams>(op).axis, op.kind == ir::OpKind::log_softmax};
}

std::optional<std::string> refuse_softmax(const GraphRewriter& rw, ir::OpId id) {
  return refuse_one_op<dnnl_ops::SoftmaxPrimitive>(rw, id, softmax_params(rw, id));
}

void lower_softmax(GraphRewriter& rw, ir::OpId id) {
  lower_one_op<dnnl_ops::SoftmaxPrimitive>(rw, id, kDnnlSoftmax.name, softmax_params(rw, id),
                                           unary_runner<dnnl_ops::SoftmaxPrimitive>());
}

dnnl_ops::LayerNormParams layer_norm_params(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  const ir::NormParams& norm = ir::params_of<ir::NormParams>(op);
  return {rw.dims(op.operands[0]), norm.axis, op.operands.size() > 1, op.operands.size() > 2, float(norm.eps)};
}

std::optional<std::string> refuse_layer_norm(const GraphRewriter& rw, ir::OpId id) {
  return refuse_one_op<dnnl_ops::LayerNormPrimitive>(rw, id, layer_norm_params(rw, id));
}

void lower_layer_norm(GraphRewriter& rw, ir::OpId id) {
  const dnnl_ops::LayerNormParams params = layer_norm_params(rw, id);
  lower_one_op<dnnl_ops::LayerNormPrimitive>(
      rw, id, kDnnlLayerNorm.name, params, [&](dnnl_ops::LayerNormPrimitive primitive) {
        return std::make_shared<LayerNormRunner>(std::move(primitive), params.has_weight, params.has_bias);
      });
}

dnnl_ops::Pool2dParams pool2d_params(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  dnnl_ops::PoolKind kind = dnnl_ops::PoolKind::max;
  if (const auto* avg = std::get_if<ir::AvgPoolParams>(&op.params))
    kind = avg->count_include_pad ? dnnl_ops::PoolKind::avg_include_pad : dnnl_ops::PoolKind::avg_exclude_pad;
  const ir::PoolParams& window = ir::pool_window(op.params);
  return {rw.dims(op.operands[0]), kind, window.kernel, window.stride, window.padding};
}

std::optional<std::string> refuse_pool2d(const GraphRewriter& rw, ir::OpId id) {
  return refuse_one_op<dnnl_ops::Pool2dPrimitive>(rw, id, pool2d_params(rw, id));
}

void lower_pool2d(GraphRewriter& rw, ir::OpId id) {
  lower_one_op<dnnl_ops::Pool2dPrimitive>(rw, id, kDnnlPool2d.name, pool2d_params(rw, id),
                                          unary_runner<dnnl_ops::Pool2dPrimitive>());
}

// A uniform adaptive window (H % oh == 0 and W % ow == 0) is a plain average pool: kernel = stride =
// H / oh, no padding. Other windows overlap or vary in size, which no oneDNN pooling expresses.
std::optional<dnnl_ops::Pool2dParams> uniform_adaptive_window(const GraphRewriter& rw, ir::OpId id) {
  const ir::Op& op = rw.op(id);
  const std::vector<int64_t> x = rw.dims(op.operands[0]);
  const ir::Pair& out = ir::params_of<ir::AdaptivePoolParams>(op).output_size;
  if (x.size() != 4 || out[0] < 1 || out[1] < 1 || x[2] % out[0] || x[3] % out[1]) return std::nullopt;
  const std::array<int64_t, 2> kernel{x[2] / out[0], x[3] / out[1]};
  return dnnl_ops::Pool2dParams{x, dnnl_ops::PoolKind::avg_exclude_pad, kernel, kernel, {0, 0}};
}

std::optional<std::string> refuse_adaptive_pool2d(const GraphRewriter& rw, ir::OpId id) {
  const std::optional<dnnl_ops::Pool2dParams> params = uniform_adaptive_window(rw, id);
  if (!params) return "windows are not uniform (H % oh or W % ow is not 0)";
  return refuse_one_op<dnnl_ops::Pool2dPrimitive>(rw, id, *params);
}

void lower_adaptive_pool2d(GraphRewriter& rw, ir::OpId id) {
  lower_one_op<dnnl_ops::Pool2dPrimitive>(rw, id, kDnnlAdaptivePool2d.name, *uniform_adaptive_window(rw, id),
                                          unary_runner<dnnl_ops::Pool2dPrimitive>());
}

} // namespace

constexpr ir::OpKind kSoftmaxes[] = {ir::OpKind::softmax, ir::OpKind::log_softmax};
constexpr ir::OpKind kLayerNorm[] = {ir::OpKind::layer_norm};
constexpr ir::OpKind kPools[] = {ir::OpKind::max_pool2d, ir::OpKind::avg_pool2d};
constexpr ir::OpKind kAdaptivePool[] = {ir::OpKind::adaptive_avg_pool2d};

const Implementation kDnnlSoftmax{{"dnnl.softmax"}, refuse_softmax, lower_softmax, kSoftmaxes};
const Implementation kDnnlLayerNorm{{"dnnl.layer_norm"}, refuse_layer_norm, lower_layer_norm, kLayerNorm};
const Implementation kDnnlPool2d{{"dnnl.pool2d"}, refuse_pool2d, lower_pool2d, kPools};
const Implementation kDnnlAdaptivePool2d{
    {"dnnl.adaptive_avg_pool2d"}, refuse_adaptive_pool2d, lower_adaptive_pool2d, kAdaptivePool};

} // namespace kiln::jitc::tier
