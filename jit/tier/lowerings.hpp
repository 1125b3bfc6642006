#pragma once
#include "jit/tier/graph_rewriter.hpp"
#include <array>
#include <optional>

namespace kiln::jit::tier {

// Each lowering is a predicate plus a builder: it either takes the op at `id` (emitting or
// scheduling a custom op and recording the decision) and returns true, or records why it refused
// and returns false, leaving the op to the interpreter.
bool lower_matmul(GraphRewriter& rewriter, ir::OpId id);
bool lower_conv2d(GraphRewriter& rewriter, ir::OpId id);
bool lower_softmax(GraphRewriter& rewriter, ir::OpId id);
bool lower_layer_norm(GraphRewriter& rewriter, ir::OpId id);
bool lower_pool2d(GraphRewriter& rewriter, ir::OpId id);
bool lower_reduction(GraphRewriter& rewriter, ir::OpId id);

// Takes the longest run of elementwise ops starting at `first` that share one iteration space and
// returns the id of the first op after it; returns `first` when it took nothing.
ir::OpId lower_elementwise_region(GraphRewriter& rewriter, ir::OpId first);

// Whether a transpose swaps exactly the last two axes (a matmul reads it as a transposed B).
bool swaps_last_two_axes(const ir::Op& transpose);

} // namespace kiln::jit::tier
