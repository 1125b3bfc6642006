#pragma once
#include "exec/view.hpp"
#include "ir/op_kind.hpp"

namespace kiln::interp {

// The dispatch table: the kernel of op X is interp::X. Null for ops the plan executor handles
// itself (constant, constant_external, buffer_store, call, custom).
exec::Kernel kernel_for(ir::OpKind kind);

} // namespace kiln::interp
