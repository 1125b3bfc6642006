#include "interp/kernel_table.hpp"
#include "interp/kernels/kernels.hpp"
#include "ir/ops.hpp"

namespace kiln::interp {

// interp::X for every op X of the table but those the plan executor runs itself (kNoKernel); a kernel
// left undefined fails the link, naming it.
exec::Kernel kernel_for(ir::OpKind kind) {
  using ir::kNeverFolded, ir::kNoKernel, ir::kNoTraits, ir::kSideEffects, ir::kTranscendental;
  switch (kind) {
#define KILN_OP(name, min, max, cls, inferred, decoder, traits)                                                        \
  case ir::OpKind::name:                                                                                               \
    if constexpr (((traits)&kNoKernel) != 0)                                                                           \
      return nullptr;                                                                                                  \
    else                                                                                                               \
      return name;
#include "ir/op_table.def"
#undef KILN_OP
  }
  return nullptr;
}

// The kernels that check and derive once, at plan time, what would otherwise be redone on every
// call (windows, broadcast loops, reduction passes, row splits). The others' per-call work is the
// element loop itself, or a few compares (data movement, creation, matmul).
const std::pair<ir::OpKind, exec::KernelPrepare> kPrepares[] = {
    {ir::OpKind::add, prepare_binary},
    {ir::OpKind::sub, prepare_binary},
    {ir::OpKind::mul, prepare_binary},
    {ir::OpKind::div, prepare_binary},
    {ir::OpKind::pow, prepare_binary},
    {ir::OpKind::maximum, prepare_binary},
    {ir::OpKind::floor_divide, prepare_binary},
    {ir::OpKind::remainder, prepare_binary},
    {ir::OpKind::minimum, prepare_binary},
    {ir::OpKind::compare, prepare_compare},
    {ir::OpKind::where, prepare_where},
    {ir::OpKind::clamp, prepare_clamp},
    {ir::OpKind::reduce_sum, prepare_reduction},
    {ir::OpKind::reduce_mean, prepare_reduction},
    {ir::OpKind::reduce_max, prepare_reduction},
    {ir::OpKind::reduce_min, prepare_reduction},
    {ir::OpKind::reduce_prod, prepare_reduction},
    {ir::OpKind::argmax, prepare_argmax},
    {ir::OpKind::softmax, prepare_softmax},
    {ir::OpKind::log_softmax, prepare_softmax},
    {ir::OpKind::layer_norm, prepare_row_norm},
    {ir::OpKind::rms_norm, prepare_row_norm},
    {ir::OpKind::batch_norm, prepare_batch_norm},
    {ir::OpKind::conv2d, prepare_conv2d},
    {ir::OpKind::max_pool2d, prepare_pool2d},
    {ir::OpKind::avg_pool2d, prepare_pool2d},
    {ir::OpKind::masked_fill, prepare_masked_fill},
    {ir::OpKind::argmin, prepare_argmax},
    {ir::OpKind::reduce_var, prepare_variance},
    {ir::OpKind::reduce_std, prepare_variance},
    {ir::OpKind::cumsum, prepare_cumsum},
    {ir::OpKind::adaptive_avg_pool2d, prepare_adaptive_avg_pool2d},
    {ir::OpKind::group_norm, prepare_group_norm},
    {ir::OpKind::conv_transpose2d, prepare_conv_transpose2d},
    {ir::OpKind::interpolate, prepare_interpolate},
};

exec::KernelPrepare prepare_for(ir::OpKind kind) {
  for (const auto& [listed, prepare] : kPrepares)
    if (listed == kind) return prepare;
  return nullptr;
}

exec::PreparedState prepare_kernel(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs) {
  const exec::KernelPrepare prepare = prepare_for(op.kind);
  return prepare ? prepare(op, inputs, outputs) : nullptr;
}

size_t kernel_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs, std::span<const exec::View> outputs) {
  const exec::KernelArgs args{op, inputs, outputs};
  if (op.kind == ir::OpKind::conv2d) return conv2d_scratch_bytes(args);
  if (prepare_for(op.kind) == prepare_reduction) return reduction_scratch_bytes(args);
  return 0;
}

} // namespace kiln::interp
