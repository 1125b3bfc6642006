#pragma once
#include <functional>
#include <iosfwd>
#include <kiln/tensor.hpp>
#include <kiln/tree.hpp>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

namespace ir {
struct Module;
struct Function;
} // namespace ir

struct StageOptions {
  std::string name;                           // graph name; empty: "main"
  bool allow_subgraphs = true;                // false: F::as_subgraph inlines its body
  std::vector<std::string> custom_extensions; // shared libraries registering extension ops
};

// A traced graph: prints as MLIR text, saves atomically, parses back with load_staged.
class StagedGraph {
public:
  StagedGraph(std::shared_ptr<const ir::Module> module, detail::TreeLeaves inputs)
      : module_(std::move(module)), inputs_(std::move(inputs)) {}
  std::string to_mlir() const;
  void save(const std::string& path) const;
  const ir::Module& graph() const { return *module_; }
  const std::shared_ptr<const ir::Module>& module_ptr() const { return module_; }
  // The flattened spec tree the graph was staged from (empty for graphs loaded from text).
  const detail::TreeLeaves& input_leaves() const { return inputs_; }

private:
  std::shared_ptr<const ir::Module> module_;
  detail::TreeLeaves inputs_;
};

std::ostream& operator<<(std::ostream& os, const StagedGraph& g);
StagedGraph load_staged(const std::string& path);
StagedGraph parse_staged(const std::string& mlir_text, const std::string& source_name = "<string>");

namespace detail {

// The non-template half of tracing: owns the module under construction and the thread's
// current-graph scope for the duration of one trace.
class TraceSession {
public:
  TraceSession(const StageOptions& options, const std::string& default_name);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;
  // Creates one graph argument per tensor/buffer leaf, in order.
  std::vector<Tensor> add_inputs(const TreeLeaves& leaves);
  // Sets the graph outputs (each must be a tensor of this graph; concrete ones become constants),
  // verifies and returns the module.
  std::shared_ptr<const ir::Module> finish(const std::vector<Tensor>& outputs);

private:
  struct State;
  std::unique_ptr<State> state_;
};

// While one is alive, ops this thread stages or runs record `file:line:column` instead of their
// C++ caller's line: front ends in other languages (kiln's Python package) set it to their user's
// line around each op. Nests; restores the previous one when destroyed.
class ScopedSourceLocation {
public:
  ScopedSourceLocation(std::string file, uint32_t line, uint32_t column);
  ~ScopedSourceLocation();
  ScopedSourceLocation(const ScopedSourceLocation&) = delete;
  ScopedSourceLocation& operator=(const ScopedSourceLocation&) = delete;

private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

template <class T> struct is_live_tensor : std::is_same<std::decay_t<T>, Tensor> {};

// A traced function's result; functions returning void (buffer stores only) give an empty tuple.
template <class Fn, class... Specs>
using result_t = std::conditional_t<std::is_void_v<std::invoke_result_t<Fn&, traced_t<Specs>...>>, std::tuple<>,
                                    std::invoke_result_t<Fn&, traced_t<Specs>...>>;

template <class Fn, class... Specs> struct Traced {
  detail::TreeLeaves leaves;
  std::shared_ptr<const ir::Module> module;
  result_t<Fn, Specs...> result; // holds symbolic tensors: the template outputs are rebuilt from
};

// Traces fn over the specs. Used by stage() and compile().
template <class Fn, class... Specs>
Traced<Fn, Specs...> trace(Fn& fn, const StageOptions& options, const Specs&... specs) {
  static_assert((!is_live_tensor<Specs>::value && ...),
                "a live Tensor cannot be a spec: pass t.layout() (a TensorLayout) instead");
  static_assert((SpecType<Specs> && ...), "specs are TensorLayout, BufferLayout, scalars, strings or "
                                          "vector/array/pair/tuple/map<string, ...> of them");
  TraceSession session(options, "main");
  TreeLeaves leaves;
  size_t position = 0;
  (flatten_spec<std::decay_t<Specs>>(specs, std::to_string(position++), leaves), ...);
  std::vector<Tensor> args = session.add_inputs(leaves);
  size_t next = 0;
  // Braced init evaluates the traced arguments left to right, matching the argument order.
  std::tuple<traced_t<Specs>...> traced{build_traced<std::decay_t<Specs>>(specs, args, next)...};
  result_t<Fn, Specs...> result;
  if constexpr (std::is_void_v<std::invoke_result_t<Fn&, traced_t<Specs>...>>)
    std::apply(fn, traced);
  else
    result = std::apply(fn, traced);
  std::vector<Tensor> outputs;
  flatten_result(result, outputs);
  auto module = session.finish(outputs);
  return {std::move(leaves), std::move(module), std::move(result)};
}

} // namespace detail

template <class Fn> class Stager {
public:
  Stager(Fn fn, StageOptions options) : fn_(std::move(fn)), options_(std::move(options)) {}
  template <class... Specs> StagedGraph operator()(const Specs&... specs) {
    auto traced = detail::trace(fn_, options_, specs...);
    return StagedGraph(std::move(traced.module), std::move(traced.leaves));
  }

private:
  Fn fn_;
  StageOptions options_;
};

// MAX's stage(fn)(specs...): traces fn into a StagedGraph.
template <class Fn> Stager<Fn> stage(Fn fn, StageOptions options = {}) {
  return Stager<Fn>(std::move(fn), std::move(options));
}

} // namespace kiln
