#pragma once
#include <cstdint>

namespace kiln::ir {

// Every op kind, in the order of the op table (op_table.def), which says everything else about it.
enum class OpKind : uint16_t {
#define KILN_OP(name, ...) name,
#include "ir/op_table.def"
#undef KILN_OP
};

inline constexpr int kNumOpKinds = 0
#define KILN_OP(name, ...) +1
#include "ir/op_table.def"
#undef KILN_OP
    ;

} // namespace kiln::ir
