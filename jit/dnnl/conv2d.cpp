#include "jit/dnnl/conv2d.hpp"
#include "jit/dnnl/created_primitive.hpp"
#include "jit/dnnl/reordered_weight.hpp"
#include <cstring>
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {
namespace {

int64_t output_size(int64_t input, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  int64_t last_start = input + 2 * padding - dilation * (kernel - 1) - 1;
  return last_start < 0 ? 0 : last_start / stride + 1;
}

// The weight as oneDNN names it: OIHW, or GOIHW with O split per group (the same bytes).
Dims weight_desc_dims(const Conv2dParams& params) {
  const Dims& w = params.weight_dims;
  if (params.groups == 1) return w;
  return {params.groups, w[0] / params.groups, w[1], w[2], w[3]};
}

std::optional<std::string> refuse_hyperparameters(const Conv2dParams& params) {
  for (int i = 0; i < 2; ++i) {
    if (params.stride[i] < 1 || params.dilation[i] < 1 || params.padding[i] < 0) {
      return "conv2d needs stride >= 1, dilation >= 1 and padding >= 0";
    }
  }
  return std::nullopt;
}

std::optional<std::string> refuse_shapes(const Conv2dParams& params) {
  if (auto reason = refuse_dims("conv2d input", params.input_dims, 4)) return reason;
  if (auto reason = refuse_dims("conv2d weight", params.weight_dims, 4)) return reason;
  if (params.input_dims.size() != 4 || params.weight_dims.size() != 4) {
    return "conv2d needs a rank-4 NCHW input and OIHW weight";
  }
  if (auto reason = refuse_hyperparameters(params)) return reason;
  const Dims& x = params.input_dims;
  const Dims& w = params.weight_dims;
  std::string shapes = dims_to_string(x) + " * " + dims_to_string(w);
  if (params.groups < 1 || w[0] % params.groups != 0 || x[1] != w[1] * params.groups) {
    return "conv2d channels do not match groups " + std::to_string(params.groups) + ": " + shapes;
  }
  for (int64_t d : conv2d_output_dims(params)) {
    if (d < 1) return "conv2d result would be empty: " + shapes;
  }
  return refuse_post_ops(params.post_ops);
}

// With any_activations oneDNN picks the input and result layouts too: on x86 a blocked layout
// (nChw8c on AVX2) whose direct convolution is several times faster than the GEMM one it must use
// for plain NCHW.
dnnl::convolution_forward::primitive_desc make_pd(const Conv2dParams& params, const dnnl::memory::desc& weight_desc,
                                                  bool allow_empty, bool any_activations = false,
                                                  ResidualForm residuals = ResidualForm::binary) {
  using dnnl::convolution_forward;
  Dims out = conv2d_output_dims(params);
  auto activation_desc = [&](const Dims& dims) {
    return any_activations ? dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any)
                           : plain_desc(dims);
  };
  dnnl::memory::desc in_desc = activation_desc(params.input_dims);
  dnnl::memory::desc out_desc = activation_desc(out);
  // oneDNN counts dilation from 0 (dense) where kiln counts from 1.
  Dims strides{params.stride[0], params.stride[1]};
  Dims dilates{params.dilation[0] - 1, params.dilation[1] - 1};
  Dims padding{params.padding[0], params.padding[1]};
  auto desc =
      params.has_bias
          ? convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, in_desc,
                                      weight_desc, plain_desc({out[1]}), out_desc, strides, dilates, padding, padding)
          : convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, in_desc,
                                      weight_desc, out_desc, strides, dilates, padding, padding);
  return convolution_forward::primitive_desc(desc, make_attr(params.post_ops, out, residuals), cpu_engine(),
                                             allow_empty);
}

} // namespace

struct Conv2dPrimitive::Impl {
  Conv2dParams params;
  Dims out_dims;
  CreatedPrimitive core;
  dnnl::memory::desc input_desc, out_desc; // the core's, named for the reorders beside them
  std::optional<ResolvedWeight> constant_weight;
  // When the convolution works in blocked layouts: the caller's plain NCHW buffers and the
  // reorders between them and the blocked copies (kept in thread buffers for one call).
  dnnl::memory::desc plain_input, plain_out;
  std::optional<dnnl::reorder> input_to_blocked, out_to_plain;
  ResidualForm residuals = ResidualForm::binary;
  std::optional<dnnl::reorder> residual_to_own; // sum_into_dst with a result in a layout of its own

  void finish_creation(const dnnl::convolution_forward::primitive_desc& pd) {
    core = CreatedPrimitive(pd);
    input_desc = core.src_desc();
    out_desc = core.dst_desc();
    plain_input = plain_desc(params.input_dims);
    plain_out = plain_desc(out_dims);
    if (input_desc != plain_input)
      input_to_blocked =
          dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), plain_input, cpu_engine(), input_desc));
    if (out_desc != plain_out)
      out_to_plain = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), out_desc, cpu_engine(), plain_out));
    if (out_desc != plain_out && residuals == ResidualForm::sum_into_dst)
      residual_to_own = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), plain_out, cpu_engine(), out_desc));
    // The scratchpad, then the input and output in the primitive's layout when they are reordered.
    scratch_bytes = core.scratch_bytes();
    if (input_to_blocked) scratch_bytes += scratch_piece(input_desc.get_size());
    if (out_to_plain) scratch_bytes += scratch_piece(out_desc.get_size());
  }
  size_t scratch_bytes = 0;

  // Writes the residual into the result buffer `out` (in out_desc) for the sum post-op; a residual
  // in_own_layout is already in out_desc.
  void place_residual(const float* residual, bool in_own_layout, void* out) const {
    if (residual_to_own && !in_own_layout)
      return reorder(*residual_to_own, bind(plain_out, residual), bind(out_desc, out));
    if (residual != out) std::memcpy(out, residual, out_desc.get_size());
  }
};

namespace {

bool uses_gemm(const dnnl::primitive_desc& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

// Neither the GEMM convolution nor the reference loop.
bool is_direct(const dnnl::primitive_desc& pd) {
  return !uses_gemm(pd) && std::string(pd.impl_info_str()).find("ref") == std::string::npos;
}

// A direct convolution takes a residual only as a sum into its result (binary_add of a plain
// NCHW tensor sends oneDNN to its GEMM convolution: resnet18 b1 41 ms instead of 19); one residual
// fits that, more stay binary.
ResidualForm residual_form(const Conv2dParams& params) {
  return residual_count(params.post_ops) == 1 ? ResidualForm::sum_into_dst : ResidualForm::binary;
}

} // namespace

namespace {

// For a constant weight, in its preferred layout. Blocked activations only pay for their reorders
// when they bring a direct convolution; a sum the direct kernels do not take (after an activation,
// on AVX2) is tried as binary too; the plain GEMM convolution is the last resort.
std::pair<dnnl::convolution_forward::primitive_desc, ResidualForm> choose_pd(const Conv2dParams& params) {
  const dnnl::memory::desc any(weight_desc_dims(params), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  for (ResidualForm form : {residual_form(params), ResidualForm::binary})
    if (auto pd = make_pd(params, any, true, true, form); pd && is_direct(pd)) return {pd, form};
  if (auto pd = make_pd(params, any, true, false); pd) return {pd, ResidualForm::binary};
  return {make_pd(params, plain_desc(weight_desc_dims(params)), false), ResidualForm::binary};
}

} // namespace

bool Conv2dPrimitive::is_direct_for(const Conv2dParams& params) {
  if (refuse(params)) return false;
  return is_direct(choose_pd(params).first);
}

std::vector<int64_t> conv2d_output_dims(const Conv2dParams& params) {
  const Dims& x = params.input_dims;
  const Dims& w = params.weight_dims;
  return {x[0], w[0], output_size(x[2], w[2], params.stride[0], params.padding[0], params.dilation[0]),
          output_size(x[3], w[3], params.stride[1], params.padding[1], params.dilation[1])};
}

std::optional<std::string> Conv2dPrimitive::refuse(const Conv2dParams& params) {
  if (auto reason = refuse_shapes(params)) return reason;
  return refuse_unimplemented("conv2d", [&] { return make_pd(params, plain_desc(weight_desc_dims(params)), true); });
}

Conv2dPrimitive::Conv2dPrimitive(const Conv2dParams& params) {
  require_accepted("Conv2dPrimitive", refuse(params));
  auto impl = std::make_unique<Impl>();
  impl->params = params;
  impl->out_dims = conv2d_output_dims(params);
  impl->finish_creation(make_pd(params, plain_desc(weight_desc_dims(params)), false));
  impl_ = std::move(impl);
}

Conv2dPrimitive::Conv2dPrimitive(const Conv2dParams& params, const ConstantWeight& weight) {
  require_accepted("Conv2dPrimitive", refuse(params));
  auto impl = std::make_unique<Impl>();
  impl->params = params;
  impl->out_dims = conv2d_output_dims(params);
  dnnl::memory::desc given = plain_desc(weight_desc_dims(params));
  const auto [pd, residuals] = choose_pd(params);
  impl->residuals = residuals;
  impl->finish_creation(pd);
  impl->constant_weight = resolve_constant_weight(weight, given, impl->core.weights_desc());
  impl_ = std::move(impl);
}

Conv2dPrimitive::~Conv2dPrimitive() = default;
Conv2dPrimitive::Conv2dPrimitive(Conv2dPrimitive&&) noexcept = default;
Conv2dPrimitive& Conv2dPrimitive::operator=(Conv2dPrimitive&&) noexcept = default;

size_t Conv2dPrimitive::scratch_bytes() const { return impl_->scratch_bytes; }

void Conv2dPrimitive::execute(const Conv2dArgs& args, std::span<std::byte> scratch) const {
  const Impl& impl = *impl_;
  Scratch pieces(scratch, scratch_bytes());
  require_buffer(args.input, "Conv2dPrimitive::execute", "the input");
  require_buffer(args.out, "Conv2dPrimitive::execute", "the result");
  const void* input = args.input;
  if (impl.input_to_blocked && !args.input_in_own_layout) {
    void* blocked = pieces.take(impl.input_desc.get_size());
    reorder(*impl.input_to_blocked, bind(impl.plain_input, args.input), bind(impl.input_desc, blocked));
    input = blocked;
  }
  const bool reorder_out = impl.out_to_plain && !args.output_in_own_layout;
  void* out = reorder_out ? pieces.take(impl.out_desc.get_size()) : args.out;
  ArgMap bound;
  bound[DNNL_ARG_SRC] = bind(impl.input_desc, input);
  if (impl.constant_weight) {
    bound[DNNL_ARG_WEIGHTS] = bind(impl.constant_weight->layout, impl.constant_weight->data);
  } else {
    require_buffer(args.weight, "Conv2dPrimitive::execute", "the weight");
    bound[DNNL_ARG_WEIGHTS] = bind(impl.core.weights_desc(), args.weight);
  }
  if (impl.params.has_bias) {
    require_buffer(args.bias, "Conv2dPrimitive::execute", "the bias");
    bound[DNNL_ARG_BIAS] = bind(impl.core.bias_desc(), args.bias);
  }
  bound[DNNL_ARG_DST] = bind(impl.out_desc, out);
  if (impl.residuals == ResidualForm::sum_into_dst) {
    if (args.residuals.size() != 1) throw Error(ErrorKind::internal, "Conv2dPrimitive::execute: one residual expected");
    impl.place_residual(args.residuals[0], args.residual_in_own_layout, out);
  } else {
    bind_residuals(impl.params.post_ops, impl.out_dims, args.residuals, bound);
  }
  impl.core.execute(bound, pieces);
  if (reorder_out) reorder(*impl.out_to_plain, bind(impl.out_desc, out), bind(impl.plain_out, args.out));
}

bool Conv2dPrimitive::adds_in_layout_of(const Conv2dPrimitive& producer) const {
  return impl_->residuals == ResidualForm::sum_into_dst && impl_->out_desc == producer.impl_->out_desc;
}

bool Conv2dPrimitive::reads_layout_of(const Conv2dPrimitive& previous) const {
  return impl_->input_desc == previous.impl_->out_desc;
}

size_t Conv2dPrimitive::output_bytes() const { return impl_->out_desc.get_size(); }

const std::vector<int64_t>& Conv2dPrimitive::output_dims() const { return impl_->out_dims; }

const void* Conv2dPrimitive::constant_weight_data() const {
  return impl_->constant_weight ? impl_->constant_weight->data : nullptr;
}

std::string Conv2dPrimitive::implementation() const { return impl_->core.implementation(); }

} // namespace kiln::jitc::dnnl_ops
