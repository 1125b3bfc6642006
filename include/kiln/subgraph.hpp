#pragma once
#include <kiln/tree.hpp>
#include <memory>
#include <source_location>
#include <string>
#include <typeinfo>

namespace kiln::detail {

// Non-template half of F::as_subgraph (src/trace/subgraph.cpp).
struct SubgraphBody {
  std::string function;                  // the private function's name
  std::shared_ptr<void> result_template; // the body's traced result, to rebuild call results
};
// Whether calls should emit func.call (inside a trace, subgraphs allowed) or inline.
bool subgraphs_enabled();
// The body traced for this boundary signature, or null.
const SubgraphBody* find_subgraph(const std::string& key);
// Starts tracing a body: a new function with one argument per tensor leaf.
std::vector<Tensor> begin_subgraph(const std::string& name, const TreeLeaves& leaves);
// Ends the body begun last, records it under key and returns it.
const SubgraphBody& end_subgraph(const std::string& key, const std::vector<Tensor>& outputs,
                                 std::shared_ptr<void> result_template);
// Aborts the body begun last (the user's function threw).
void abandon_subgraph();
std::vector<Tensor> emit_call(const std::string& function, const std::vector<Tensor>& args,
                              const std::source_location& loc);
std::string subgraph_key(const std::string& name, const char* fn_type, const TreeLeaves& leaves);

template <class Fn> class SubgraphCaller {
public:
  SubgraphCaller(std::string name, Fn fn, std::source_location loc)
      : name_(std::move(name)), fn_(std::move(fn)), loc_(loc) {}

  template <class... Args> auto operator()(const Args&... args) {
    using R = std::invoke_result_t<Fn&, const Args&...>;
    if (!subgraphs_enabled()) return fn_(args...);
    TreeLeaves leaves;
    std::vector<Tensor> tensors;
    size_t position = 0;
    (flatten_args(args, std::to_string(position++), leaves, tensors), ...);
    std::string key = subgraph_key(name_, typeid(Fn).name(), leaves);
    const SubgraphBody* body = find_subgraph(key);
    if (!body) body = &trace_body<R>(key, leaves, args...);
    std::vector<Tensor> outputs = emit_call(body->function, tensors, loc_);
    R result = *std::static_pointer_cast<R>(body->result_template);
    size_t next = 0;
    rebuild_result(result, outputs, next);
    return result;
  }

private:
  template <class R, class... Args>
  const SubgraphBody& trace_body(const std::string& key, const TreeLeaves& leaves, const Args&... args) {
    std::vector<Tensor> params = begin_subgraph(name_, leaves);
    try {
      std::tuple<Args...> inner{args...};
      size_t next = 0;
      rebuild_result(inner, params, next);
      auto result = std::make_shared<R>(std::apply(fn_, inner));
      std::vector<Tensor> outputs;
      flatten_result(*result, outputs);
      return end_subgraph(key, outputs, result);
    } catch (...) {
      abandon_subgraph();
      throw;
    }
  }

  std::string name_;
  Fn fn_;
  std::source_location loc_;
};

} // namespace kiln::detail

namespace kiln::F {

// Traces fn once per distinct boundary signature into a private function and emits func.call to
// it; with StageOptions::allow_subgraphs = false (or outside a trace) the body is inlined.
template <class Fn>
detail::SubgraphCaller<Fn> as_subgraph(std::string name, Fn fn,
                                       std::source_location loc = std::source_location::current()) {
  return detail::SubgraphCaller<Fn>(std::move(name), std::move(fn), loc);
}

} // namespace kiln::F
