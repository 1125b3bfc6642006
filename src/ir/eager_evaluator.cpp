#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"
#include <atomic>

namespace kiln::ir {

namespace {
// Constant-initialised, so the installer may run at any point of static initialisation.
std::atomic<EagerEvaluator> g_evaluator{nullptr};
} // namespace

EagerEvaluator set_eager_evaluator(EagerEvaluator evaluator) { return g_evaluator.exchange(evaluator); }

std::vector<Tensor> evaluate_eagerly(OpKind kind, const Attrs& attrs, std::span<const Tensor> inputs,
                                     const std::vector<ValueType>& result_types, const SourceLoc& loc) {
  EagerEvaluator evaluator = g_evaluator.load();
  if (!evaluator)
    throw Error(ErrorKind::unsupported, "kiln." + std::string(op_info(kind).name) + " at " + loc.to_string() +
                                            ": eager execution needs the interpreter, which is not linked");
  return evaluator(kind, attrs, inputs, result_types, loc);
}

} // namespace kiln::ir
