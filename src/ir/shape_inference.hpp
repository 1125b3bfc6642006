#pragma once
#include "ir/ops.hpp"

// Type and shape inference of every op kind (one function each), used by the op table.
namespace kiln::ir::infer {

using Types = std::vector<ValueType>;
using In = std::span<const ValueType>;

Types unary(In in, const Attrs& attrs);
Types binary(In in, const Attrs& attrs);
Types compare(In in, const Attrs& attrs);
Types where(In in, const Attrs& attrs);
Types cast(In in, const Attrs& attrs);
Types reduce(In in, const Attrs& attrs);
Types argmax(In in, const Attrs& attrs);
Types softmax(In in, const Attrs& attrs);
Types layer_norm(In in, const Attrs& attrs);
Types batch_norm(In in, const Attrs& attrs);
Types matmul(In in, const Attrs& attrs);
Types conv2d(In in, const Attrs& attrs);
Types pool2d(In in, const Attrs& attrs);
Types reshape(In in, const Attrs& attrs);
Types transpose(In in, const Attrs& attrs);
Types broadcast_to(In in, const Attrs& attrs);
Types concat(In in, const Attrs& attrs);
Types split(In in, const Attrs& attrs);
Types slice(In in, const Attrs& attrs);
Types squeeze(In in, const Attrs& attrs);
Types unsqueeze(In in, const Attrs& attrs);
Types gather(In in, const Attrs& attrs);
Types pad(In in, const Attrs& attrs);
Types constant(In in, const Attrs& attrs);
Types full(In in, const Attrs& attrs);
Types arange(In in, const Attrs& attrs);
Types buffer_store(In in, const Attrs& attrs);

// The output size of a sliding window (conv2d, pools) over `size` elements; InferError when the
// window does not fit, SizeError when the padded size overflows. The interpreter checks its
// preallocated results against it.
int64_t window_output(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);

// Resolves a reshape target with at most one -1 against the input shape (symbolic dims cancel).
Shape resolve_reshape(const Shape& input, const Shape& target);

} // namespace kiln::ir::infer
