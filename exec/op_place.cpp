#include "exec/op_place.hpp"
#include "ir/ops.hpp"

namespace kiln::exec {

std::string op_place(const ir::Op& op) {
  std::string place = "kiln." + std::string(ir::op_info(op.kind).name);
  if (op.loc.known()) place += " at " + op.loc.to_string();
  return place;
}

} // namespace kiln::exec
