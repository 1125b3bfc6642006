#include "interp/kernel_table.hpp"
#include "interp/kernels/kernels.hpp"
#include "ir/ops.hpp"
#include "kiln_ops.h"

namespace kiln::interp {

// interp::X for every op X of the table built in (-Dops, kiln_ops.h) but those the plan executor runs
// itself (kNoKernel); a kernel left undefined fails the link, naming it. The others are never named,
// so --gc-sections drops them.
exec::Kernel kernel_for(ir::OpKind kind) {
  using ir::kNeverFolded, ir::kNoKernel, ir::kNoTraits, ir::kSideEffects, ir::kTranscendental, ir::kNumericOperands,
      ir::kWideNumericOperands, ir::kFloatOperands;
  switch (kind) {
#define KILN_OP(name, min, max, cls, inferred, decoder, traits)                                                        \
  case ir::OpKind::name:                                                                                               \
    if constexpr (((traits)&kNoKernel) != 0 || !KILN_OP_BUILT_##name)                                                  \
      return nullptr;                                                                                                  \
    else                                                                                                               \
      return name;
#include "ir/op_table.def"
#undef KILN_OP
  }
  return nullptr;
}

// The prepare of a kernel -Dops left out is never named, so that it leaves the library with it.
template <bool Built> constexpr exec::KernelPrepare if_built(exec::KernelPrepare prepare) {
  return Built ? prepare : nullptr;
}
#define KILN_PREPARE(kind, prepare)                                                                                    \
  { ir::OpKind::kind, if_built<KILN_OP_BUILT_##kind>(prepare) }

// The kernels that check and derive once, at plan time, what would otherwise be redone on every
// call (windows, broadcast loops, reduction passes, row splits). The others' per-call work is the
// element loop itself, or a few compares (data movement, creation, matmul).
constexpr std::pair<ir::OpKind, exec::KernelPrepare> kPrepares[] = {
    KILN_PREPARE(add, prepare_binary),
    KILN_PREPARE(sub, prepare_binary),
    KILN_PREPARE(mul, prepare_binary),
    KILN_PREPARE(div, prepare_binary),
    KILN_PREPARE(pow, prepare_binary),
    KILN_PREPARE(maximum, prepare_binary),
    KILN_PREPARE(floor_divide, prepare_binary),
    KILN_PREPARE(remainder, prepare_binary),
    KILN_PREPARE(minimum, prepare_binary),
    KILN_PREPARE(compare, prepare_compare),
    KILN_PREPARE(where, prepare_where),
    KILN_PREPARE(clamp, prepare_clamp),
    KILN_PREPARE(reduce_sum, prepare_reduction),
    KILN_PREPARE(reduce_mean, prepare_reduction),
    KILN_PREPARE(reduce_max, prepare_reduction),
    KILN_PREPARE(reduce_min, prepare_reduction),
    KILN_PREPARE(reduce_prod, prepare_reduction),
    KILN_PREPARE(argmax, prepare_argmax),
    KILN_PREPARE(softmax, prepare_softmax),
    KILN_PREPARE(log_softmax, prepare_softmax),
    KILN_PREPARE(layer_norm, prepare_row_norm),
    KILN_PREPARE(rms_norm, prepare_row_norm),
    KILN_PREPARE(batch_norm, prepare_batch_norm),
    KILN_PREPARE(conv2d, prepare_conv2d),
    KILN_PREPARE(max_pool2d, prepare_pool2d),
    KILN_PREPARE(avg_pool2d, prepare_pool2d),
    KILN_PREPARE(masked_fill, prepare_masked_fill),
    KILN_PREPARE(argmin, prepare_argmax),
    KILN_PREPARE(reduce_var, prepare_variance),
    KILN_PREPARE(reduce_std, prepare_variance),
    KILN_PREPARE(cumsum, prepare_cumsum),
    KILN_PREPARE(adaptive_avg_pool2d, prepare_adaptive_avg_pool2d),
    KILN_PREPARE(group_norm, prepare_group_norm),
    KILN_PREPARE(conv_transpose2d, prepare_conv_transpose2d),
    KILN_PREPARE(interpolate, prepare_interpolate),
};
#undef KILN_PREPARE

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
  if constexpr (KILN_OP_BUILT_conv2d)
    if (op.kind == ir::OpKind::conv2d) return conv2d_scratch_bytes(args);
  constexpr bool any_reduction = KILN_OP_BUILT_reduce_sum || KILN_OP_BUILT_reduce_mean || KILN_OP_BUILT_reduce_max ||
                                 KILN_OP_BUILT_reduce_min || KILN_OP_BUILT_reduce_prod;
  if constexpr (any_reduction)
    if (prepare_for(op.kind) == prepare_reduction) return reduction_scratch_bytes(args);
  return 0;
}

} // namespace kiln::interp
