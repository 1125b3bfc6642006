#pragma once
#include <string>

namespace kiln {

enum class DeviceKind { cpu, accelerator };

// Where a tensor lives: the host CPU (cpu:0, kiln's one CPU device) or the accelerator, the Vulkan
// device the accelerator tier runs on (docs/accelerator.md).
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int id = 0;
  std::string to_string() const; // "cpu:0"
  friend bool operator==(const Device&, const Device&) = default;
};

inline Device CPU(int id = 0) { return Device{DeviceKind::cpu, id}; }
// accelerator:id. kiln::Error(unsupported) saying what is missing where there is no such device:
// the build has no accelerator tier, there is no Vulkan loader, driver or device (as `kiln devices`
// says), or `id` is not 0 (kiln uses one accelerator: the device KILN_DEVICE picks).
Device Accelerator(int id = 0);

} // namespace kiln
