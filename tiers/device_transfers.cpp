// Where core reaches the accelerator's memory (core/device_buffer.hpp): wired here, beside the
// tier set, so core names no device API and nothing registers itself from a static initialiser.
#include "core/device_buffer.hpp"
#include "kiln_config.h"
#include <kiln/error.hpp>
#if KILN_HAS_VULKAN
#include "vulkan/tensor_buffer.hpp"
#endif

namespace kiln {

#if !KILN_HAS_VULKAN
namespace {

// A build without the accelerator tier (-Dvulkan=disabled, the embedded and cross builds).
class NoAcceleratorTransfers final : public detail::DeviceTransfers {
public:
  std::string unavailable_reason(const Device& device) const override {
    return device.kind == DeviceKind::cpu ? "" : "this build has no accelerator tier (-Dvulkan=disabled)";
  }
  std::shared_ptr<detail::DeviceBuffer> allocate(const Device& device, size_t) const override {
    throw Error(ErrorKind::unsupported, "no " + device.to_string() + ": " + unavailable_reason(device));
  }
};

} // namespace
#endif

const detail::DeviceTransfers& detail::default_device_transfers() {
#if KILN_HAS_VULKAN
  return vulkan::device_transfers();
#else
  static const NoAcceleratorTransfers none;
  return none;
#endif
}

} // namespace kiln
