#pragma once
#include "exec/view.hpp"
#include "ir/op_kind.hpp"
#include <vector>

namespace kiln::interp {

// The dispatch table: the kernel of op X is interp::X. Null for ops the plan executor handles
// itself (constant, constant_external, buffer_store, call, custom) and for those -Dops left out
// (op_selection.hpp).
exec::Kernel kernel_for(ir::OpKind kind);
// The prepare of the kernel of X (exec::KernelPrepare); null for kernels without one. Each family
// declares its kernels' prepares and scratch beside them (interp/kernels/kernels.hpp).
exec::KernelPrepare prepare_for(ir::OpKind kind);
// The kinds whose kernels have a prepare or take scratch, once per family that lists them (a kind
// listed twice is a mistake the tests catch).
std::vector<ir::OpKind> kinds_with_setup();
// What the kernel of `op` derives once from it and these dims (data unset); null when it has no
// prepare. Every caller of a kernel runs this first and passes the state in KernelArgs::prepared.
exec::PreparedState prepare_kernel(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs);
// The working memory the kernel of `op` needs (exec::KernelScratch): conv2d's column buffers and
// GEMM blocks, the reductions' accumulators; 0 for most.
size_t kernel_scratch_bytes(const ir::Op& op, std::span<const exec::View> inputs, std::span<const exec::View> outputs);

} // namespace kiln::interp
