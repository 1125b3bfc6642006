#include "jit/dnnl/layer_norm.hpp"
#include "jit/dnnl/created_primitive.hpp"
#include <functional>
#include <kiln/error.hpp>
#include <numeric>

namespace kiln::jitc::dnnl_ops {
namespace {

// [rows, normalised size]: the dense tensor seen as rows normalised one by one.
Dims as_rows(const LayerNormParams& params) {
  auto first = params.dims.begin() + params.axis;
  int64_t rows = std::accumulate(params.dims.begin(), first, int64_t{1}, std::multiplies<>());
  int64_t size = std::accumulate(first, params.dims.end(), int64_t{1}, std::multiplies<>());
  return {rows, size};
}

dnnl::normalization_flags flags_of(const LayerNormParams& params) {
  auto flags = dnnl::normalization_flags::none;
  if (params.has_weight) flags |= dnnl::normalization_flags::use_scale;
  if (params.has_bias) flags |= dnnl::normalization_flags::use_shift;
  return flags;
}

dnnl::layer_normalization_forward::primitive_desc make_pd(const LayerNormParams& params, bool allow_empty) {
  using dnnl::layer_normalization_forward;
  Dims rows = as_rows(params);
  layer_normalization_forward::desc op(dnnl::prop_kind::forward_inference, plain_desc(rows), params.eps,
                                       flags_of(params));
  return layer_normalization_forward::primitive_desc(op, make_attr({}, rows), cpu_engine(), allow_empty);
}

} // namespace

struct LayerNormPrimitive::Impl {
  LayerNormParams params;
  CreatedPrimitive core;
  dnnl::memory::desc affine_desc; // weight and bias: [normalised size]
};

std::optional<std::string> LayerNormPrimitive::refuse(const LayerNormParams& params) {
  if (auto reason = refuse_dims("layer_norm input", params.dims, 1)) return reason;
  if (!axis_in_rank(params.axis, params.dims.size())) {
    return "layer_norm axis " + std::to_string(params.axis) + " is outside rank " + std::to_string(params.dims.size());
  }
  if (!(params.eps >= 0.0f)) return "layer_norm eps must be >= 0";
  return refuse_unimplemented("layer_norm", [&] { return make_pd(params, true); });
}

LayerNormPrimitive::LayerNormPrimitive(const LayerNormParams& params) {
  require_accepted("LayerNormPrimitive", refuse(params));
  impl_ = std::make_unique<const Impl>(
      Impl{params, CreatedPrimitive(make_pd(params, false)), plain_desc({as_rows(params)[1]})});
}

LayerNormPrimitive::~LayerNormPrimitive() = default;
LayerNormPrimitive::LayerNormPrimitive(LayerNormPrimitive&&) noexcept = default;
LayerNormPrimitive& LayerNormPrimitive::operator=(LayerNormPrimitive&&) noexcept = default;

size_t LayerNormPrimitive::scratch_bytes() const { return impl_->core.scratch_bytes(); }

void LayerNormPrimitive::execute(const float* in, const float* weight, const float* bias, float* out,
                                 std::span<std::byte> scratch) const {
  const Impl& impl = *impl_;
  require_buffer(in, "LayerNormPrimitive::execute", "the input");
  require_buffer(out, "LayerNormPrimitive::execute", "the result");
  ArgMap bound{{DNNL_ARG_SRC, bind(impl.core.src_desc(), in)}, {DNNL_ARG_DST, bind(impl.core.dst_desc(), out)}};
  if (impl.params.has_weight) {
    require_buffer(weight, "LayerNormPrimitive::execute", "the weight");
    bound[DNNL_ARG_SCALE] = bind(impl.affine_desc, weight);
  }
  if (impl.params.has_bias) {
    require_buffer(bias, "LayerNormPrimitive::execute", "the bias");
    bound[DNNL_ARG_SHIFT] = bind(impl.affine_desc, bias);
  }
  Scratch pieces(scratch, scratch_bytes());
  impl.core.execute(bound, pieces);
}

std::string LayerNormPrimitive::implementation() const { return impl_->core.implementation(); }

} // namespace kiln::jitc::dnnl_ops
