#include "jit/dnnl/softmax.hpp"
#include "jit/dnnl/engine.hpp"
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
  dnnl::softmax_v2_forward::primitive_desc pd;
  dnnl::softmax_v2_forward primitive;
  dnnl::memory::desc data_desc;
  size_t scratch_bytes = 0; // the scratchpad, known at creation
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
  if (auto reason = refuse(params)) throw Error(ErrorKind::unsupported, "SoftmaxPrimitive: " + *reason);
  auto impl = std::make_unique<Impl>();
  impl->params = params;
  impl->pd = make_pd(params, false);
  impl->primitive = dnnl::softmax_v2_forward(impl->pd);
  impl->data_desc = plain_desc(params.dims);
  impl->scratch_bytes = scratchpad_bytes(impl->pd);
  impl_ = std::move(impl);
}

SoftmaxPrimitive::~SoftmaxPrimitive() = default;
SoftmaxPrimitive::SoftmaxPrimitive(SoftmaxPrimitive&&) noexcept = default;
SoftmaxPrimitive& SoftmaxPrimitive::operator=(SoftmaxPrimitive&&) noexcept = default;

size_t SoftmaxPrimitive::scratch_bytes() const { return impl_->scratch_bytes; }

void SoftmaxPrimitive::execute(const float* in, float* out, std::span<std::byte> scratch) const {
  require_buffer(in, "SoftmaxPrimitive::execute", "the input");
  require_buffer(out, "SoftmaxPrimitive::execute", "the result");
  ArgMap bound{{DNNL_ARG_SRC, bind(impl_->data_desc, in)}, {DNNL_ARG_DST, bind(impl_->data_desc, out)}};
  Scratch pieces(scratch, scratch_bytes());
  run(impl_->primitive, impl_->pd, bound, pieces);
  fill_rows_holding_nan(out, impl_->params.dims, impl_->params.axis);
}

std::string SoftmaxPrimitive::implementation() const { return impl_->pd.impl_info_str(); }

} // namespace kiln::jitc::dnnl_ops
