#pragma once
#include <kiln/session.hpp>
#include <string>
#include <vector>

namespace kiln::tools {

// The values of the tools' --tier option: "interp" (the JIT tier is off), "jit" (every signature is
// compiled by the JIT tier before its first call returns) and "auto" (the session's policy from the
// environment: promotion after KILN_PROMOTE_AFTER calls, in the background).
const std::vector<std::string>& tier_names();
// Throws kiln::Error(spec) for a name not in tier_names().
TierPolicy tier_policy(const std::string& tier);

} // namespace kiln::tools
