#include "cli/tier_option.hpp"
#include "kiln_config.h"
#include <kiln/error.hpp>
#if KILN_HAS_VULKAN
#include "vulkan/device.hpp"
#endif

namespace kiln::tools {

namespace {

// kiln::Error(unsupported) unless this build has the accelerator tier and a device to run it on.
void require_accelerator(const std::string& option) {
#if KILN_HAS_VULKAN
  std::string why;
  if (vulkan::list_devices(&why).empty()) throw Error(ErrorKind::unsupported, option + ": no accelerator: " + why);
#else
  throw Error(ErrorKind::unsupported, option + ": this build has no accelerator tier (-Dvulkan=disabled)");
#endif
}

} // namespace

const std::vector<std::string>& tier_names() {
  static const std::vector<std::string> names{"interp", "jit", "accelerator", "auto"};
  return names;
}

std::string tier_help() {
  return "interp, jit, accelerator or auto (default " + kDefaultTier +
         ": the interpreter, then the JIT tier after KILN_PROMOTE_AFTER calls, 2 unless set)";
}

const std::vector<std::string>& device_names() {
  static const std::vector<std::string> names{"cpu", "accelerator"};
  return names;
}

std::string device_help() {
  return "cpu or accelerator (default cpu): with accelerator, hot signatures are promoted to the accelerator "
         "tier instead of the JIT, and kiln run uploads its inputs there and downloads the outputs (kiln devices "
         "lists the devices)";
}

TierPolicy tier_policy(const std::string& tier, const std::string& device) {
  if (device != "cpu" && device != "accelerator")
    throw Error(ErrorKind::spec, "unknown device '" + device + "': expected cpu or accelerator");
  if (device == "accelerator" && tier == "jit")
    throw Error(ErrorKind::spec, "--tier jit runs on the CPU: it cannot go with --device accelerator");
  TierPolicy policy = TierPolicy::from_env();
  if (device == "accelerator") {
    require_accelerator("--device accelerator");
    policy.promote_to = "accelerator";
  }
  if (tier == "auto") return policy;
  if (tier == "interp") {
    policy.mode = JitMode::off;
    return policy;
  }
  if (tier == "jit" || tier == "accelerator") {
    if (tier == "accelerator") require_accelerator("--tier accelerator");
    policy.mode = JitMode::always;
    policy.async = false;
    policy.promote_to = tier;
    return policy;
  }
  throw Error(ErrorKind::spec, "unknown tier '" + tier + "': expected interp, jit, accelerator or auto");
}

} // namespace kiln::tools
