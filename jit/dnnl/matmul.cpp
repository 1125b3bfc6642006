#include "jit/dnnl/matmul.hpp"
#include "jit/dnnl/engine.hpp"
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
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  dnnl::memory::desc a_desc, b_desc, bias_desc, out_desc; // queried once, bound per execute
  std::optional<ResolvedWeight> constant_b;

  void finish_creation() {
    primitive = dnnl::matmul(pd);
    a_desc = pd.src_desc();
    b_desc = pd.weights_desc();
    bias_desc = pd.bias_desc();
    out_desc = pd.dst_desc();
  }
  size_t scratch_bytes = 0; // the scratchpad, known at creation
};

std::vector<int64_t> matmul_output_dims(const MatmulParams& params) { return layout_of(params).out; }

std::optional<std::string> MatmulPrimitive::refuse(const MatmulParams& params) {
  if (auto reason = refuse_shapes(params)) return reason;
  MatmulLayout layout = layout_of(params);
  return refuse_unimplemented("matmul", [&] { return make_pd(params, layout, stored_b_desc(layout), true); });
}

MatmulPrimitive::MatmulPrimitive(const MatmulParams& params) {
  if (auto reason = refuse(params)) throw Error(ErrorKind::unsupported, "MatmulPrimitive: " + *reason);
  auto impl = std::make_unique<Impl>();
  impl->params = params;
  impl->layout = layout_of(params);
  impl->pd = make_pd(params, impl->layout, stored_b_desc(impl->layout), false);
  impl->finish_creation();
  impl->scratch_bytes = scratchpad_bytes(impl->pd);
  impl_ = std::move(impl);
}

MatmulPrimitive::MatmulPrimitive(const MatmulParams& params, const ConstantWeight& b) {
  if (auto reason = refuse(params)) throw Error(ErrorKind::unsupported, "MatmulPrimitive: " + *reason);
  auto impl = std::make_unique<Impl>();
  impl->params = params;
  impl->layout = layout_of(params);
  dnnl::memory::desc given = stored_b_desc(impl->layout);
  dnnl::memory::desc any(impl->layout.b, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  impl->pd = make_pd(params, impl->layout, any, true);
  if (!impl->pd) impl->pd = make_pd(params, impl->layout, given, false);
  impl->finish_creation();
  impl->constant_b = resolve_constant_weight(b, given, impl->b_desc);
  impl->scratch_bytes = scratchpad_bytes(impl->pd);
  impl_ = std::move(impl);
}

MatmulPrimitive::~MatmulPrimitive() = default;
MatmulPrimitive::MatmulPrimitive(MatmulPrimitive&&) noexcept = default;
MatmulPrimitive& MatmulPrimitive::operator=(MatmulPrimitive&&) noexcept = default;

size_t MatmulPrimitive::scratch_bytes() const { return impl_->scratch_bytes; }

void MatmulPrimitive::execute(const MatmulArgs& args, std::span<std::byte> scratch) const {
  const Impl& impl = *impl_;
  require_buffer(args.a, "MatmulPrimitive::execute", "A");
  require_buffer(args.out, "MatmulPrimitive::execute", "the result");
  ArgMap bound;
  bound[DNNL_ARG_SRC] = bind(impl.a_desc, args.a);
  if (impl.constant_b) {
    bound[DNNL_ARG_WEIGHTS] = bind(impl.constant_b->layout, impl.constant_b->data);
  } else {
    require_buffer(args.b, "MatmulPrimitive::execute", "B");
    bound[DNNL_ARG_WEIGHTS] = bind(impl.b_desc, args.b);
  }
  if (impl.params.has_bias) {
    require_buffer(args.bias, "MatmulPrimitive::execute", "the bias");
    bound[DNNL_ARG_BIAS] = bind(impl.bias_desc, args.bias);
  }
  bound[DNNL_ARG_DST] = bind(impl.out_desc, args.out);
  bind_residuals(impl.params.post_ops, impl.layout.out, args.residuals, bound);
  Scratch pieces(scratch, scratch_bytes());
  run(impl.primitive, impl.pd, bound, pieces);
}

const std::vector<int64_t>& MatmulPrimitive::output_dims() const { return impl_->layout.out; }

const void* MatmulPrimitive::constant_b_data() const { return impl_->constant_b ? impl_->constant_b->data : nullptr; }

std::string MatmulPrimitive::implementation() const { return impl_->pd.impl_info_str(); }

} // namespace kiln::jitc::dnnl_ops
