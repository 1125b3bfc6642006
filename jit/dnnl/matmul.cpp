#include "jit/dnnl/matmul.hpp"
#include "jit/dnnl/created_primitive.hpp"
#include "jit/dnnl/reordered_weight.hpp"
#include <algorithm>
#include <kiln/error.hpp>

namespace kiln::jitc::dnnl_ops {
namespace {

// Both operands at the common rank (leading 1s), B in its logical [.., K, N] order with the strides
// of how it is stored.
struct MatmulLayout {
  Dims a, b, b_strides, bias, out;
};

Dims with_leading_ones(const Dims& dims, size_t rank) {
  Dims padded(rank - dims.size(), 1);
  padded.insert(padded.end(), dims.begin(), dims.end());
  return padded;
}

Dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

MatmulLayout layout_of(const MatmulParams& params) {
  size_t rank = std::max(params.a_dims.size(), params.b_dims.size());
  MatmulLayout layout;
  layout.a = with_leading_ones(params.a_dims, rank);
  layout.b = with_leading_ones(params.b_dims, rank);
  layout.b_strides = row_major_strides(layout.b);
  if (params.b_transposed) {
    std::swap(layout.b[rank - 2], layout.b[rank - 1]);
    std::swap(layout.b_strides[rank - 2], layout.b_strides[rank - 1]);
  }
  layout.out = layout.a;
  for (size_t i = 0; i + 2 < rank; ++i)
    layout.out[i] = std::max(layout.a[i], layout.b[i]);
  layout.out[rank - 1] = layout.b[rank - 1];
  layout.bias = Dims(rank, 1);
  layout.bias[rank - 1] = layout.b[rank - 1];
  return layout;
}

std::optional<std::string> refuse_shapes(const MatmulParams& params) {
  if (auto reason = refuse_dims("matmul A", params.a_dims, 2)) return reason;
  if (auto reason = refuse_dims("matmul B", params.b_dims, 2)) return reason;
  MatmulLayout layout = layout_of(params);
  size_t rank = layout.a.size();
  std::string shapes = dims_to_string(params.a_dims) + " x " + dims_to_string(params.b_dims) +
                       (params.b_transposed ? " (B stored transposed)" : "");
  if (layout.a[rank - 1] != layout.b[rank - 2]) return "matmul inner dims differ: " + shapes;
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (layout.a[i] != layout.b[i] && layout.a[i] != 1 && layout.b[i] != 1) {
      return "matmul batch dims do not broadcast: " + shapes;
    }
  }
  return refuse_post_ops(params.post_ops);
}

dnnl::matmul::primitive_desc make_pd(const MatmulParams& params, const MatmulLayout& layout,
                                     const dnnl::memory::desc& b_desc, bool allow_empty) {
  dnnl::memory::desc a_desc = plain_desc(layout.a);
  dnnl::memory::desc out_desc = plain_desc(layout.out);
  dnnl::matmul::desc desc = params.has_bias ? dnnl::matmul::desc(a_desc, b_desc, plain_desc(layout.bias), out_desc)
                                            : dnnl::matmul::desc(a_desc, b_desc, out_desc);
  return dnnl::matmul::primitive_desc(desc, make_attr(params.post_ops, layout.out), cpu_engine(), allow_empty);
}

dnnl::memory::desc stored_b_desc(const MatmulLayout& layout) {
  return dnnl::memory::desc(layout.b, dnnl::memory::data_type::f32, layout.b_strides);
}

} // namespace

struct MatmulPrimitive::Impl {
  MatmulParams params;
  MatmulLayout layout;
  CreatedPrimitive core;
  std::optional<ResolvedWeight> constant_b;
};

std::vector<int64_t> matmul_output_dims(const MatmulParams& params) { return layout_of(params).out; }

std::optional<std::string> MatmulPrimitive::refuse(const MatmulParams& params) {
  if (auto reason = refuse_shapes(params)) return reason;
  MatmulLayout layout = layout_of(params);
  return refuse_unimplemented("matmul", [&] { return make_pd(params, layout, stored_b_desc(layout), true); });
}

MatmulPrimitive::MatmulPrimitive(const MatmulParams& params) {
  require_accepted("MatmulPrimitive", refuse(params));
  const MatmulLayout layout = layout_of(params);
  impl_ = std::make_unique<const Impl>(
      Impl{params, layout, CreatedPrimitive(make_pd(params, layout, stored_b_desc(layout), false)), std::nullopt});
}

MatmulPrimitive::MatmulPrimitive(const MatmulParams& params, const ConstantWeight& b) {
  require_accepted("MatmulPrimitive", refuse(params));
  const MatmulLayout layout = layout_of(params);
  const dnnl::memory::desc given = stored_b_desc(layout);
  const dnnl::memory::desc any(layout.b, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  dnnl::matmul::primitive_desc pd = make_pd(params, layout, any, true);
  if (!pd) pd = make_pd(params, layout, given, false);
  CreatedPrimitive core(pd);
  ResolvedWeight constant_b = resolve_constant_weight(b, given, core.weights_desc());
  impl_ = std::make_unique<const Impl>(Impl{params, layout, std::move(core), std::move(constant_b)});
}

MatmulPrimitive::~MatmulPrimitive() = default;
MatmulPrimitive::MatmulPrimitive(MatmulPrimitive&&) noexcept = default;
MatmulPrimitive& MatmulPrimitive::operator=(MatmulPrimitive&&) noexcept = default;

size_t MatmulPrimitive::scratch_bytes() const { return impl_->core.scratch_bytes(); }

void MatmulPrimitive::execute(const MatmulArgs& args, std::span<std::byte> scratch) const {
  const Impl& impl = *impl_;
  require_buffer(args.a, "MatmulPrimitive::execute", "A");
  require_buffer(args.out, "MatmulPrimitive::execute", "the result");
  const CreatedPrimitive& core = impl.core;
  ArgMap bound;
  bound[DNNL_ARG_SRC] = bind(core.src_desc(), args.a);
  if (impl.constant_b) {
    bound[DNNL_ARG_WEIGHTS] = bind(impl.constant_b->layout, impl.constant_b->data);
  } else {
    require_buffer(args.b, "MatmulPrimitive::execute", "B");
    bound[DNNL_ARG_WEIGHTS] = bind(core.weights_desc(), args.b);
  }
  if (impl.params.has_bias) {
    require_buffer(args.bias, "MatmulPrimitive::execute", "the bias");
    bound[DNNL_ARG_BIAS] = bind(core.bias_desc(), args.bias);
  }
  bound[DNNL_ARG_DST] = bind(core.dst_desc(), args.out);
  bind_residuals(impl.params.post_ops, impl.layout.out, args.residuals, bound);
  Scratch pieces(scratch, scratch_bytes());
  core.execute(bound, pieces);
}

const std::vector<int64_t>& MatmulPrimitive::output_dims() const { return impl_->layout.out; }

const void* MatmulPrimitive::constant_b_data() const { return impl_->constant_b ? impl_->constant_b->data : nullptr; }

std::string MatmulPrimitive::implementation() const { return impl_->core.implementation(); }

} // namespace kiln::jitc::dnnl_ops
