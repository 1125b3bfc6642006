#pragma once
#include "ir/graph.hpp"

namespace kiln::ir {

// Local algebraic simplifications; output types never change:
//   x*1, 1*x, x/1, x+0, 0+x, x-0 -> x when the constant (a `constant` or `full` op) is a splat of
//     exactly 1 or 0 in x's dtype and the result type equals x's (broadcasting must not change it).
//     Like other tensor compilers, x+0 -> x does not keep the sign of a -0 input.
//   reshape(reshape(x)) -> reshape(x); reshape to x's own type -> x
//   transpose(transpose(x)) -> one transpose with the composed perm; identity perm -> x
//   cast to x's own dtype -> x; neg(neg(x)) -> x
// Every rewrite is checked against the op table's inference, so a rule that would change a type is
// not applied. Ops left unused (the inner reshape, say) are for dead_code_elimination.
Function canonicalize(const Function& fn);
Module canonicalize(const Module& module);

} // namespace kiln::ir
