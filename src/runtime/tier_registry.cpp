#include "runtime/executable.hpp"
#include <mutex>

namespace kiln::runtime {

namespace {
struct Registry {
  std::mutex mutex;
  std::map<std::string, ExecutableFactory> tiers;
};
Registry& registry() {
  static Registry r;
  return r;
}
} // namespace

void register_tier(const std::string& name, ExecutableFactory factory) {
  std::lock_guard lock(registry().mutex);
  registry().tiers[name] = std::move(factory);
}

const ExecutableFactory* find_tier(const std::string& name) {
  std::lock_guard lock(registry().mutex);
  auto it = registry().tiers.find(name);
  return it == registry().tiers.end() ? nullptr : &it->second;
}

} // namespace kiln::runtime
