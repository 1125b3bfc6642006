#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

// kiln's accelerator: a Vulkan compute device, reached through the loader opened at run time
// (dlopen("libvulkan.so.1")), so a kiln without a Vulkan driver still runs on the CPU. Kernels are
// GLSL compute shaders compiled to SPIR-V in process (glslang's C interface).
namespace kiln::vulkan {

// One physical device with a compute queue, as the loader reports it (what `kiln devices` prints).
struct DeviceInfo {
  int index = 0;      // in the loader's order: KILN_DEVICE=<index> picks it
  std::string name;   // "llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H200"
  std::string type;   // "cpu", "discrete-gpu", "integrated-gpu", "virtual-gpu" or "other"
  std::string driver; // the driver's name and info ("llvmpipe", "Mesa 22.3.6 (LLVM 15.0.6)")
  std::string api;    // the Vulkan version it supports, "1.3.230"
  uint64_t max_storage_buffer_range = 0;
  uint32_t max_workgroup_invocations = 0;
  std::array<uint32_t, 3> max_workgroup_count{};
  uint64_t device_local_bytes = 0;       // the largest device-local memory heap
  uint32_t storage_offset_alignment = 0; // minStorageBufferOffsetAlignment: at most 256 by Vulkan's rules
  bool shader_float16 = false;           // f16 arithmetic and f16 storage buffers (enabled when there)
  bool storage_8bit = false;             // 8-bit storage buffers (enabled when there)
};

// The devices with a compute queue, in the loader's order. Empty when there is none, with `why`
// (when not null) saying what is missing: no libvulkan.so.1, no driver, no device with compute, or
// the error a driver returned. Never throws.
std::vector<DeviceInfo> list_devices(std::string* why = nullptr);

// The index of list_devices() that KILN_DEVICE names; unset, the first discrete GPU, else the first
// integrated, virtual or other one, else the first device (a CPU driver). kiln::Error(spec) naming
// KILN_DEVICE, its value and `devices` when it is not a number or not one of their indices.
size_t select_device(const std::vector<DeviceInfo>& devices);

// Device memory the host can map (see Device::allocate); freed when its last shared_ptr goes (it
// keeps its device alive).
class Buffer {
public:
  virtual ~Buffer() = default;
  virtual size_t bytes() const = 0; // as asked of allocate (0 taken as 1)
};

// A compute pipeline (see Device::kernel).
class Kernel {
public:
  virtual ~Kernel() = default;
  virtual size_t bindings() const = 0;
  virtual size_t push_bytes() const = 0;
};

// A binding of a dispatch: `bytes` of `buffer` from `offset` (0 bytes: the rest of the buffer).
// `offset` is a multiple of info().storage_offset_alignment (so a multiple of 256 always is).
struct BufferRange {
  const Buffer* buffer = nullptr;
  size_t offset = 0;
  size_t bytes = 0;
};

// One compute dispatch: `kernel` over `groups` workgroups, with binding i of set 0 = buffers[i]
// and `push` as its push constants.
struct Dispatch {
  const Kernel* kernel = nullptr;
  std::vector<BufferRange> buffers;
  std::vector<std::byte> push;
  std::array<uint32_t, 3> groups{1, 1, 1};
};

// An opened logical device and its compute queue. Thread-safe: any thread may allocate, compile
// and run; submissions to the queue take one lock.
class Device {
public:
  // The device select_device picks (KILN_DEVICE, else the first GPU), opened on first use and
  // kept for the process. kiln::Error(unsupported) saying what is missing (as list_devices' why),
  // or naming KILN_DEVICE when it is not a listed index.
  static std::shared_ptr<Device> open_default();

  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;

  // Device memory of at least `bytes` (0 is taken as 1), mappable by the host (host-visible and
  // coherent; device-local too where the device has such memory). kiln::Error(memory) when the
  // device has none left, naming the size.
  virtual std::shared_ptr<Buffer> allocate(size_t bytes) = 0;
  // Copies host memory into a buffer and back. Only while no run() that uses the buffer is in
  // flight (run() waits for its work, so between runs). kiln::Error(internal) out of range.
  virtual void upload(const Buffer& buffer, size_t offset, const void* data, size_t bytes) = 0;
  virtual void download(const Buffer& buffer, size_t offset, void* data, size_t bytes) = 0;

  // A compute pipeline for the GLSL compute shader `glsl` (#version 450; local size declared in
  // it), with `bindings` storage buffers at set 0, bindings 0..bindings-1, and `push_bytes` of push
  // constants (at most 128). Compiled once per distinct source text and kept. kiln::Error(internal)
  // with glslang's log when it does not compile.
  virtual std::shared_ptr<const Kernel> kernel(const std::string& glsl, size_t bindings, size_t push_bytes) = 0;

  // Records `dispatches` in one command buffer, in order, with a barrier between each two so a
  // dispatch sees the writes of those before it; submits it and waits until it is done.
  // kiln::Error(internal) naming the Vulkan result on a driver failure (a lost device included).
  virtual void run(std::span<const Dispatch> dispatches) = 0;
};

} // namespace kiln::vulkan
