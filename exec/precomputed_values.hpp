#pragma once
#include "exec/plan.hpp"
#include "runtime/weight_forms.hpp"
#include <memory>
#include <optional>
#include <vector>

namespace kiln::exec {

using PrecomputedResults = std::shared_ptr<const std::vector<Tensor>>;

// The results of an op over bound values (weights, constants, results of such ops) are computed
// when a plan is built. Over weights they are a form of those weights in the session's
// WeightForms, shared by every plan: each signature and each tier builds its own plan, and without
// sharing every one of them held its own copy (a transposed copy of every weight per batch size and
// tier). This is their key there: the op, its attributes and result types over its operands' keys;
// nullopt when an operand has none (an embedded constant: the results stay the plan's own) or an
// attribute is a tensor.
std::optional<runtime::WeightFormKey> precomputed_key(const ir::Op& op, const std::vector<ValuePlan>& values);
// The key of result `index` of the op whose results have the key `results`.
std::optional<runtime::WeightFormKey> precomputed_result_key(const std::optional<runtime::WeightFormKey>& results,
                                                             size_t index);

} // namespace kiln::exec
