#include "vulkan/tensor_buffer.hpp"
#include "vulkan/device.hpp"
#include <kiln/error.hpp>

namespace kiln::vulkan {

namespace {

class TensorBuffer final : public detail::DeviceBuffer {
public:
  TensorBuffer(std::shared_ptr<Device> device, size_t bytes)
      : device_(std::move(device)), buffer_(device_->allocate(bytes)), bytes_(bytes) {}
  kiln::Device device() const override { return kiln::Device{DeviceKind::accelerator, 0}; }
  size_t bytes() const override { return bytes_; }
  void upload(const void* host) override { device_->upload(*buffer_, 0, host, bytes_); }
  void download(void* host) const override { device_->download(*buffer_, 0, host, bytes_); }

private:
  std::shared_ptr<Device> device_;
  std::shared_ptr<Buffer> buffer_;
  size_t bytes_;
};

class VulkanTransfers final : public detail::DeviceTransfers {
public:
  std::string unavailable_reason(const kiln::Device& device) const override {
    if (device.kind == DeviceKind::cpu) return "";
    std::string why;
    const std::vector<DeviceInfo> devices = list_devices(&why);
    if (devices.empty()) return why;
    if (device.id != 0)
      return "kiln uses one accelerator, accelerator:0: the device KILN_DEVICE picks among the " +
             std::to_string(devices.size()) + " of `kiln devices`";
    return "";
  }

  std::shared_ptr<detail::DeviceBuffer> allocate(const kiln::Device& device, size_t bytes) const override {
    const std::string why = unavailable_reason(device);
    if (!why.empty()) throw Error(ErrorKind::unsupported, "no " + device.to_string() + ": " + why);
    return std::make_shared<TensorBuffer>(Device::open_default(), bytes);
  }
};

} // namespace

const detail::DeviceTransfers& device_transfers() {
  static const VulkanTransfers transfers;
  return transfers;
}

} // namespace kiln::vulkan
