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

// The prepares (exec::KernelPrepare) of the kernels that have one, listed in kernel_table.cpp's
// kPrepares: what they derive from the op and its static dims once, each kernel reads per call.
using Prepare = exec::PreparedState(const ir::Op& op, std::span<const exec::View> inputs,
                                    std::span<const exec::View> outputs);
Prepare prepare_binary; // add, sub, mul, div, pow, maximum, minimum
Prepare prepare_compare, prepare_where, prepare_clamp, prepare_masked_fill;
Prepare prepare_reduction; // reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod
Prepare prepare_variance;  // reduce_var, reduce_std
Prepare prepare_argmax;    // argmax, argmin
Prepare prepare_cumsum;
Prepare prepare_softmax;  // softmax, log_softmax
Prepare prepare_row_norm; // layer_norm, rms_norm
Prepare prepare_batch_norm, prepare_conv2d;
Prepare prepare_pool2d; // max_pool2d, avg_pool2d
Prepare prepare_adaptive_avg_pool2d;
Prepare prepare_group_norm;
Prepare prepare_conv_transpose2d;
Prepare prepare_interpolate;

// The scratch conv2d's column buffers and GEMM blocks take, and the reductions' accumulators
// (kernel_scratch_bytes).
size_t conv2d_scratch_bytes(const exec::KernelArgs& args);
size_t reduction_scratch_bytes(const exec::KernelArgs& args); // reduce_sum, _mean, _max, _min, _prod

} // namespace kiln::interp
