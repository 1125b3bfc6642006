#pragma once
#include "core/device_buffer.hpp"

namespace kiln::vulkan {

// Accelerator tensors on Vulkan: accelerator:0 is the device the accelerator tier runs on
// (Device::open_default: KILN_DEVICE, else the first GPU), and a tensor's storage is one buffer
// of its host-visible memory, so a transfer is a copy into or out of mapped memory.
const detail::DeviceTransfers& device_transfers();

} // namespace kiln::vulkan
