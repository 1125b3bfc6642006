#pragma once
#include "jit/elementwise/region.hpp"
#include "jit/elementwise/vector_assembler.hpp"
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kiln::jitc {

// What an emitter gets: its node, the registers holding its arguments (read-only), a destination
// distinct from every argument and scratch register, and the scratch it asked for.
template <class Vmm> struct EmitOperands {
  using Mask = typename IsaTraits<Vmm>::Mask;
  const RegionNode& node;
  std::span<const DType> arg_dtypes;
  Vmm dst;
  std::span<const Vmm> args;
  std::span<const Vmm> temps;
  std::span<const Mask> masks;
};

template <class Vmm> using EmitFn = void (*)(VectorAssembler<Vmm>&, const EmitOperands<Vmm>&);

// One op's code generator: the scratch it needs and the function that writes the instructions.
// Bools travel in registers as all-ones / all-zeros 32-bit lanes; i32 as integer lanes.
template <class Vmm> struct Emitter {
  int temps = 0;
  int masks = 0;
  EmitFn<Vmm> emit = nullptr;
};

// The emitter of a node, or nullopt (with the reason in *why_not) for an op that has none.
// Argument dtypes must already be checked (region_check.hpp).
template <class Vmm>
std::optional<Emitter<Vmm>> emitter_for(const RegionNode& node, std::span<const DType> arg_dtypes,
                                        std::string* why_not);

// Why an elementwise op has no emitter, for the few that have none (a region refuses them); nullopt
// for every other kind.
std::optional<std::string_view> why_no_emitter(ir::OpKind kind);

// Transcendental emitters live in math_emitters.cpp; emitter_for dispatches to them.
template <class Vmm> std::optional<Emitter<Vmm>> math_emitter_for(const RegionNode& node);

// The vcmpps predicate of a compare node (check_region made sure it has CompareParams).
uint8_t compare_predicate(const RegionNode& node);

} // namespace kiln::jitc
