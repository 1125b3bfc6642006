#pragma once
#include "ir/graph.hpp"
#include <string>
#include <string_view>

// Which ops this build has kernels for: -Dops at configure time (docs/embedded.md). Parsing,
// printing and verifying take every op; only running one needs its kernel.
namespace kiln::interp {

// Whether the kernel interp::X of op kind X is built in; false for the ops the plan executor runs
// itself (kNoKernel), which need none.
bool op_built(ir::OpKind kind);
// The -Dops this kiln was configured with: "all" or the op names, comma-separated.
std::string_view built_ops();
// Error(unsupported) for an op whose kernel -Dops left out, naming it, where it is and the fix.
[[noreturn]] void refuse_unbuilt_op(const ir::Op& op);

} // namespace kiln::interp
