#pragma once
#include <cstddef>
#include <kiln/device.hpp>
#include <memory>
#include <string>

namespace kiln::detail {

// An accelerator tensor's storage: memory on the device holding its values, copied to and from
// the host whole. Core keeps tensors there without knowing the device's API
// (vulkan/tensor_buffer.cpp implements it on Vulkan).
class DeviceBuffer {
public:
  virtual ~DeviceBuffer() = default;
  virtual Device device() const = 0;
  virtual size_t bytes() const = 0;
  // Copies bytes() bytes from host memory into the buffer, or out of it.
  virtual void upload(const void* host) = 0;
  virtual void download(void* host) const = 0;
};

// How core reaches the accelerator's memory. Declared here and defined in the one place the tiers
// are wired (tiers/device_transfers.cpp), as ir::default_eager_evaluator is: the Vulkan
// implementation where the build has the accelerator tier, one that says there is none otherwise.
class DeviceTransfers {
public:
  virtual ~DeviceTransfers() = default;
  // Why `device` (an accelerator) cannot hold tensors: no accelerator tier in this build, no Vulkan
  // loader, driver or device, an id past those kiln uses; "" when it can.
  virtual std::string unavailable_reason(const Device& device) const = 0;
  // Uninitialised memory of `bytes` bytes on `device`. kiln::Error(unsupported) saying what is
  // missing (unavailable_reason), kiln::Error(memory) when the device has no room.
  virtual std::shared_ptr<DeviceBuffer> allocate(const Device& device, size_t bytes) const = 0;
};
const DeviceTransfers& default_device_transfers();

} // namespace kiln::detail
