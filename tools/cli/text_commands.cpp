#include "cli/commands.hpp"
#include "ir/graph.hpp"
#include <kiln/stage.hpp>

namespace kiln::tools {

void print_graph_file(const std::string& path, std::ostream& out) { out << load_staged(path).to_mlir(); }

void verify_graph_file(const std::string& path, std::ostream& out) {
  // load_staged parses and verifies; what is left is counting.
  StagedGraph graph = load_staged(path);
  size_t ops = 0;
  for (const ir::Function& fn : graph.graph().functions)
    ops += fn.ops.size();
  out << "ok: " << ops << " ops\n";
}

} // namespace kiln::tools
