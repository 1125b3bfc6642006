#pragma once
#include "ir/eager_evaluator.hpp"
#include "runtime/executable.hpp"
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime {

// Builds an executable for a static graph and its bound weights (every constant_external name is
// in the map, shape and dtype already checked).
using ExecutableFactory =
    std::function<std::unique_ptr<Executable>(std::shared_ptr<const ir::Function> graph, const WeightMap& weights)>;

// Initialises, on the calling thread, the library state a tier's compiles use (oneDNN's
// implementation lists and kernel registries, kiln's kernel caches). See TierSet::warm_up().
using TierWarmUp = std::function<void()>;

// One tier: its name ("interp", "jit": what stats and KILN_LOG show), how it builds an executable,
// and what it initialises before a session compiles in the background (empty: nothing).
struct Tier {
  std::string name;
  ExecutableFactory make_executable;
  TierWarmUp warm_up;
};

// The tiers a session compiles with, and the eager evaluator its constant folding and debug
// stepper use: values handed to the session, as IREE hands an instance its explicit
// iree_hal_driver_registry_t, never filled by static initialisers. kiln's is built in one visible
// place, build_default_tier_set(); a test may build its own. Immutable, so sessions share one.
class TierSet {
public:
  // kiln::Error (internal) when two tiers share a name.
  TierSet(std::vector<Tier> tiers, ir::EagerEvaluator eager);
  TierSet(const TierSet&) = delete;
  TierSet& operator=(const TierSet&) = delete;

  // Null when the set has no such tier (the JIT in an interpreter-only build).
  const ExecutableFactory* find(std::string_view name) const;
  const ExecutableFactory* interp() const { return find("interp"); }
  const ExecutableFactory* jit() const { return find("jit"); }
  std::vector<std::string> names() const;
  const ir::EagerEvaluator& eager() const { return eager_; }
  // Runs every tier's warm-up, once per set. A session that compiles in the background calls it
  // from its constructor: static objects are destroyed in the reverse order of their construction,
  // so library statics first built by a background compile would be destroyed at exit before a
  // static session (the default one) had stopped its compile thread, which may still be using
  // them. Built here, before the session is complete, they outlive it.
  void warm_up() const;

private:
  std::vector<Tier> tiers_;
  ir::EagerEvaluator eager_;
  mutable std::once_flag warmed_up_;
};

// Every tier this build links, each given the backend it builds on: the interpreter with its own
// backend, the JIT with the interpreter's (its ops left as steps of their own run what the
// interpreter's lists pick), and the interpreter's eager evaluator. Defined in
// tiers/default_tier_set.cpp, the one file that includes every tier; the runtime does not.
std::shared_ptr<const TierSet> build_default_tier_set();

// The process-wide default set: build_default_tier_set() on first use, kept for the life of the
// process. Sessions given no tier set use it, and so does eager F:: outside any session
// (ir::default_eager_evaluator()).
std::shared_ptr<const TierSet> default_tier_set();

} // namespace kiln::runtime
