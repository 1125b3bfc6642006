#pragma once
#include "interp/kernel.hpp"

// The interpreter's kernels: the kernel of op X is interp::X (see interp/kernel_table.cpp).
// Semantics and attributes are those documented in src/ir/ops.hpp.
namespace kiln::interp {

// elementwise.cpp
void neg(const KernelArgs& args);
void abs(const KernelArgs& args);
void exp(const KernelArgs& args);
void log(const KernelArgs& args);
void sqrt(const KernelArgs& args);
void rsqrt(const KernelArgs& args);
void tanh(const KernelArgs& args);
void sigmoid(const KernelArgs& args);
void relu(const KernelArgs& args);
void gelu(const KernelArgs& args);
void silu(const KernelArgs& args);
void erf(const KernelArgs& args);
void sin(const KernelArgs& args);
void cos(const KernelArgs& args);
void add(const KernelArgs& args);
void sub(const KernelArgs& args);
void mul(const KernelArgs& args);
void div(const KernelArgs& args);
void pow(const KernelArgs& args);
void maximum(const KernelArgs& args);
void minimum(const KernelArgs& args);
void compare(const KernelArgs& args);
void where(const KernelArgs& args);
void cast(const KernelArgs& args);

// reduction.cpp
void reduce_sum(const KernelArgs& args);
void reduce_mean(const KernelArgs& args);
void reduce_max(const KernelArgs& args);
void reduce_min(const KernelArgs& args);
void argmax(const KernelArgs& args);
void softmax(const KernelArgs& args);
void log_softmax(const KernelArgs& args);

// normalization.cpp
void layer_norm(const KernelArgs& args);
void rms_norm(const KernelArgs& args);
void batch_norm(const KernelArgs& args);

// linalg.cpp
void matmul(const KernelArgs& args);

// conv_pool.cpp
void conv2d(const KernelArgs& args);
void max_pool2d(const KernelArgs& args);
void avg_pool2d(const KernelArgs& args);

// shape_ops.cpp
void reshape(const KernelArgs& args);
void transpose(const KernelArgs& args);
void broadcast_to(const KernelArgs& args);
void concat(const KernelArgs& args);
void split(const KernelArgs& args);
void slice(const KernelArgs& args);
void squeeze(const KernelArgs& args);
void unsqueeze(const KernelArgs& args);
void gather(const KernelArgs& args);
void pad(const KernelArgs& args);

// creation.cpp
void full(const KernelArgs& args);
void arange(const KernelArgs& args);

} // namespace kiln::interp
