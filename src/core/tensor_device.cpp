// Where a tensor lives: the host, or the accelerator through a DeviceBuffer (core/device_buffer.hpp).
#include "core/device_buffer.hpp"
#include "core/tensor_impl.hpp"
#include <cstring>

namespace kiln {

namespace {

bool on_host(const Device& device) { return device.kind == DeviceKind::cpu; }

// Only an accelerator tensor's storage is a DeviceBuffer (core/tensor_impl.hpp).
detail::DeviceBuffer& buffer_of(const Tensor& tensor) {
  return *static_cast<detail::DeviceBuffer*>(tensor.impl()->storage.get());
}

// An accelerator tensor of `layout` (its device) with uninitialised values.
Tensor empty_on_device(const TensorLayout& layout) {
  auto impl = std::make_shared<detail::TensorImpl>();
  impl->layout = layout;
  impl->storage = detail::default_device_transfers().allocate(
      layout.device, size_t(numel_of(static_dims(layout.shape))) * dtype_size(layout.dtype));
  return Tensor(std::move(impl));
}

} // namespace

Device Accelerator(int id) {
  const Device device{DeviceKind::accelerator, id};
  const std::string why = detail::default_device_transfers().unavailable_reason(device);
  if (!why.empty()) throw Error(ErrorKind::unsupported, "no " + device.to_string() + ": " + why);
  return device;
}

Device Tensor::device() const { return layout().device; }

Tensor Tensor::to(Device device) const {
  if (layout().device == device) return *this;
  if (!is_concrete())
    throw Error(ErrorKind::unsupported, "to(" + device.to_string() +
                                            ") of a symbolic tensor: a traced graph runs where its callable's "
                                            "inputs are (declare them with TensorLayout(dtype, dims, device))");
  if (on_host(device) && device.id != 0)
    throw Error(ErrorKind::spec, "no " + device.to_string() + ": kiln's one CPU device is cpu:0");
  Tensor copy = on_host(device) ? empty(dims(), dtype()) : empty_on_device(TensorLayout(dtype(), shape(), device));
  copy_to(copy);
  return copy;
}

Tensor Tensor::clone() const {
  Tensor copy = on_host(device()) ? empty(dims(), dtype()) : empty_on_device(layout());
  copy_to(copy);
  return copy;
}

void Tensor::copy_to(Tensor& dst) const {
  if (dst.dtype() != dtype() || dst.dims() != dims())
    throw Error(ErrorKind::shape,
                "copy_to: destination is " + dst.layout().to_string() + ", source is " + layout().to_string());
  if (!nbytes()) return;
  const bool from_host = on_host(device()), to_host = on_host(dst.device());
  if (from_host && to_host) {
    std::memmove(dst.raw_data(), raw_data(), nbytes());
  } else if (from_host) {
    buffer_of(dst).upload(raw_data());
  } else if (to_host) {
    buffer_of(*this).download(dst.raw_data());
  } else { // between accelerator tensors: through the host, as every transfer is today
    Tensor staging = empty(dims(), dtype());
    buffer_of(*this).download(staging.raw_data());
    buffer_of(dst).upload(staging.raw_data());
  }
}

} // namespace kiln
