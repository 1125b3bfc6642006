#pragma once
#include "jit/tier/graph_rewriter.hpp"
#include "jit/tier/implementation_table.hpp"
#include <array>
#include <optional>
#include <string>
#include <variant>

namespace kiln::jitc::tier {

// The entries the lowerings give the JIT tier's lists. Each pairs refuse_X (why the lowering cannot
// take the op) with lower_X (takes it and what it fuses, records the ops it took, emits or
// schedules its step).
extern const Implementation kDnnlMatmul;
extern const Implementation kTransposedB; // a transpose a matmul may read as a transposed B
extern const Implementation kDnnlConv2d;  // a graph of convolutions
extern const Implementation kDnnlSoftmax;
extern const Implementation kDnnlLayerNorm;
extern const Implementation kDnnlPool2d;
// adaptive_avg_pool2d with uniform windows, as an average pool.
extern const Implementation kDnnlAdaptivePool2d;
// conv_transpose2d with a constant weight, reordered once.
extern const Implementation kDnnlDeconv2d;
extern const Implementation kXbyakRegion;    // the run of elementwise ops starting at the op
extern const Implementation kFusedAttention; // blocks of query rows: matmul, softmax in place, matmul

// What a lowering would build for an op, or why it cannot take it.
template <class Plan> using Planned = std::variant<Plan, std::string>;
template <class Plan> std::optional<std::string> refusal_of(const Planned<Plan>& planned) {
  if (const std::string* why = std::get_if<std::string>(&planned)) return *why;
  return std::nullopt;
}

// Whether a transpose swaps exactly the last two axes (a matmul reads it as a transposed B).
bool swaps_last_two_axes(const ir::Op& transpose);

} // namespace kiln::jitc::tier
