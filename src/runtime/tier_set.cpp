#include "runtime/tier_set.hpp"
#include <kiln/error.hpp>

namespace kiln::runtime {

TierSet::TierSet(std::vector<Tier> tiers, ir::EagerEvaluator eager)
    : tiers_(std::move(tiers)), eager_(std::move(eager)) {
  for (size_t i = 0; i < tiers_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (tiers_[i].name == tiers_[j].name)
        throw Error(ErrorKind::internal, "tier set: two tiers are named '" + tiers_[i].name + "'");
}

const ExecutableFactory* TierSet::find(std::string_view name) const {
  for (const Tier& tier : tiers_)
    if (tier.name == name) return &tier.make_executable;
  return nullptr;
}

std::vector<std::string> TierSet::names() const {
  std::vector<std::string> names;
  for (const Tier& tier : tiers_)
    names.push_back(tier.name);
  return names;
}

void TierSet::warm_up() const {
  std::call_once(warmed_up_, [this] {
    for (const Tier& tier : tiers_)
      if (tier.warm_up) tier.warm_up();
  });
}

} // namespace kiln::runtime
