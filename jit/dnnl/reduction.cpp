#include "jit/dnnl/reduction.hpp"
#include "jit/dnnl/engine.hpp"
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {
namespace {

dnnl::algorithm algorithm_of(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::sum: return dnnl::algorithm::reduction_sum;
  case ReduceKind::mean: return dnnl::algorithm::reduction_mean;
  case ReduceKind::max: return dnnl::algorithm::reduction_max;
  case ReduceKind::min: return dnnl::algorithm::reduction_min;
  }
  throw Error(ErrorKind::internal, "ReductionPrimitive: unknown reduction kind");
}

// One flag per axis; assumes the axes were validated.
std::vector<bool> reduced_axes(const ReductionParams& params) {
  std::vector<bool> reduced(params.dims.size(), params.axes.empty());
  for (int64_t axis : params.axes)
    reduced[size_t(axis)] = true;
  return reduced;
}

// The result with reduced axes kept as 1: what oneDNN's destination looks like.
Dims kept_dims(const ReductionParams& params) {
  std::vector<bool> reduced = reduced_axes(params);
  Dims dims = params.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (reduced[i]) dims[i] = 1;
  }
  return dims;
}

std::optional<std::string> refuse_axes(const ReductionParams& params) {
  std::vector<bool> seen(params.dims.size(), false);
  for (int64_t axis : params.axes) {
    if (!axis_in_rank(axis, params.dims.size()))
      return "reduction axis " + std::to_string(axis) + " is outside rank " + std::to_string(params.dims.size());
    if (seen[size_t(axis)]) return "reduction axis " + std::to_string(axis) + " is listed twice";
    seen[size_t(axis)] = true;
  }
  return std::nullopt;
}

dnnl::reduction::primitive_desc make_pd(const ReductionParams& params, bool allow_empty) {
  Dims out = kept_dims(params);
  dnnl::reduction::desc op(algorithm_of(params.kind), plain_desc(params.dims), plain_desc(out), 0.0f, 0.0f);
  return dnnl::reduction::primitive_desc(op, make_attr({}, out), cpu_engine(), allow_empty);
}

} // namespace

struct ReductionPrimitive::Impl {
  Dims out_dims;
  dnnl::reduction::primitive_desc pd;
  dnnl::reduction primitive;
  dnnl::memory::desc in_desc, out_desc;
  size_t scratch_bytes = 0; // the scratchpad, known at creation
};

std::vector<int64_t> reduction_output_dims(const ReductionParams& params) {
  if (params.keepdims) return kept_dims(params);
  std::vector<bool> reduced = reduced_axes(params);
  Dims dims;
  for (size_t i = 0; i < params.dims.size(); ++i) {
    if (!reduced[i]) dims.push_back(params.dims[i]);
  }
  return dims;
}

std::optional<std::string> ReductionPrimitive::refuse(const ReductionParams& params) {
  if (auto reason = refuse_dims("reduction input", params.dims, 1)) return reason;
  if (auto reason = refuse_axes(params)) return reason;
  if (kept_dims(params) == params.dims) return "reduction over axes of size 1 only is a copy, not a reduction";
  return refuse_unimplemented("reduction", [&] { return make_pd(params, true); });
}

ReductionPrimitive::ReductionPrimitive(const ReductionParams& params) {
  if (auto reason = refuse(params)) throw Error(ErrorKind::unsupported, "ReductionPrimitive: " + *reason);
  auto impl = std::make_unique<Impl>();
  impl->out_dims = reduction_output_dims(params);
  impl->pd = make_pd(params, false);
  impl->primitive = dnnl::reduction(impl->pd);
  impl->in_desc = plain_desc(params.dims);
  impl->out_desc = plain_desc(kept_dims(params));
  impl->scratch_bytes = scratchpad_bytes(impl->pd);
  impl_ = std::move(impl);
}

ReductionPrimitive::~ReductionPrimitive() = default;
ReductionPrimitive::ReductionPrimitive(ReductionPrimitive&&) noexcept = default;
ReductionPrimitive& ReductionPrimitive::operator=(ReductionPrimitive&&) noexcept = default;

size_t ReductionPrimitive::scratch_bytes() const { return impl_->scratch_bytes; }

void ReductionPrimitive::execute(const float* in, float* out, std::span<std::byte> scratch) const {
  require_buffer(in, "ReductionPrimitive::execute", "the input");
  require_buffer(out, "ReductionPrimitive::execute", "the result");
  ArgMap bound{{DNNL_ARG_SRC, bind(impl_->in_desc, in)}, {DNNL_ARG_DST, bind(impl_->out_desc, out)}};
  Scratch pieces(scratch, scratch_bytes());
  run(impl_->primitive, impl_->pd, bound, pieces);
}

const std::vector<int64_t>& ReductionPrimitive::output_dims() const { return impl_->out_dims; }

std::string ReductionPrimitive::implementation() const { return impl_->pd.impl_info_str(); }

} // namespace kiln::jitc::dnnl_ops
