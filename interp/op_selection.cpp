#include "interp/op_selection.hpp"
#include "interp/kernel_table.hpp"
#include "ir/ops.hpp"
#include "kiln_ops.h"
#include <kiln/error.hpp>

namespace kiln::interp {

bool op_built(ir::OpKind kind) { return kernel_for(kind) != nullptr; }

std::string_view built_ops() { return KILN_OPS_SELECTION; }

void refuse_unbuilt_op(const ir::Op& op) {
  const std::string name(ir::op_info(op.kind).name);
  throw Error(ErrorKind::unsupported,
              "op " + ir::op_place(op) + " is not built into this kiln (built with -Dops=" + std::string(built_ops()) +
                  "); rebuild with " + name + " listed in -Dops (kiln ops GRAPH lists the ops a graph needs)");
}

} // namespace kiln::interp
