#include "vulkan/device_region.hpp"
#include <kiln/dtype.hpp>
#include <map>

namespace kiln::vulkan {

namespace {

size_t bytes_of(const ir::Function& graph, ir::ValueId value) {
  const ir::ValueType& type = graph.type_of(value);
  return size_t(numel_of(static_dims(type.shape))) * dtype_size(type.dtype);
}

} // namespace

DeviceRegion::DeviceRegion(std::shared_ptr<Device> device, const ir::Function& graph,
                           const std::vector<Kernel>& kernels, std::vector<ir::ValueId> inputs,
                           std::vector<ir::ValueId> outputs, std::vector<bool> constant_inputs)
    : device_(std::move(device)), constant_inputs_(std::move(constant_inputs)) {
  std::map<ir::ValueId, std::shared_ptr<Buffer>> buffer_of;
  auto buffer = [&](ir::ValueId value) {
    std::shared_ptr<Buffer>& made = buffer_of[value];
    if (!made) {
      made = device_->allocate(bytes_of(graph, value));
      device_bytes_ += bytes_of(graph, value);
      buffers_.push_back(made);
    }
    return made;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    input_buffers_.push_back(buffer(inputs[i]));
    input_bytes_.push_back(bytes_of(graph, inputs[i]));
  }
  for (const Kernel& kernel : kernels) {
    Dispatch dispatch; // op_kernel refuses empty values, so every binding holds an element
    for (ir::ValueId v : kernel.bindings)
      dispatch.buffers.push_back({buffer(v).get(), 0, bytes_of(graph, v)});
    kernels_.push_back(device_->kernel(kernel.kernel.glsl, dispatch.buffers.size(), kernel.kernel.push.size()));
    dispatch.kernel = kernels_.back().get();
    dispatch.push = kernel.kernel.push;
    dispatch.groups = kernel.kernel.groups;
    dispatches_.push_back(std::move(dispatch));
  }
  for (ir::ValueId v : outputs) {
    output_buffers_.push_back(buffer(v));
    output_bytes_.push_back(bytes_of(graph, v));
  }
}

void DeviceRegion::run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
                       std::span<std::byte>) const {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (input_bytes_[i] && (!constant_inputs_[i] || !constants_uploaded_))
      device_->upload(*input_buffers_[i], 0, inputs[i].data, input_bytes_[i]);
  constants_uploaded_ = true;
  if (!dispatches_.empty()) device_->run(dispatches_);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (output_bytes_[i]) device_->download(*output_buffers_[i], 0, outputs[i].data, output_bytes_[i]);
}

} // namespace kiln::vulkan
