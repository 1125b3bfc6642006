#pragma once
#include "exec/view.hpp"
#include "ir/op_kind.hpp"

// The interpreter's kernels: the kernel of op X is interp::X, defined in the kernels/ file of its
// family. Semantics are those documented in src/ir/op_table.def. Declared from the op table, so a new
// op's kernel needs no line here nor in kernel_table.cpp; the ops with the kNoKernel trait (the plan
// executor runs them itself) are declared but have none.
namespace kiln::interp {

#define KILN_OP(name, ...) void name(const exec::KernelArgs& args);
#include "ir/op_table.def"
#undef KILN_OP

// The prepares (exec::KernelPrepare) of the kernels that have one, chosen in kernel_table.cpp's
// prepare_for: what they derive from the op and its static dims once, each kernel reads per call.
// add, sub, mul, div, pow, maximum, minimum
exec::PreparedState prepare_binary(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs);
exec::PreparedState prepare_compare(const ir::Op& op, std::span<const exec::View> inputs,
                                    std::span<const exec::View> outputs);
exec::PreparedState prepare_where(const ir::Op& op, std::span<const exec::View> inputs,
                                  std::span<const exec::View> outputs);
exec::PreparedState prepare_clamp(const ir::Op& op, std::span<const exec::View> inputs,
                                  std::span<const exec::View> outputs);
// reduce_sum, reduce_mean, reduce_max, reduce_min
exec::PreparedState prepare_reduction(const ir::Op& op, std::span<const exec::View> inputs,
                                      std::span<const exec::View> outputs);
exec::PreparedState prepare_argmax(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs);
// softmax, log_softmax
exec::PreparedState prepare_softmax(const ir::Op& op, std::span<const exec::View> inputs,
                                    std::span<const exec::View> outputs);
// layer_norm, rms_norm
exec::PreparedState prepare_row_norm(const ir::Op& op, std::span<const exec::View> inputs,
                                     std::span<const exec::View> outputs);
exec::PreparedState prepare_batch_norm(const ir::Op& op, std::span<const exec::View> inputs,
                                       std::span<const exec::View> outputs);
exec::PreparedState prepare_conv2d(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs);
// max_pool2d, avg_pool2d
exec::PreparedState prepare_pool2d(const ir::Op& op, std::span<const exec::View> inputs,
                                   std::span<const exec::View> outputs);

// The scratch conv2d's column buffers take (kernel_scratch_bytes).
size_t conv2d_scratch_bytes(const exec::KernelArgs& args);

} // namespace kiln::interp
