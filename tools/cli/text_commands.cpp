#include "cli/commands.hpp"
#include "ir/custom_ops.hpp"
#include <kiln/extension.hpp>
#include <kiln/stage.hpp>

namespace kiln::tools {

void print_graph_file(const std::string& path, std::ostream& out) { out << load_staged(path).to_mlir(); }

void verify_graph_file(const std::string& path, const std::vector<std::string>& extensions, std::ostream& out) {
  for (const std::string& extension : extensions)
    load_extension(extension);
  // load_staged parses and verifies (extension ops against their shape functions); a graph that
  // names an op no loaded extension registers cannot run, so verify refuses it.
  StagedGraph graph = load_staged(path);
  ir::require_registered_custom_ops(graph.graph());
  size_t ops = 0;
  for (const ir::Function& fn : graph.graph().functions)
    ops += fn.ops.size();
  out << "ok: " << ops << " ops\n";
}

} // namespace kiln::tools
