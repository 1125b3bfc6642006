#include "jit/dnnl/pool2d.hpp"
#include "jit/dnnl/created_primitive.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {
namespace {

dnnl::algorithm algorithm_of(PoolKind kind) {
  switch (kind) {
  case PoolKind::max: return dnnl::algorithm::pooling_max;
  case PoolKind::avg_include_pad: return dnnl::algorithm::pooling_avg_include_padding;
  case PoolKind::avg_exclude_pad: return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  throw Error(ErrorKind::internal, "Pool2dPrimitive: unknown pooling kind");
}

int64_t output_size(int64_t input, int64_t kernel, int64_t stride, int64_t padding) {
  int64_t last_start = input + 2 * padding - kernel;
  return last_start < 0 ? 0 : last_start / stride + 1;
}

std::optional<std::string> refuse_window(const Pool2dParams& params) {
  for (int i = 0; i < 2; ++i) {
    if (params.kernel[i] < 1 || params.stride[i] < 1 || params.padding[i] < 0) {
      return "pool2d needs kernel >= 1, stride >= 1 and padding >= 0";
    }
    // A window could then lie entirely in the padding, where max and exclude-pad average are undefined.
    if (2 * params.padding[i] > params.kernel[i]) return "pool2d padding exceeds half the kernel";
  }
  return std::nullopt;
}

dnnl::pooling_forward::primitive_desc make_pd(const Pool2dParams& params, bool allow_empty) {
  Dims out = pool2d_output_dims(params);
  Dims padding{params.padding[0], params.padding[1]};
  dnnl::pooling_forward::desc op(dnnl::prop_kind::forward_inference, algorithm_of(params.kind),
                                 plain_desc(params.input_dims), plain_desc(out), {params.stride[0], params.stride[1]},
                                 {params.kernel[0], params.kernel[1]}, padding, padding);
  return dnnl::pooling_forward::primitive_desc(op, make_attr({}, out), cpu_engine(), allow_empty);
}

} // namespace

struct Pool2dPrimitive::Impl {
  Dims out_dims;
  CreatedPrimitive core;
};

std::vector<int64_t> pool2d_output_dims(const Pool2dParams& params) {
  const Dims& x = params.input_dims;
  return {x[0], x[1], output_size(x[2], params.kernel[0], params.stride[0], params.padding[0]),
          output_size(x[3], params.kernel[1], params.stride[1], params.padding[1])};
}

std::optional<std::string> Pool2dPrimitive::refuse(const Pool2dParams& params) {
  if (auto reason = refuse_dims("pool2d input", params.input_dims, 4)) return reason;
  if (params.input_dims.size() != 4) return "pool2d needs a rank-4 NCHW input";
  if (auto reason = refuse_window(params)) return reason;
  for (int64_t d : pool2d_output_dims(params)) {
    if (d < 1) return "pool2d result would be empty for input " + dims_to_string(params.input_dims);
  }
  return refuse_unimplemented("pool2d", [&] { return make_pd(params, true); });
}

Pool2dPrimitive::Pool2dPrimitive(const Pool2dParams& params) {
  require_accepted("Pool2dPrimitive", refuse(params));
  impl_ = std::make_unique<const Impl>(Impl{pool2d_output_dims(params), CreatedPrimitive(make_pd(params, false))});
}

Pool2dPrimitive::~Pool2dPrimitive() = default;
Pool2dPrimitive::Pool2dPrimitive(Pool2dPrimitive&&) noexcept = default;
Pool2dPrimitive& Pool2dPrimitive::operator=(Pool2dPrimitive&&) noexcept = default;

size_t Pool2dPrimitive::scratch_bytes() const { return impl_->core.scratch_bytes(); }

void Pool2dPrimitive::execute(const float* in, float* out, std::span<std::byte> scratch) const {
  require_buffer(in, "Pool2dPrimitive::execute", "the input");
  require_buffer(out, "Pool2dPrimitive::execute", "the result");
  const CreatedPrimitive& core = impl_->core;
  ArgMap bound{{DNNL_ARG_SRC, bind(core.src_desc(), in)}, {DNNL_ARG_DST, bind(core.dst_desc(), out)}};
  Scratch pieces(scratch, scratch_bytes());
  core.execute(bound, pieces);
}

const std::vector<int64_t>& Pool2dPrimitive::output_dims() const { return impl_->out_dims; }

std::string Pool2dPrimitive::implementation() const { return impl_->core.implementation(); }

} // namespace kiln::jitc::dnnl_ops
