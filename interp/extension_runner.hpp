#pragma once
#include "exec/step_runner.hpp"
#include <span>

namespace kiln::interp {

// A step runner calling the kernel of an extension op (include/kiln/extension.h) for one custom op
// with these static operand and result types. Checks once that the extension's shape function gives
// the result types. Throws kiln::Error: unsupported when no loaded extension registers the op, shape
// when its shape function disagrees with the types.
std::shared_ptr<const exec::StepRunner> make_extension_runner(const ir::Op& op,
                                                              std::span<const ir::ValueType> operand_types,
                                                              std::span<const ir::ValueType> result_types);

} // namespace kiln::interp
