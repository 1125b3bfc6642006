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

// As kernel_for: -Wswitch asks of a new op whether its kernel has a prepare.
exec::KernelPrepare prepare_for(ir::OpKind kind) {
  using ir::OpKind;
  switch (kind) {
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::pow:
  case OpKind::maximum:
  case OpKind::minimum: return prepare_binary;
  case OpKind::compare: return prepare_compare;
  case OpKind::where: return prepare_where;
  case OpKind::clamp: return prepare_clamp;
  case OpKind::reduce_sum:
  case OpKind::reduce_mean:
  case OpKind::reduce_max:
  case OpKind::reduce_min: return prepare_reduction;
  case OpKind::argmax: return prepare_argmax;
  case OpKind::softmax:
  case OpKind::log_softmax: return prepare_softmax;
  case OpKind::layer_norm:
  case OpKind::rms_norm: return prepare_row_norm;
  case OpKind::batch_norm: return prepare_batch_norm;
  case OpKind::conv2d: return prepare_conv2d;
  case OpKind::max_pool2d:
  case OpKind::avg_pool2d: return prepare_pool2d;
  // Their per-call work is the element loop itself (unary ops, cast), or what they check and derive
  // is no more than a few compares (the data movement and creation ops, matmul).
  case OpKind::neg:
  case OpKind::abs:
  case OpKind::exp:
  case OpKind::log:
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::tanh:
  case OpKind::sigmoid:
  case OpKind::relu:
  case OpKind::gelu:
  case OpKind::silu:
  case OpKind::erf:
  case OpKind::sin:
  case OpKind::cos:
  case OpKind::cast:
  case OpKind::matmul:
  case OpKind::reshape:
  case OpKind::transpose:
  case OpKind::broadcast_to:
  case OpKind::concat:
  case OpKind::split:
  case OpKind::slice:
  case OpKind::squeeze:
  case OpKind::unsqueeze:
  case OpKind::gather:
  case OpKind::pad:
  case OpKind::full:
  case OpKind::arange:
  case OpKind::constant:
  case OpKind::constant_external:
  case OpKind::buffer_store:
  case OpKind::call:
  case OpKind::custom: return nullptr;
  }
  return nullptr;
}

exec::PreparedState prepare_kernel(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs) {
  const exec::KernelPrepare prepare = prepare_for(op.kind);
  return prepare ? prepare(op, inputs, outputs) : nullptr;
}

size_t kernel_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs, std::span<const exec::View> outputs) {
  if (op.kind == ir::OpKind::conv2d) return conv2d_scratch_bytes(exec::KernelArgs{op, inputs, outputs});
  return 0;
}

} // namespace kiln::interp
