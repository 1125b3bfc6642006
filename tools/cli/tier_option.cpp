#include "cli/tier_option.hpp"
#include <kiln/error.hpp>

namespace kiln::tools {

const std::vector<std::string>& tier_names() {
  static const std::vector<std::string> names{"interp", "jit", "auto"};
  return names;
}

TierPolicy tier_policy(const std::string& tier) {
  TierPolicy policy = TierPolicy::from_env();
  if (tier == "auto") return policy;
  if (tier == "interp") {
    policy.mode = JitMode::off;
    return policy;
  }
  if (tier == "jit") {
    policy.mode = JitMode::always;
    policy.async = false;
    return policy;
  }
  throw Error(ErrorKind::spec, "unknown tier '" + tier + "': expected interp, jit or auto");
}

} // namespace kiln::tools
