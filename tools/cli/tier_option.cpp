#include "cli/tier_option.hpp"
#include <kiln/error.hpp>

namespace kiln::tools {

const std::vector<std::string>& tier_names() {
  static const std::vector<std::string> names{"interp", "jit", "auto"};
  return names;
}

std::string tier_help() {
  return "interp, jit or auto (default " + kDefaultTier +
         ": the interpreter, then the JIT tier after KILN_PROMOTE_AFTER calls, 2 unless set)";
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
