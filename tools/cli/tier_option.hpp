#pragma once
#include <kiln/session.hpp>
#include <string>
#include <vector>

namespace kiln::tools {

// The values of the tools' --tier option: "interp" (no promotion), "jit" (every signature is
// compiled by the JIT tier before its first call returns), "accelerator" (the same, on the
// accelerator tier) and "auto" (the session's policy from the environment: promotion after
// KILN_PROMOTE_AFTER calls, in the background, to KILN_PROMOTE_TO's tier).
const std::vector<std::string>& tier_names();
// `kiln run`'s and `kiln bench`'s default: what a program compiling with a default Session gets, so
// that both measure what users run, KILN_JIT and KILN_PROMOTE_AFTER are honoured and the
// interpreter-only build needs no flag.
inline const std::string kDefaultTier = "auto";
// The --tier option's help: the choices, the default and what it means.
std::string tier_help();
// The values of --device: "cpu" (the default) and "accelerator" (hot signatures are promoted to the
// accelerator tier, as after KILN_PROMOTE_AFTER calls).
const std::vector<std::string>& device_names();
std::string device_help();
// The policy of --tier and --device. kiln::Error(spec) for a name not listed above or "--tier jit"
// with "--device accelerator"; kiln::Error(unsupported) saying what is missing (the build's tier,
// the Vulkan loader, a driver, a device) when either asks for the accelerator and there is none.
TierPolicy tier_policy(const std::string& tier, const std::string& device = "cpu");

} // namespace kiln::tools
