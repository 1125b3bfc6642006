#include "cli/commands.hpp"
#include "ir/eager_evaluator.hpp"
#include "ir/ops.hpp"
#include "ir/passes/default_passes.hpp"
#include <kiln/extension.hpp>
#include <kiln/stage.hpp>
#include <set>

namespace kiln::tools {

namespace {

// Constant folding runs kernels while compiling, through the eager evaluator, and the ops it folds
// are gone from the graph it leaves: `kiln ops` lists them too, for a build without their kernels
// would leave them unfolded and refuse them when planning.
ir::EagerEvaluator g_forward_to = nullptr;
std::set<ir::OpKind>* g_folded = nullptr;

std::vector<Tensor> record_folded(ir::OpKind kind, const ir::Attrs& attrs, std::span<const Tensor> inputs,
                                  const std::vector<ir::ValueType>& result_types, const ir::SourceLoc& loc) {
  g_folded->insert(kind);
  if (!g_forward_to) throw Error(ErrorKind::unsupported, "no eager evaluator is linked");
  return g_forward_to(kind, attrs, inputs, result_types, loc);
}

struct FoldRecorder {
  explicit FoldRecorder(std::set<ir::OpKind>& folded) {
    g_folded = &folded;
    g_forward_to = ir::set_eager_evaluator(&record_folded);
  }
  ~FoldRecorder() {
    ir::set_eager_evaluator(g_forward_to);
    g_folded = nullptr;
  }
};

} // namespace

std::vector<std::string> graph_ops(const ir::Module& module) {
  std::set<ir::OpKind> kinds;
  ir::Module optimized;
  {
    FoldRecorder recorder(kinds);
    optimized = ir::run_default_passes(module);
  }
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
