#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <kiln/compile.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <typeindex>
#include <vector>

// Call-time compilation: kiln::jit(fn) traces fn on the first call with each new input signature
// and serves later calls from the traced entry (lucid's compile(fn), torch.compile), with the
// failure modes their users hit designed out: a recompile limit past which calls still succeed,
// automatic dynamic dims instead of a recompile per batch size, and a log line per recompile.
namespace kiln {

// How the dims of call arguments enter traced graphs.
enum class Dynamic {
  off,       // lucid's dynamic=False: one entry per concrete signature, dims never symbolic
  on,        // lucid's dynamic=True: dim 0 of every tensor argument is symbolic from the first trace
  automatic, // torch's dynamic=None: static first; the second shape-driven miss makes the dims that
             // changed symbolic for later traces
};

struct JitOptions {
  Dynamic dynamic = Dynamic::automatic;
  // Traces per callable. Past it, entries already traced keep serving and a new signature runs
  // eagerly (the interpreter's kernels, op by op) without entering the cache: never a failure.
  int recompile_limit = 8;
  size_t capacity = 32; // entries kept; the least recently used one goes first
  // A miss once an entry exists throws kiln::Error(spec) naming what changed (for CI and
  // production, after warm-up; JitFunction::set_fail_on_recompile switches it later).
  bool fail_on_recompile = false;
  std::string name;                        // in logs and as the graph name; empty: "fn"
  std::vector<std::string> argument_names; // in logs: "argument 0 ('x')"
  CompileOptions compile;                  // weights, session, tiers and extensions of every entry
};

// One traced entry.
struct JitEntryStats {
  std::string signature; // "x=f32[s0, 256]": symbolic dims by symbol
  std::string tier;      // the tier its last call ran on: "interp" or "jit"
  uint64_t calls = 0;
  double compile_ms = 0; // trace and weight binding (the tiers' compiles are in Session::stats)
};

struct JitStats {
  size_t entries = 0;
  uint64_t hits = 0;           // calls served by an entry
  uint64_t misses = 0;         // calls that traced a new entry
  uint64_t uncached_calls = 0; // calls past the recompile limit, run eagerly
  uint64_t evictions = 0;
  double compile_ms = 0;                // over every trace, evicted entries included
  std::vector<JitEntryStats> per_entry; // most recently used first
};

namespace detail {

// The non-template half of kiln::jitc: entry matching, the dynamic-dims policy, limits, logs.
class TraceCache {
public:
  explicit TraceCache(JitOptions options);
  ~TraceCache();

  struct Entry {
    std::shared_ptr<const void> callable; // a CompiledCallable<Result> of the caller's Result
    std::shared_ptr<CallableCore> core;
    double compile_ms = 0;
    std::string signature;
    struct Pattern;
    std::shared_ptr<const Pattern> pattern;
    std::type_index args_type = typeid(void);
    // The structure of the call that traced it (C++ callers): a warm call's must equal it.
    ArgumentStructure structure;
    std::atomic<uint64_t> calls{0}; // calls that looked it up under the lock
    // Warm calls, counted per thread shard: a counter every calling thread wrote would bounce its
    // cache line between cores on every call.
    struct alignas(64) WarmCalls {
      std::atomic<uint64_t> calls{0};
    };
    std::array<WarmCalls, 8> warm_calls;
    std::atomic<uint64_t> last_use{0};
    bool in_cache = true; // under the cache's lock: false once evicted or cleared
  };

  // The warm call's section: while it lasts, the entry held() returns stays alive (an entry the
  // cache drops is freed only after the sections running then have ended). The caller must not
  // trace, insert or clear inside it.
  class WarmSection {
  public:
    explicit WarmSection(TraceCache& cache);
    ~WarmSection();
    WarmSection(const WarmSection&) = delete;
    WarmSection& operator=(const WarmSection&) = delete;
    // The entry the last call used; null when none is held.
    const Entry* held() const { return held_; }

  private:
    void* counter_;
    const Entry* held_;
  };
  // Whether the held entry serves a call whose structure matched its own and whose tensor leaves
  // are `tensors` (dtypes, sizes, symbols, aliasing compared as integers); counts the call if so.
  bool serves_warm(const Entry& entry, std::span<const Tensor> tensors);
  // Makes `entry` the one warm calls try first (while it stays cached), with the call's structure.
  void hold(const std::shared_ptr<Entry>& entry);

  // What a call needs: an entry that serves it, or the layouts to trace it with (one per tensor
  // leaf; `symbolic` when some dim is), or to run eagerly (past the recompile limit).
  // A miss also holds `in_flight` while it traces: other calls with the same signature wait for that
  // trace instead of tracing it again (and spending the recompile limit on copies).
  struct Decision {
    std::shared_ptr<Entry> entry;
    std::vector<TensorLayout> layouts;
    bool symbolic = false;
    bool eager = false;
    std::shared_ptr<void> in_flight;
  };
  Decision decide(const TreeLeaves& leaves, const std::vector<Tensor>& tensors, std::type_index args_type);
  // A trace with symbolic dims failed (an op that cannot be batch-polymorphic): logged once, and
  // this callable traces static shapes from now on. Returns the static layouts of the call.
  std::vector<TensorLayout> symbolic_trace_failed(const Error& error, const std::vector<Tensor>& tensors);
  // Adds a traced entry (or returns an equal one another thread added meanwhile). `structure`: the
  // call's, for warm calls of C++ callers (Python's entries have none and are never held).
  std::shared_ptr<Entry> insert(const TreeLeaves& leaves, const std::vector<Tensor>& tensors, std::type_index args_type,
                                const std::vector<TensorLayout>& layouts, std::shared_ptr<const void> callable,
                                std::shared_ptr<CallableCore> core, double compile_ms,
                                ArgumentStructure structure = {});
  void count_hit(Entry& entry);

  JitStats stats() const;
  void clear();
  void set_fail_on_recompile(bool on);
  const JitOptions& options() const { return options_; }
  StageOptions stage_options() const;

private:
  struct State;
  JitOptions options_;
  std::unique_ptr<State> state_;
};

// The spec type standing for a call argument: a TensorLayout for each Tensor, the same scalars and
// strings, the same containers.
template <class A> struct SpecOf { using type = A; };
template <> struct SpecOf<Tensor> { using type = TensorLayout; };
template <> struct SpecOf<const char*> { using type = std::string; };
template <class A, class Alloc> struct SpecOf<std::vector<A, Alloc>> {
  using type = std::vector<typename SpecOf<A>::type>;
};
template <class A, size_t N> struct SpecOf<std::array<A, N>> { using type = std::array<typename SpecOf<A>::type, N>; };
template <class A, class B> struct SpecOf<std::pair<A, B>> {
  using type = std::pair<typename SpecOf<A>::type, typename SpecOf<B>::type>;
};
template <class... A> struct SpecOf<std::tuple<A...>> { using type = std::tuple<typename SpecOf<A>::type...>; };
template <class A, class C, class Alloc> struct SpecOf<std::map<std::string, A, C, Alloc>> {
  using type = std::map<std::string, typename SpecOf<A>::type>;
};
template <class A> using spec_of_t = typename SpecOf<std::decay_t<A>>::type;

// The spec of `arg`, its tensors taking the next of `layouts` in flattening order.
template <class A> spec_of_t<A> spec_from_arg(const A& arg, const std::vector<TensorLayout>& layouts, size_t& next) {
  if constexpr (std::is_same_v<A, Tensor>) {
    return layouts.at(next++);
  } else if constexpr (std::is_same_v<A, const char*>) {
    return std::string(arg);
  } else if constexpr (is_baked_v<A>) {
    return arg;
  } else if constexpr (is_std_vector<A>::value) {
    spec_of_t<A> out;
    for (const auto& child : arg)
      out.push_back(spec_from_arg(child, layouts, next));
    return out;
  } else if constexpr (is_string_map<A>::value) {
    spec_of_t<A> out;
    for (const auto& [key, child] : arg)
      out.emplace(key, spec_from_arg(child, layouts, next));
    return out;
  } else if constexpr (is_std_array<A>::value) {
    spec_of_t<A> out;
    for (size_t i = 0; i < arg.size(); ++i)
      out[i] = spec_from_arg(arg[i], layouts, next);
    return out;
  } else if constexpr (is_std_pair<A>::value) {
    auto first = spec_from_arg(arg.first, layouts, next);
    return {std::move(first), spec_from_arg(arg.second, layouts, next)};
  } else {
    static_assert(is_std_tuple<A>::value, "call arguments are Tensors, scalars, strings or containers of them");
    return std::apply([&](const auto&... c) { return spec_of_t<A>{spec_from_arg(c, layouts, next)...}; }, arg);
  }
}

} // namespace detail

// A function compiled at call time. Thread-safe: many threads may call one at once, also while
// it traces (two threads missing on one signature may both trace; one entry is kept).
template <class Fn> class JitFunction {
public:
  JitFunction(Fn fn, JitOptions options)
      : fn_(std::make_shared<Fn>(std::move(fn))), cache_(std::make_shared<detail::TraceCache>(std::move(options))) {}

  template <class... Args> auto operator()(const Args&... args) const {
    using Result = detail::result_t<Fn, detail::spec_of_t<Args>...>;
    {
      // The warm call: the entry the last call used, its structure and tensor types compared as
      // integers, and the tensors handed to its callable as they are.
      detail::TraceCache::WarmSection section(*cache_);
      if (const detail::TraceCache::Entry* held = section.held()) {
        const auto& callable = *static_cast<const CompiledCallable<Result>*>(held->callable.get());
        detail::TensorList outputs;
        auto serve = [&](std::span<const Tensor> tensors) {
          if (!cache_->serves_warm(*held, tensors)) return false;
          callable.core()->call_flat(tensors, outputs);
          return true;
        };
        if constexpr (detail::all_tensors_v<Args...>) {
          if (detail::tensors_match<Args...>(&held->structure) && detail::with_tensor_span(serve, args...))
            return callable.result_of(outputs.span());
        } else {
          detail::ArgumentWalk walk(&held->structure, typeid(std::tuple<Args...>));
          (detail::walk_args(args, walk), ...);
          if (walk.matched() && serve(walk.tensors())) return callable.result_of(outputs.span());
        }
      }
    }
    detail::TreeLeaves leaves;
    std::vector<Tensor> tensors;
    size_t position = 0;
    (detail::flatten_args(args, std::to_string(position++), leaves, tensors), ...);
    // Inside another trace (symbolic arguments), fn is traced into that graph.
    const bool symbolic = std::any_of(tensors.begin(), tensors.end(), [](const Tensor& t) { return t.is_symbolic(); });
    detail::TraceCache::Decision decision;
    if (!symbolic) decision = cache_->decide(leaves, tensors, typeid(std::tuple<Args...>));
    if (symbolic || decision.eager) return call_directly<Result>(args...);
    std::shared_ptr<detail::TraceCache::Entry> entry = decision.entry;
    if (entry) {
      cache_->count_hit(*entry);
      if (entry->structure.args_type) cache_->hold(entry);
    } else {
      entry = trace<Result>(leaves, tensors, std::move(decision), args...);
    }
    return (*static_cast<const CompiledCallable<Result>*>(entry->callable.get()))(args...);
  }

  JitStats stats() const { return cache_->stats(); }
  // Drops every entry and resets the counts.
  void clear_cache() { cache_->clear(); }
  void set_fail_on_recompile(bool on) { cache_->set_fail_on_recompile(on); }
  const JitOptions& options() const { return cache_->options(); }

private:
  template <class Result, class... Args> Result call_directly(const Args&... args) const {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn&, const Args&...>>) {
      std::invoke(*fn_, args...);
      return {};
    } else {
      return std::invoke(*fn_, args...);
    }
  }

  template <class Result, class... Args>
  std::shared_ptr<detail::TraceCache::Entry> trace(const detail::TreeLeaves& leaves, const std::vector<Tensor>& tensors,
                                                   detail::TraceCache::Decision decision, const Args&... args) const {
    const auto start = std::chrono::steady_clock::now();
    const StageOptions stage = cache_->stage_options();
    auto traced_with = [&](const std::vector<TensorLayout>& layouts) {
      size_t next = 0;
      std::tuple<detail::spec_of_t<Args>...> specs{detail::spec_from_arg(args, layouts, next)...};
      return std::apply([&](const auto&... spec) { return detail::trace(*fn_, stage, spec...); }, specs);
    };
    using TracedResult = decltype(traced_with(decision.layouts));
    std::optional<TracedResult> traced;
    try {
      traced.emplace(traced_with(decision.layouts));
    } catch (const Error& e) {
      if (!decision.symbolic) throw;
      decision.layouts = cache_->symbolic_trace_failed(e, tensors);
      traced.emplace(traced_with(decision.layouts));
    }
    auto core = std::make_shared<detail::CallableCore>(traced->module, traced->leaves, cache_->options().compile);
    auto callable = std::make_shared<const CompiledCallable<Result>>(core, std::move(traced->result));
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    detail::ArgumentStructure structure;
    detail::ArgumentWalk recorder(structure, typeid(std::tuple<Args...>));
    (detail::walk_args(args, recorder), ...);
    auto entry = cache_->insert(leaves, tensors, typeid(std::tuple<Args...>), decision.layouts, std::move(callable),
                                std::move(core), ms, std::move(structure));
    cache_->hold(entry);
    return entry;
  }

  std::shared_ptr<Fn> fn_;
  std::shared_ptr<detail::TraceCache> cache_;
};

// lucid's compile(fn, dynamic) / @torch.compile: traces fn per input signature at call time.
template <class Fn> JitFunction<Fn> jit(Fn fn, JitOptions options = {}) {
  return JitFunction<Fn>(std::move(fn), std::move(options));
}

} // namespace kiln
