#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <kiln/session.hpp>
#include <kiln/stage.hpp>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

// MAX's compile keywords.
struct CompileOptions {
  std::map<std::string, Tensor> weights;      // looked up before the session's registry
  std::string name;                           // graph name; empty: "main"
  std::vector<std::string> custom_extensions; // shared libraries registering extension ops
  bool allow_subgraphs = true;
  std::shared_ptr<Session> session; // null: the default session
  std::optional<TierPolicy> tiers;  // null: the session's policy
  // Caller-owned memory for the calls' intermediates (a board's static buffer), 64-byte aligned.
  // Each signature's plan is checked against it when built: kiln::Error(memory) "needs an arena of
  // 1.2 MiB, the caller's arena holds 1.0 MiB" at the call that builds it (a JIT plan that does
  // not fit leaves the interpreter serving). Calls then take turns on it and allocate nothing but
  // their outputs (nothing at all with call_into). Empty: kiln's own arenas, one per concurrent call.
  std::span<std::byte> arena;
};

namespace runtime {
class WeightMap;
}
namespace ir {
struct InlinedCalls;
}

namespace detail {

// The non-template half of a compiled callable: argument checks, signature cache, tiers.
class CallableCore {
public:
  CallableCore(std::shared_ptr<const ir::Module> module, TreeLeaves spec, const CompileOptions& options);
  ~CallableCore();
  // Validates the flattened call arguments against the spec and runs the graph.
  std::vector<Tensor> call(const TreeLeaves& args, const std::vector<Tensor>& tensors);
  // The warm call: arguments whose structure matched structure() (or that a kiln::jit entry
  // matched), `tensors` their tensor leaves in the spec's order. The outputs go into `outputs`.
  // A call with the signature of this callable's last call, no weight changed and nothing evicted
  // since, checks integers and runs; others check and compile as call() does.
  void call_flat(std::span<const Tensor> tensors, TensorList& outputs);
  // The structure of the most recent call (of any argument types) that passed the full check;
  // null before the first. remember_structure() records one after a full check.
  const ArgumentStructure* structure() const;
  void remember_structure(ArgumentStructure structure);
  // Runs the graph on the tensor leaves into caller-provided outputs; a call with the previous
  // call's signature allocates nothing.
  void call_into(std::span<Tensor> outputs, std::span<const Tensor> tensors);
  const std::shared_ptr<const ir::Module>& module() const;
  const TreeLeaves& spec() const;
  Session& session() const;
  // The tier hot signatures of this callable are promoted to (TierPolicy::promote_to).
  const std::string& promote_to() const;
  // The tier the most recent call ran on ("interp" before any call).
  std::string last_tier() const;
  // The arguments of a call whose tensor and buffer leaves are `tensors`, in order (debugging tools
  // take flat tensors); kiln::Error(spec) when the count differs or the callable bakes a scalar.
  TreeLeaves tensor_arguments(const std::vector<Tensor>& tensors) const;
  // Calls `inspect` with the static graph and bound weights a call with these arguments runs
  // (debugging tools build their own executables from them) and the subgraph calls inlined into
  // it, without touching the cache.
  using SignatureInspector = std::function<void(const std::shared_ptr<const ir::Function>&, const runtime::WeightMap&,
                                                const ir::InlinedCalls&)>;
  void inspect_signature(const TreeLeaves& args, const std::vector<Tensor>& tensors,
                         const SignatureInspector& inspect) const;
  struct State;

private:
  std::unique_ptr<State> state_;
};

} // namespace detail

// A traced, weight-bound graph. Thread-safe: many threads may call one callable at once. Each new
// input signature (concrete dims) is specialised and cached; hot ones are promoted to the JIT tier.
template <class Result> class CompiledCallable {
public:
  CompiledCallable(std::shared_ptr<detail::CallableCore> core, Result result_template)
      : core_(std::move(core)), template_(detail::without_tensors(std::move(result_template))) {}

  template <class... Args> Result operator()(const Args&... args) const {
    detail::TensorList outputs;
    if constexpr (detail::all_tensors_v<Args...>) {
      if (detail::tensors_match<Args...>(core_->structure())) {
        detail::with_tensor_span([&](std::span<const Tensor> tensors) { core_->call_flat(tensors, outputs); }, args...);
        return result_of(outputs.span());
      }
    } else {
      detail::ArgumentWalk walk(core_->structure(), typeid(std::tuple<Args...>));
      (detail::walk_args(args, walk), ...);
      if (walk.matched()) {
        core_->call_flat(walk.tensors(), outputs);
        return result_of(outputs.span());
      }
    }
    call_checked(outputs, args...);
    return result_of(outputs.span());
  }

  // The result of a call whose graph outputs are `outputs`.
  Result result_of(std::span<const Tensor> outputs) const {
    Result result = template_;
    size_t next = 0;
    detail::rebuild_result(result, outputs, next);
    return result;
  }

  // The call for a steady state that allocates nothing (an embedded loop, a latency-bound server):
  // `inputs` are the tensor leaves in the spec's order (one per argument for flat specs), the
  // outputs go into `outputs`, one per graph output in order, each of the output's dtype and dims
  // and sharing no memory with an input. A call with the previous call's signature and no weight
  // changed since allocates nothing (with CompileOptions::arena, not even a first arena); other
  // calls check and compile as operator() does. kiln::Error(spec) names a mismatched output.
  void call_into(std::span<Tensor> outputs, std::span<const Tensor> inputs) const { core_->call_into(outputs, inputs); }
  template <class... Inputs>
  requires(std::is_same_v<Inputs, Tensor>&&...) void call_into(std::span<Tensor> outputs,
                                                               const Inputs&... inputs) const {
    const std::array<Tensor, sizeof...(Inputs)> leaves{Tensor(inputs)...};
    core_->call_into(outputs, leaves);
  }

  StagedGraph staged() const { return StagedGraph(core_->module(), core_->spec()); }
  Session& session() const { return core_->session(); }
  const std::shared_ptr<detail::CallableCore>& core() const { return core_; }

private:
  // A call whose structure differs from the last one checked: paths built and checked in full,
  // and its structure remembered for the calls after it.
  template <class... Args> void call_checked(detail::TensorList& outputs, const Args&... args) const {
    detail::TreeLeaves leaves;
    std::vector<Tensor> tensors;
    size_t position = 0;
    (detail::flatten_args(args, std::to_string(position++), leaves, tensors), ...);
    for (const Tensor& out : core_->call(leaves, tensors))
      outputs.push_back(out);
    detail::ArgumentStructure structure;
    detail::ArgumentWalk recorder(structure, typeid(std::tuple<Args...>));
    (detail::walk_args(args, recorder), ...);
    core_->remember_structure(std::move(structure));
  }

  std::shared_ptr<detail::CallableCore> core_;
  Result template_;
};

template <class Fn> class Compiler {
public:
  Compiler(Fn fn, CompileOptions options) : fn_(std::move(fn)), options_(std::move(options)) {}
  template <class... Specs> auto operator()(const Specs&... specs) {
    StageOptions stage{options_.name, options_.allow_subgraphs, options_.custom_extensions};
    auto traced = detail::trace(fn_, stage, specs...);
    auto core = std::make_shared<detail::CallableCore>(traced.module, traced.leaves, options_);
    return CompiledCallable<decltype(traced.result)>(std::move(core), std::move(traced.result));
  }

private:
  Fn fn_;
  CompileOptions options_;
};

// MAX's compile(fn, weights=...)(specs...): traces fn, binds and checks its weights, returns a
// CompiledCallable.
template <class Fn> Compiler<Fn> compile(Fn fn, CompileOptions options = {}) {
  return Compiler<Fn>(std::move(fn), std::move(options));
}

// Compiles an already staged (or parsed) graph. A parsed graph takes one Tensor per graph argument,
// as a staged one does (or them all in one std::vector, the older form); it returns every output.
CompiledCallable<std::vector<Tensor>> compile_staged(const StagedGraph& graph, CompileOptions options = {});

} // namespace kiln
