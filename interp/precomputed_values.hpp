#pragma once
#include "ir/graph.hpp"
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace kiln::interp {

using PrecomputedResults = std::shared_ptr<const std::vector<Tensor>>;

// The results of an op over bound tensors (weights, constants), computed when a plan is built and
// shared by every plan over the same tensors: each signature and each tier builds its own plan,
// and without sharing every one of them held its own copy (a transposed copy of every weight per
// batch size and tier). An entry lives while some plan holds its results; operands are matched by
// fingerprint (address and contents, tensor_fingerprint.hpp).
PrecomputedResults shared_precomputed(const ir::Op& op, std::span<const Tensor> operands,
                                      const std::function<std::vector<Tensor>()>& compute);

} // namespace kiln::interp
