#include "jit/dnnl/deconv2d.hpp"
#include "jit/dnnl/created_primitive.hpp"
#include "jit/dnnl/reordered_weight.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {
namespace {

int64_t output_size(int64_t input, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                    int64_t output_padding) {
  return (input - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1;
}

// oneDNN names a deconvolution's weight [O, C, KH, KW] (per group [G, O / G, C / G, KH, KW]); torch's
// [C, O / G, KH, KW] is the same bytes in iohw (giohw) order.
dnnl::memory::desc given_weight_desc(const Deconv2dParams& params) {
  const Dims& w = params.weight_dims;
  using tag = dnnl::memory::format_tag;
  const auto f32 = dnnl::memory::data_type::f32;
  if (params.groups == 1) return dnnl::memory::desc({w[1], w[0], w[2], w[3]}, f32, tag::iohw);
  return dnnl::memory::desc({params.groups, w[1], w[0] / params.groups, w[2], w[3]}, f32, tag::giohw);
}

dnnl::memory::desc any_weight_desc(const Deconv2dParams& params) {
  const dnnl::memory::desc given = given_weight_desc(params);
  return dnnl::memory::desc(given.dims(), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

std::optional<std::string> refuse_shapes(const Deconv2dParams& params) {
  if (auto reason = refuse_dims("conv_transpose2d input", params.input_dims, 4)) return reason;
  if (auto reason = refuse_dims("conv_transpose2d weight", params.weight_dims, 4)) return reason;
  if (params.input_dims.size() != 4 || params.weight_dims.size() != 4)
    return "conv_transpose2d needs a rank-4 NCHW input and weight";
  const Dims &x = params.input_dims, &w = params.weight_dims;
  if (params.groups < 1 || x[1] != w[0] || w[0] % params.groups != 0)
    return "conv_transpose2d channels do not match groups " + std::to_string(params.groups);
  for (int i = 0; i < 2; ++i) {
    if (params.stride[i] < 1 || params.dilation[i] < 1 || params.padding[i] < 0 || params.output_padding[i] < 0)
      return "conv_transpose2d needs stride, dilation >= 1 and padding, output_padding >= 0";
    // The output padding becomes oneDNN's right padding, padding - output_padding, kept >= 0.
    if (params.output_padding[i] > params.padding[i]) return "output_padding exceeds padding";
  }
  for (int64_t d : deconv2d_output_dims(params))
    if (d < 1) return "conv_transpose2d result would be empty";
  return std::nullopt;
}

dnnl::deconvolution_forward::primitive_desc make_pd(const Deconv2dParams& params, const dnnl::memory::desc& weight,
                                                    bool allow_empty) {
  using dnnl::deconvolution_forward;
  const Dims out = deconv2d_output_dims(params);
  // oneDNN counts dilation from 0 (dense) where kiln counts from 1.
  const Dims strides{params.stride[0], params.stride[1]};
  const Dims dilates{params.dilation[0] - 1, params.dilation[1] - 1};
  const Dims pad_l{params.padding[0], params.padding[1]};
  const Dims pad_r{params.padding[0] - params.output_padding[0], params.padding[1] - params.output_padding[1]};
  const auto desc =
      params.has_bias
          ? deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        plain_desc(params.input_dims), weight, plain_desc({out[1]}), plain_desc(out),
                                        strides, dilates, pad_l, pad_r)
          : deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        plain_desc(params.input_dims), weight, plain_desc(out), strides, dilates, pad_l,
                                        pad_r);
  return deconvolution_forward::primitive_desc(desc, make_attr({}, out), cpu_engine(), allow_empty);
}

} // namespace

struct Deconv2dPrimitive::Impl {
  Dims out_dims;
  bool has_bias = false;
  CreatedPrimitive core;
  ResolvedWeight weight;
};

std::vector<int64_t> deconv2d_output_dims(const Deconv2dParams& params) {
  const Dims &x = params.input_dims, &w = params.weight_dims;
  return {x[0], w[1] * params.groups,
          output_size(x[2], w[2], params.stride[0], params.padding[0], params.dilation[0], params.output_padding[0]),
          output_size(x[3], w[3], params.stride[1], params.padding[1], params.dilation[1], params.output_padding[1])};
}

std::optional<std::string> Deconv2dPrimitive::refuse(const Deconv2dParams& params) {
  if (auto reason = refuse_shapes(params)) return reason;
  return refuse_unimplemented("deconvolution", [&] { return make_pd(params, any_weight_desc(params), true); });
}

Deconv2dPrimitive::Deconv2dPrimitive(const Deconv2dParams& params, const ConstantWeight& weight) {
  require_accepted("Deconv2dPrimitive", refuse(params));
  CreatedPrimitive core(make_pd(params, any_weight_desc(params), false));
  ResolvedWeight resolved = resolve_constant_weight(weight, given_weight_desc(params), core.weights_desc());
  impl_ = std::make_unique<const Impl>(
      Impl{deconv2d_output_dims(params), params.has_bias, std::move(core), std::move(resolved)});
}

Deconv2dPrimitive::~Deconv2dPrimitive() = default;
Deconv2dPrimitive::Deconv2dPrimitive(Deconv2dPrimitive&&) noexcept = default;
Deconv2dPrimitive& Deconv2dPrimitive::operator=(Deconv2dPrimitive&&) noexcept = default;

size_t Deconv2dPrimitive::scratch_bytes() const { return impl_->core.scratch_bytes(); }

void Deconv2dPrimitive::execute(const float* in, const float* bias, float* out, std::span<std::byte> scratch) const {
  const Impl& impl = *impl_;
  require_buffer(in, "Deconv2dPrimitive::execute", "the input");
  require_buffer(out, "Deconv2dPrimitive::execute", "the result");
  ArgMap bound{{DNNL_ARG_SRC, bind(impl.core.src_desc(), in)},
               {DNNL_ARG_WEIGHTS, bind(impl.weight.layout, impl.weight.data)},
               {DNNL_ARG_DST, bind(impl.core.dst_desc(), out)}};
  if (impl.has_bias) {
    require_buffer(bias, "Deconv2dPrimitive::execute", "the bias");
    bound[DNNL_ARG_BIAS] = bind(impl.core.bias_desc(), bias);
  }
  Scratch pieces(scratch, scratch_bytes());
  impl.core.execute(bound, pieces);
}

const std::vector<int64_t>& Deconv2dPrimitive::output_dims() const { return impl_->out_dims; }

std::string Deconv2dPrimitive::implementation() const { return impl_->core.implementation(); }

} // namespace kiln::jitc::dnnl_ops
