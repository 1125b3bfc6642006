#include "cli/commands.hpp"
#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"
#include "ir/passes/default_passes.hpp"
#include "runtime/tier_set.hpp"
#include <kiln/extension.hpp>
#include <kiln/stage.hpp>
#include <set>

namespace kiln::tools {

std::vector<std::string> graph_ops(const ir::Module& module) {
  // Constant folding runs kernels while compiling, through the eager evaluator, and the ops it folds
  // are gone from the graph it leaves: they are listed too, for a build without their kernels would
  // leave them unfolded and refuse them when planning.
  std::set<ir::OpKind> kinds;
  const ir::EagerEvaluator& eager = runtime::default_tier_set()->eager();
  const ir::EagerEvaluator recording = [&](ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                           const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc) {
    kinds.insert(kind);
    return ir::evaluate_eagerly(eager, kind, attrs, inputs, result_types, loc);
  };
  const ir::Module optimized = ir::run_default_passes(module, recording);
  // specialize only inlines calls and binds dims: the functions' ops are those the interpreter plans.
  for (const ir::Function& fn : optimized.functions)
    for (const ir::Op& op : fn.ops)
      kinds.insert(op.kind);
  std::set<std::string> names;
  for (ir::OpKind kind : kinds)
    if (!ir::has_trait(kind, ir::kNoKernel)) names.emplace(ir::op_info(kind).name);
  return {names.begin(), names.end()};
}

void print_graph_ops(const std::string& path, const std::vector<std::string>& extensions, std::ostream& out) {
  for (const std::string& extension : extensions)
    load_extension(extension);
  std::string selection;
  for (const std::string& name : graph_ops(load_staged(path).graph())) {
    out << name << "\n";
    selection += (selection.empty() ? "" : ",") + name;
  }
  out << "-Dops=" << selection << "\n";
}

} // namespace kiln::tools
