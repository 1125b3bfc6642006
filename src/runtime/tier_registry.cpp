#include "runtime/executable.hpp"
#include <mutex>
#include <vector>

namespace kiln::runtime {

namespace {
struct Tier {
  ExecutableFactory factory;
  TierWarmUp warm_up;
};
struct Registry {
  std::mutex mutex;
  std::map<std::string, Tier> tiers;
  std::once_flag warmed_up;
};
Registry& registry() {
  static Registry& r = *new Registry; // never destroyed: compile threads look tiers up until they stop
  return r;
}
} // namespace

void register_tier(const std::string& name, ExecutableFactory factory, TierWarmUp warm_up) {
  std::lock_guard lock(registry().mutex);
  registry().tiers[name] = Tier{std::move(factory), std::move(warm_up)};
}

const ExecutableFactory* find_tier(const std::string& name) {
  std::lock_guard lock(registry().mutex);
  auto it = registry().tiers.find(name);
  return it == registry().tiers.end() ? nullptr : &it->second.factory;
}

void warm_up_tiers() {
  std::call_once(registry().warmed_up, [] {
    std::vector<TierWarmUp> warm_ups;
    {
      std::lock_guard lock(registry().mutex);
      for (const auto& [name, tier] : registry().tiers)
        if (tier.warm_up) warm_ups.push_back(tier.warm_up);
    }
    for (const TierWarmUp& warm_up : warm_ups)
      warm_up();
  });
}

} // namespace kiln::runtime
