#pragma once
#include "exec/view.hpp"
#include "ir/op_kind.hpp"
#include "kiln_ops.h"
#include <span>

// The interpreter's kernels: the kernel of op X is interp::X, defined in the kernels/ file of its
// family. Semantics are those documented in src/ir/op_table.def. Declared from the op table, so a new
// op's kernel needs no line here nor in kernel_table.cpp; the ops with the kNoKernel trait (the plan
// executor runs them itself) are declared but have none.
namespace kiln::interp {

#define KILN_OP(name, ...) void name(const exec::KernelArgs& args);
#include "ir/op_table.def"
#undef KILN_OP

// What the plan sets up for a kernel before it runs, declared beside the kernel in its family's
// file: its prepare (exec::KernelPrepare: the checks and loop geometry it derives once from the op
// and its static dims, which each call reads as prepared<State>(args)) and the working memory it
// takes per call (exec::KernelScratch). A kernel with neither has no setup.
struct KernelSetup {
  ir::OpKind kind;
  exec::KernelPrepare prepare = nullptr;
  exec::KernelScratch scratch_bytes = nullptr;
};

// A setup row of op `kind` naming only what -Dops built (kiln_ops.h): the prepare and scratch of a
// kernel left out are never named, so that they leave the library with it.
template <bool Built, class Fn> constexpr Fn if_built(Fn fn) { return Built ? fn : nullptr; }
#define KILN_KERNEL_SETUP(kind, prepare, scratch)                                                                      \
  KernelSetup { ir::OpKind::kind, if_built<KILN_OP_BUILT_##kind>(prepare), if_built<KILN_OP_BUILT_##kind>(scratch) }

// Each family's setups, defined in its file; kernel_table.cpp reads every one of them.
std::span<const KernelSetup> elementwise_setups();
std::span<const KernelSetup> reduction_setups();
std::span<const KernelSetup> normalization_setups();
std::span<const KernelSetup> conv_pool_setups();
std::span<const KernelSetup> resample_setups();

} // namespace kiln::interp
