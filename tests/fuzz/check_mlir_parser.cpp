#include "fuzz/checks.hpp"
#include "ir/passes/default_passes.hpp"
#include "ir/text/parser.hpp"
#include "ir/text/printer.hpp"
#include "ir/verify.hpp"
#include <kiln/compile.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

namespace kiln::fuzz {

namespace {

constexpr uint64_t kMaxWeightBytes = 16ull << 20;   // zero weights the check allocates itself
constexpr uint64_t kMaxArgumentBytes = 64ull << 10; // per argument, for running the callable
constexpr int64_t kSymbolicDimSize = 2;

// Bytes of a static shape, or nullopt when a dim is symbolic or the count passes `limit`.
std::optional<uint64_t> static_bytes(const ir::ValueType& type, uint64_t limit) {
  uint64_t bytes = dtype_size(type.dtype);
  for (const Dim& d : type.shape) {
    if (d.is_symbolic() || d.size() < 0) return std::nullopt;
    if (d.size() == 0) return 0;
    if (bytes > limit / uint64_t(d.size())) return std::nullopt;
    bytes *= uint64_t(d.size());
  }
  return bytes <= limit ? std::optional(bytes) : std::nullopt;
}

std::vector<int64_t> dims_binding_symbols(const Shape& shape) {
  std::vector<int64_t> dims;
  for (const Dim& d : shape)
    dims.push_back(d.is_symbolic() ? kSymbolicDimSize : d.size());
  return dims;
}

// Zero data for every constant_external (the first declaration of a name decides), or nullopt when
// one is symbolic or too large to allocate here.
std::optional<std::map<std::string, Tensor>> zero_weights(const ir::Module& module) {
  std::map<std::string, Tensor> weights;
  uint64_t total = 0;
  for (const ir::Function& fn : module.functions)
    for (const ir::Op& op : fn.ops) {
      if (op.kind != ir::OpKind::constant_external) continue;
      const std::string& name = op.attrs.get_string("name");
      if (weights.count(name)) continue;
      const ir::ValueType& type = fn.type_of(op.results.at(0));
      std::optional<uint64_t> bytes = static_bytes(type, kMaxWeightBytes);
      if (!bytes || (total += *bytes) > kMaxWeightBytes) return std::nullopt;
      weights.emplace(name, Tensor::zeros(static_dims(type.shape), type.dtype));
    }
  return weights;
}

// Zero arguments with symbolic dims bound to 2, or nullopt when one would be large.
std::optional<std::vector<Tensor>> small_arguments(const ir::Function& entry) {
  std::vector<Tensor> args;
  for (ir::ValueId id : entry.args) {
    ir::ValueType type = entry.type_of(id);
    std::vector<int64_t> dims = dims_binding_symbols(type.shape);
    type.shape = shape_from_dims(dims);
    if (!static_bytes(type, kMaxArgumentBytes)) return std::nullopt;
    args.push_back(Tensor::zeros(dims, type.dtype));
  }
  return args;
}

// One interpreter-only session caching one signature, so memory stays flat across inputs.
const std::shared_ptr<Session>& fuzz_session() {
  static const auto session = std::make_shared<Session>(TierPolicy{.mode = JitMode::off}, 1);
  return session;
}

// print -> parse -> print must reproduce the text: what kiln writes, kiln reads back exactly.
void check_reprints(const std::string& printed, const char* what) {
  ir::Module reparsed = ir::parse_module(printed, "<printed>");
  ir::verify_module(reparsed);
  if (ir::print_module(reparsed) != printed)
    throw CheckFailure(std::string(what) + " printed, parsed and printed again differs:\n" + printed);
}

void reparse_or_fail(const std::string& printed, const char* what) {
  try {
    check_reprints(printed, what);
  } catch (const Error& e) {
    throw CheckFailure(std::string(what) + " printed does not parse back: " + e.what() + "\n" + printed);
  }
}

void compile_and_maybe_run(const std::shared_ptr<const ir::Module>& module) {
  std::optional<std::map<std::string, Tensor>> weights = zero_weights(*module);
  if (!weights) return;
  CompileOptions options;
  options.weights = std::move(*weights);
  options.session = fuzz_session();
  auto callable = compile_staged(StagedGraph(module, {}), std::move(options));
  std::optional<std::vector<Tensor>> args = small_arguments(module->entry());
  if (!args) return;
  std::vector<Tensor> outputs = callable(*args);
  for (const Tensor& out : outputs)
    if (!out.is_concrete()) throw CheckFailure("the callable returned a tensor that is not concrete");
}

} // namespace

int check_mlir_parser(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto module = std::make_shared<ir::Module>(ir::parse_module(text, "<fuzz>"));
    ir::verify_module(*module);
    reparse_or_fail(ir::print_module(*module), "the parsed graph");
    reparse_or_fail(ir::print_module(ir::run_default_passes(*module, ir::default_eager_evaluator())),
                    "the optimised graph");
    compile_and_maybe_run(module);
  } catch (const Error&) {
  }
  return 0;
}

} // namespace kiln::fuzz
