#include "jit/dnnl/softmax.hpp"
#include "jit/dnnl/created_primitive.hpp"
#include <cmath>
#include <kiln/error.hpp>
#include <limits>

namespace kiln::jitc::dnnl_ops {
namespace {

dnnl::softmax_v2_forward::primitive_desc make_pd(const SoftmaxParams& params, bool allow_empty) {
  dnnl::memory::desc desc = plain_desc(params.dims);
  const int axis = int(params.axis);
  auto algorithm = params.log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
  dnnl::softmax_v2_forward::desc op(dnnl::prop_kind::forward_inference, algorithm, desc, desc, axis);
  return dnnl::softmax_v2_forward::primitive_desc(op, make_attr({}, params.dims), cpu_engine(), allow_empty);
}

// oneDNN gives a row holding NaN or +inf NaN at that element and 0 (log_softmax: -inf) elsewhere;
// PyTorch (and the interpreter) give NaN for the whole row. A NaN in a result row marks such a row
// (a finite or -inf input never makes one), so one pass over the result, still in cache, fixes it.
void fill_rows_holding_nan(float* out, const std::vector<int64_t>& dims, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= dims[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < dims.size(); ++d)
    inner *= dims[d];
  const int64_t length = dims[size_t(axis)];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      float* row = out + o * length * inner + i;
      bool holds_nan = false;
      for (int64_t k = 0; k < length && !holds_nan; ++k)
        holds_nan = std::isnan(row[k * inner]);
      if (holds_nan)
        for (int64_t k = 0; k < length; ++k)
          row[k * inner] = std::numeric_limits<float>::quiet_NaN();
    }
}

} // namespace

struct SoftmaxPrimitive::Impl {
  SoftmaxParams params;
  CreatedPrimitive core;
};

std::optional<std::string> SoftmaxPrimitive::refuse(const SoftmaxParams& params) {
  const char* what = params.log ? "log_softmax" : "softmax";
  if (auto reason = refuse_dims(what, params.dims, 1)) return reason;
  if (!axis_in_rank(params.axis, params.dims.size())) {
    return std::string(what) + " axis " + std::to_string(params.axis) + " is outside rank " +
           std::to_string(params.dims.size());
  }
  return refuse_unimplemented(what, [&] { return make_pd(params, true); });
}

SoftmaxPrimitive::SoftmaxPrimitive(const SoftmaxParams& params) {
  require_accepted("SoftmaxPrimitive", refuse(params));
  impl_ = std::make_unique<const Impl>(Impl{params, CreatedPrimitive(make_pd(params, false))});
}

SoftmaxPrimitive::~SoftmaxPrimitive() = default;
SoftmaxPrimitive::SoftmaxPrimitive(SoftmaxPrimitive&&) noexcept = default;
SoftmaxPrimitive& SoftmaxPrimitive::operator=(SoftmaxPrimitive&&) noexcept = default;

size_t SoftmaxPrimitive::scratch_bytes() const { return impl_->core.scratch_bytes(); }

void SoftmaxPrimitive::execute(const float* in, float* out, std::span<std::byte> scratch) const {
  require_buffer(in, "SoftmaxPrimitive::execute", "the input");
  require_buffer(out, "SoftmaxPrimitive::execute", "the result");
  const CreatedPrimitive& core = impl_->core;
  ArgMap bound{{DNNL_ARG_SRC, bind(core.src_desc(), in)}, {DNNL_ARG_DST, bind(core.dst_desc(), out)}};
  Scratch pieces(scratch, scratch_bytes());
  core.execute(bound, pieces);
  fill_rows_holding_nan(out, impl_->params.dims, impl_->params.axis);
}

std::string SoftmaxPrimitive::implementation() const { return impl_->core.implementation(); }

} // namespace kiln::jitc::dnnl_ops
