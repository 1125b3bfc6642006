#pragma once
#include "ir/graph.hpp"
#include <string>

namespace kiln::exec {

// "kiln.add at model.cpp:3:9" (or just "kiln.add" when the op has no source location): how the
// plan's and the kernels' errors name an op.
std::string op_place(const ir::Op& op);

} // namespace kiln::exec
