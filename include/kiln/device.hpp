#pragma once
#include <string>

namespace kiln {

enum class DeviceKind { cpu, accelerator };

// Where a tensor lives. Only the CPU runs today; the accelerator kind is reserved.
struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int id = 0;
  std::string to_string() const; // "cpu:0"
  friend bool operator==(const Device&, const Device&) = default;
};

inline Device CPU(int id = 0) { return Device{DeviceKind::cpu, id}; }
inline Device Accelerator(int id = 0) { return Device{DeviceKind::accelerator, id}; }

} // namespace kiln
