#pragma once
#include "exec/view.hpp"
#include "ir/op_kind.hpp"

// The interpreter's kernels: the kernel of op X is interp::X, defined in the kernels/ file of its
// family and chosen in interp/kernel_table.cpp. Semantics are those documented in src/ir/ops.hpp.
// Declared from the op list, so a new op's kernel needs no line here; the ops the plan executor runs
// itself (constant, constant_external, buffer_store, call, custom) are declared but have none.
namespace kiln::interp {

#define KILN_DECLARE_KERNEL(name) void name(const exec::KernelArgs& args);
KILN_OP_KINDS(KILN_DECLARE_KERNEL)
#undef KILN_DECLARE_KERNEL

// The scratch conv2d's column buffers take (kernel_scratch_bytes).
size_t conv2d_scratch_bytes(const exec::KernelArgs& args);

} // namespace kiln::interp
