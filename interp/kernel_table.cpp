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

size_t kernel_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs, std::span<const exec::View> outputs) {
  if (op.kind == ir::OpKind::conv2d) return conv2d_scratch_bytes(exec::KernelArgs{op, inputs, outputs});
  return 0;
}

} // namespace kiln::interp
