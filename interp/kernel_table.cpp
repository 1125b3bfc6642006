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

namespace {

// Every family's setups, each declared beside its kernels (kernels.hpp).
constexpr std::span<const KernelSetup> (*kFamilySetups[])() = {
    elementwise_setups, reduction_setups, normalization_setups, conv_pool_setups, resample_setups,
};

const KernelSetup* setup_for(ir::OpKind kind) {
  for (auto family : kFamilySetups)
    for (const KernelSetup& setup : family())
      if (setup.kind == kind) return &setup;
  return nullptr;
}

} // namespace

exec::KernelPrepare prepare_for(ir::OpKind kind) {
  const KernelSetup* setup = setup_for(kind);
  return setup ? setup->prepare : nullptr;
}

std::vector<ir::OpKind> kinds_with_setup() {
  std::vector<ir::OpKind> kinds;
  for (auto family : kFamilySetups)
    for (const KernelSetup& setup : family())
      kinds.push_back(setup.kind);
  return kinds;
}

exec::PreparedState prepare_kernel(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs) {
  const exec::KernelPrepare prepare = prepare_for(op.kind);
  return prepare ? prepare(op, inputs, outputs) : nullptr;
}

size_t kernel_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs, std::span<const exec::View> outputs) {
  const KernelSetup* setup = setup_for(op.kind);
  return setup && setup->scratch_bytes ? setup->scratch_bytes(op, inputs, outputs) : 0;
}

} // namespace kiln::interp
