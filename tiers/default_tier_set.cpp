// The one place kiln's tiers are wired together, as IREE's iree_hal_register_all_available_drivers
// fills an explicit driver registry: each tier is handed the backend it builds on, so what depends
// on what is read here rather than left to the order of static initialisers. An accelerator tier
// is added here, with the backend it falls back to (vulkan/accelerator_tier.hpp).
#include "interp/interpreter_backend.hpp"
#include "interp/interpreter_tier.hpp"
#include "kiln_config.h"
#include "runtime/tier_set.hpp"
#if KILN_HAS_JIT
#include "jit/tier/jit_executable.hpp"
#endif
#if KILN_HAS_VULKAN
#include "vulkan/accelerator_tier.hpp"
#endif

namespace kiln {

std::shared_ptr<const runtime::TierSet> runtime::build_default_tier_set() {
  const exec::TierBackend& interpreter = interp::interpreter_backend();
  std::vector<Tier> tiers;
  tiers.push_back(interp::interpreter_tier(interpreter));
#if KILN_HAS_JIT
  tiers.push_back(jitc::tier::jit_tier(interpreter));
#endif
#if KILN_HAS_VULKAN
  tiers.push_back(vulkan::accelerator_tier(interpreter)); // its CPU fallback: the interpreter's lists
#endif
  return std::make_shared<const TierSet>(std::move(tiers), interpreter.eager);
}

// Never destroyed: a session's compile thread may still build executables at exit.
std::shared_ptr<const runtime::TierSet> runtime::default_tier_set() {
  static const auto& tiers = *new std::shared_ptr<const TierSet>(build_default_tier_set());
  return tiers;
}

const ir::EagerEvaluator& ir::default_eager_evaluator() { return runtime::default_tier_set()->eager(); }

} // namespace kiln
