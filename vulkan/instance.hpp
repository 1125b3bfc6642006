#pragma once
#include "vulkan/device.hpp"
#include "vulkan/vulkan_api.hpp"
#include <string>
#include <vector>

namespace kiln::vulkan {

// A physical device kiln can use, with what opening it needs.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t queue_family = 0; // one with compute (a compute-only one where there is one)
  uint32_t api_version = 0;  // what kiln uses of it: the lower of the device's and the instance's
  bool storage_16bit = false, shader_float16 = false, storage_8bit = false;
  std::vector<const char*> extensions; // those its features need below Vulkan 1.2
  DeviceInfo info;
};

// The process's Vulkan instance and its devices with compute, created on first use and never
// destroyed (see instance.cpp). Empty `devices` with `why` saying what is missing when there is
// no loader, no driver or no device with compute.
struct Instance {
  const GlobalFunctions* global = nullptr;
  VkInstance handle = VK_NULL_HANDLE;
  InstanceFunctions functions;
  std::vector<PhysicalDevice> devices;
  std::string why;
};
const Instance& process_instance();

} // namespace kiln::vulkan
