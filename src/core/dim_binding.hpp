#pragma once
#include "core/dim_expr.hpp"
#include <kiln/shape.hpp>
#include <optional>
#include <span>
#include <string>

namespace kiln {

// One declared shape, the concrete one a call gives for it (absent when only checking), and how
// errors name it ("argument 0", "argument 1.lo").
struct ShapeToBind {
  const Shape* declared = nullptr;
  const Shape* concrete = nullptr;
  std::string argument;
};

// Gives every symbol of the declared shapes its size from the concrete ones, then checks each
// declared dim against its concrete size. A plain name binds directly; a symbol inside an
// expression is solved from a dim linear in it (n*2+1 = 7 gives n = 3) once the expression's other
// symbols are known. Throws kiln::Error(spec) naming the argument, the dim and the expression for a
// symbol no dim can solve, two sizes for one name, or a dim its expression does not give.
DimBindings bind_dims(std::span<const ShapeToBind> shapes);

// The same check without sizes, at trace time: throws for a symbol no declared dim can solve.
void check_dims_solvable(std::span<const ShapeToBind> shapes);

} // namespace kiln
