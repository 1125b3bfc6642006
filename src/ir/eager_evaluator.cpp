#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"

namespace kiln::ir {

std::vector<Tensor> evaluate_eagerly(const EagerEvaluator& evaluator, OpKind kind, const Attrs& attrs,
                                     std::span<const Tensor> inputs, const std::vector<ValueType>& result_types,
                                     const SourceLoc& loc) {
  if (!evaluator)
    throw Error(ErrorKind::unsupported, "kiln." + std::string(op_info(kind).name) + " at " + loc.to_string() +
                                            ": no eager evaluator was given to run it on concrete tensors");
  return evaluator(kind, attrs, inputs, result_types, loc);
}

} // namespace kiln::ir
