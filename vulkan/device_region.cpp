#include "vulkan/device_region.hpp"
#include "core/half.hpp"
#include <kiln/dtype.hpp>
#include <kiln/error.hpp>
#include <string>

namespace kiln::vulkan {

namespace {

size_t round_up(size_t bytes, size_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

// A constant's device copy, uploaded when made: shared through the session's weight forms.
struct DeviceConstant {
  std::shared_ptr<Buffer> buffer;
};

std::vector<uint16_t> to_f16(const float* data, size_t count) {
  std::vector<uint16_t> halves(count);
  for (size_t i = 0; i < count; ++i)
    halves[i] = float_to_f16(data[i]);
  return halves;
}

} // namespace

DeviceRegion::DeviceRegion(std::shared_ptr<Device> device, const ir::Function& graph,
                           const std::vector<Kernel>& kernels, std::vector<ir::ValueId> inputs,
                           std::vector<ir::ValueId> outputs, std::vector<bool> constant_inputs, Storage storage)
    : device_(std::move(device)), storage_(storage), inputs_(std::move(inputs)), outputs_(std::move(outputs)),
      constant_inputs_(std::move(constant_inputs)) {
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (constant_inputs_[i] && !places_.contains(inputs_[i])) {
      const size_t bytes = stored_bytes(graph, inputs_[i]);
      constants_.push_back(device_->allocate(bytes)); // the first run uploads it unless bound
      places_[inputs_[i]] = {constants_.back().get(), 0, bytes};
    }
  place_in_arena(graph, kernels);
  for (const Kernel& kernel : kernels) {
    kernels_.push_back(
        device_->kernel(kernel_source(kernel.kernel, storage_), kernel.bindings.size(), kernel.kernel.push.size()));
    Dispatch dispatch; // op_kernel refuses empty values, so every binding holds an element
    dispatch.kernel = kernels_.back().get();
    dispatch.push = kernel.kernel.push;
    dispatch.groups = kernel.kernel.groups;
    dispatches_.push_back(std::move(dispatch));
    dispatch_values_.push_back(kernel.bindings);
  }
  bind_dispatches();
}

// Bytes of `value` in device memory (every device value is f32: op_kernel refuses the rest).
size_t DeviceRegion::stored_bytes(const ir::Function& graph, ir::ValueId value) const {
  return size_t(numel_of(static_dims(graph.type_of(value).shape))) * stored_element_bytes(storage_);
}

// Every value but the constants, live from the dispatch that makes it (inputs: from the upload
// before the first) to the last that reads it (outputs: to the download after the last), placed
// by the interpreter's planner. Block sizes are multiples of the device's binding-offset
// alignment, so the planner's offsets (ends of other blocks) are too.
void DeviceRegion::place_in_arena(const ir::Function& graph, const std::vector<Kernel>& kernels) {
  std::vector<ir::ValueId> values;
  std::map<ir::ValueId, exec::LiveInterval> live;
  auto use = [&](ir::ValueId v, int64_t at) {
    if (places_.contains(v)) return; // a constant
    auto [it, fresh] = live.try_emplace(v, exec::LiveInterval{stored_bytes(graph, v), at, at});
    if (fresh) values.push_back(v);
    it->second.first = std::min(it->second.first, at);
    it->second.last = std::max(it->second.last, at);
  };
  for (ir::ValueId v : inputs_)
    use(v, 0);
  for (size_t k = 0; k < kernels.size(); ++k)
    for (ir::ValueId v : kernels[k].bindings)
      use(v, int64_t(k));
  for (ir::ValueId v : outputs_)
    use(v, int64_t(kernels.size()));
  const size_t alignment = std::max<size_t>(device_->info().storage_offset_alignment, exec::kArenaAlignment);
  std::vector<exec::LiveInterval> intervals;
  for (ir::ValueId v : values) {
    exec::LiveInterval interval = live.at(v);
    interval.bytes = round_up(std::max<size_t>(interval.bytes, 1), alignment);
    intervals.push_back(interval);
  }
  const exec::ArenaLayout layout = exec::plan_arena(intervals);
  arena_bytes_ = layout.peak_bytes;
  if (arena_bytes_) arena_ = device_->allocate(arena_bytes_);
  for (size_t i = 0; i < values.size(); ++i) {
    if (layout.offsets[i] % alignment != 0)
      throw Error(ErrorKind::internal, "vulkan: the device arena placed a value at offset " +
                                           std::to_string(layout.offsets[i]) + ", not a multiple of " +
                                           std::to_string(alignment));
    places_[values[i]] = {arena_.get(), layout.offsets[i], live.at(values[i]).bytes};
  }
}

void DeviceRegion::bind_dispatches() {
  for (size_t k = 0; k < dispatches_.size(); ++k) {
    dispatches_[k].buffers.clear();
    for (ir::ValueId v : dispatch_values_[k]) {
      const Placed& place = places_.at(v);
      dispatches_[k].buffers.push_back({place.buffer, place.offset, place.bytes});
    }
  }
}

void DeviceRegion::bind_constants(const exec::ExecutionPlan& plan, runtime::WeightForms* forms) {
  std::lock_guard lock(mutex_);
  constants_.clear();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!constant_inputs_[i]) continue;
    const ir::ValueId v = inputs_[i];
    const exec::ValuePlan& value = plan.values()[v];
    const Tensor data = value.bound.defined() ? value.bound : plan.read_through_value(v);
    std::optional<runtime::WeightFormKey> key;
    if (value.bound_key)
      key = runtime::derived_key("vulkan.buffer", {&*value.bound_key},
                                 "device " + std::to_string(device_->info().index) +
                                     (storage_ == Storage::f16 ? ", f16" : ""));
    Placed& place = places_.at(v);
    const std::shared_ptr<const DeviceConstant> copy = runtime::shared_form<DeviceConstant>(forms, key, [&] {
      DeviceConstant made{device_->allocate(place.bytes)};
      upload({made.buffer.get(), 0, place.bytes}, data.raw_data());
      return made;
    });
    constants_.push_back(std::shared_ptr<const Buffer>(copy, copy->buffer.get()));
    place.buffer = constants_.back().get();
  }
  bind_dispatches();
  constants_uploaded_ = true;
}

size_t DeviceRegion::device_bytes() const {
  size_t bytes = arena_bytes_;
  for (const std::shared_ptr<const Buffer>& constant : constants_)
    bytes += constant->bytes();
  return bytes;
}

void DeviceRegion::upload(const Placed& place, const void* data) const {
  if (storage_ == Storage::f32) return device_->upload(*place.buffer, place.offset, data, place.bytes);
  staging_ = to_f16(static_cast<const float*>(data), place.bytes / 2);
  device_->upload(*place.buffer, place.offset, staging_.data(), place.bytes);
}

void DeviceRegion::download(const Placed& place, void* data) const {
  if (storage_ == Storage::f32) return device_->download(*place.buffer, place.offset, data, place.bytes);
  staging_.resize(place.bytes / 2);
  device_->download(*place.buffer, place.offset, staging_.data(), place.bytes);
  float* out = static_cast<float*>(data);
  for (size_t i = 0; i < staging_.size(); ++i)
    out[i] = f16_to_float(staging_[i]);
}

void DeviceRegion::run(std::span<const exec::View> inputs, std::span<const exec::View> outputs,
                       std::span<std::byte>) const {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (constant_inputs_[i] && constants_uploaded_) continue;
    const Placed& place = places_.at(inputs_[i]);
    upload(place, inputs[i].data);
  }
  constants_uploaded_ = true;
  if (!dispatches_.empty()) device_->run(dispatches_);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Placed& place = places_.at(outputs_[i]);
    download(place, outputs[i].data);
  }
}

} // namespace kiln::vulkan
