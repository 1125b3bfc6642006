#pragma once
#include "ir/ops.hpp"

// Type and shape inference of every op kind (one function each), used by the op table.
namespace kiln::ir::infer {

using Types = std::vector<ValueType>;
using In = std::span<const ValueType>;

Types unary(In in, const OpParams& params);
// Operands of one dtype broadcast together: the binary ops, and any elementwise op of that form.
Types broadcast(In in, const OpParams& params);
Types compare(In in, const OpParams& params);
Types where(In in, const OpParams& params);
Types cast(In in, const OpParams& params);
Types masked_fill(In in, const OpParams& params);
Types reduce(In in, const OpParams& params);
Types variance(In in, const OpParams& params);
Types argmax(In in, const OpParams& params);
Types softmax(In in, const OpParams& params);
Types cumsum(In in, const OpParams& params);
Types layer_norm(In in, const OpParams& params);
Types batch_norm(In in, const OpParams& params);
Types matmul(In in, const OpParams& params);
// A convolution over `spatial_rank` axes: [N, C, spatial...] input, [O, C / groups, kernel...]
// weight, optional bias [O].
Types conv_of_rank(In in, const OpParams& params, int spatial_rank);
// The inference of a convolution row (conv<2> for conv2d).
template <int SpatialRank> Types conv(In in, const OpParams& params) { return conv_of_rank(in, params, SpatialRank); }
Types pool2d(In in, const OpParams& params);
Types adaptive_pool2d(In in, const OpParams& params);
Types group_norm(In in, const OpParams& params);
Types conv_transpose2d(In in, const OpParams& params);
Types interpolate(In in, const OpParams& params);
Types reshape(In in, const OpParams& params);
Types transpose(In in, const OpParams& params);
Types broadcast_to(In in, const OpParams& params);
Types concat(In in, const OpParams& params);
Types split(In in, const OpParams& params);
Types slice(In in, const OpParams& params);
Types squeeze(In in, const OpParams& params);
Types unsqueeze(In in, const OpParams& params);
Types gather(In in, const OpParams& params);
Types pad(In in, const OpParams& params);
Types constant(In in, const OpParams& params);
Types full(In in, const OpParams& params);
Types arange(In in, const OpParams& params);
Types buffer_store(In in, const OpParams& params);
Types attention(In in, const OpParams& params);
Types topk(In in, const OpParams& params);

// The output size of a sliding window (conv2d, pools) over `size` elements; InferError when the
// window does not fit, SizeError when the padded size overflows. The interpreter checks its
// preallocated results against it.
int64_t window_output(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);
// conv_transpose2d's output size; InferError for bad hyperparameters or a size <= 0.
int64_t transposed_output(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                          int64_t output_padding);

// Resolves a reshape target with at most one -1 against the input shape (symbolic dims cancel).
Shape resolve_reshape(const Shape& input, const Shape& target);

} // namespace kiln::ir::infer
