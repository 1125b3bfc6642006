#pragma once
#include <kiln/session.hpp>
#include <string>
#include <vector>

namespace kiln::tools {

// The values of the tools' --tier option: "interp" (the JIT tier is off), "jit" (every signature is
// compiled by the JIT tier before its first call returns) and "auto" (the session's policy from the
// environment: promotion after KILN_PROMOTE_AFTER calls, in the background).
const std::vector<std::string>& tier_names();
// `kiln run`'s and `kiln bench`'s default: what a program compiling with a default Session gets, so
// that both measure what users run, KILN_JIT and KILN_PROMOTE_AFTER are honoured and the
// interpreter-only build needs no flag.
inline const std::string kDefaultTier = "auto";
// The --tier option's help: the choices, the default and what it means.
std::string tier_help();
// Throws kiln::Error(spec) for a name not in tier_names().
TierPolicy tier_policy(const std::string& tier);

} // namespace kiln::tools
