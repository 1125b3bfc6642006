#include "cli/commands.hpp"
#include "core/byte_size_text.hpp"
#include "kiln_config.h"
#if KILN_HAS_VULKAN
#include "vulkan/device.hpp"
#endif

namespace kiln::tools {

void print_devices(std::ostream& out) {
  out << "cpu:0: the host CPU (tiers interp" << (KILN_HAS_JIT ? " and jit" : "") << ")\n";
#if KILN_HAS_VULKAN
  std::string why;
  const std::vector<vulkan::DeviceInfo> devices = vulkan::list_devices(&why);
  if (devices.empty()) out << "no accelerator: " << why << "\n";
  for (const vulkan::DeviceInfo& d : devices)
    out << "accelerator:" << d.index << ": " << d.name << " (" << d.type << "), driver " << d.driver << ", Vulkan "
        << d.api << "\n"
        << "  device-local memory " << byte_size_text(d.device_local_bytes) << ", storage buffers up to "
        << byte_size_text(d.max_storage_buffer_range) << ", workgroups of up to " << d.max_workgroup_invocations
        << " invocations, float16 " << (d.shader_float16 ? "yes" : "no") << ", 8-bit storage "
        << (d.storage_8bit ? "yes" : "no") << "\n";
  if (!devices.empty())
    out << "the accelerator tier uses accelerator:" << vulkan::select_device(devices)
        << " (KILN_DEVICE=<index> picks another)\n";
#else
  out << "no accelerator: this build has no accelerator tier (-Dvulkan=disabled)\n";
#endif
}

} // namespace kiln::tools
