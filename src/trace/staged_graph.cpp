#include "io/atomic_file.hpp"
#include "ir/text/parser.hpp"
#include "ir/text/printer.hpp"
#include "ir/verify.hpp"
#include <fstream>
#include <kiln/stage.hpp>
#include <ostream>
#include <sstream>

namespace kiln {

std::string StagedGraph::to_mlir() const { return ir::print_module(*module_); }

void StagedGraph::save(const std::string& path) const {
  std::string text = to_mlir();
  io::write_file_atomic(path, [&](std::ostream& os) { os << text; });
}

std::ostream& operator<<(std::ostream& os, const StagedGraph& g) { return os << g.to_mlir(); }

StagedGraph parse_staged(const std::string& mlir_text, const std::string& source_name) {
  auto module = std::make_shared<ir::Module>(ir::parse_module(mlir_text, source_name));
  ir::verify_module(*module);
  return StagedGraph(std::move(module), {});
}

StagedGraph load_staged(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::io, path + ": cannot open for reading");
  std::stringstream text;
  text << in.rdbuf();
  return parse_staged(text.str(), path);
}

} // namespace kiln
