#include "vulkan/device.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/shader_compiler.hpp"
#include "vulkan/vulkan_api.hpp"
#include <algorithm>
#include <cstring>
#include <kiln/error.hpp>
#include <map>
#include <mutex>

namespace kiln::vulkan {

namespace {

// The logical device: buffers and kernels hold it, so it is destroyed after the last of them.
struct LogicalDevice {
  VkDevice handle = VK_NULL_HANDLE;
  DeviceFunctions f;

  LogicalDevice() = default;
  LogicalDevice(const LogicalDevice&) = delete;
  LogicalDevice& operator=(const LogicalDevice&) = delete;
  ~LogicalDevice() {
    if (handle == VK_NULL_HANDLE) return;
    f.vkDeviceWaitIdle(handle);
    f.vkDestroyDevice(handle, nullptr);
  }
};

class VulkanBuffer final : public Buffer {
public:
  VulkanBuffer(std::shared_ptr<const LogicalDevice> device, size_t bytes) : device(std::move(device)), size(bytes) {}
  ~VulkanBuffer() override {
    // Freeing the memory unmaps it.
    if (buffer != VK_NULL_HANDLE) device->f.vkDestroyBuffer(device->handle, buffer, nullptr);
    if (memory != VK_NULL_HANDLE) device->f.vkFreeMemory(device->handle, memory, nullptr);
  }
  size_t bytes() const override { return size; }

  const std::shared_ptr<const LogicalDevice> device;
  const size_t size;
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  std::byte* mapped = nullptr;
};

class VulkanKernel final : public Kernel {
public:
  VulkanKernel(std::shared_ptr<const LogicalDevice> device, size_t bindings, size_t push_bytes)
      : device(std::move(device)), binding_count(bindings), push_size(push_bytes) {}
  ~VulkanKernel() override {
    const DeviceFunctions& f = device->f;
    if (pipeline != VK_NULL_HANDLE) f.vkDestroyPipeline(device->handle, pipeline, nullptr);
    if (pipeline_layout != VK_NULL_HANDLE) f.vkDestroyPipelineLayout(device->handle, pipeline_layout, nullptr);
    if (set_layout != VK_NULL_HANDLE) f.vkDestroyDescriptorSetLayout(device->handle, set_layout, nullptr);
    if (module != VK_NULL_HANDLE) f.vkDestroyShaderModule(device->handle, module, nullptr);
  }
  size_t bindings() const override { return binding_count; }
  size_t push_bytes() const override { return push_size; }

  const std::shared_ptr<const LogicalDevice> device;
  const size_t binding_count, push_size;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
};

// What one run() records into and waits on. Command and descriptor pools may be used by one thread
// at a time, so each run takes a context of its own from the device's free list.
struct RunContext {
  VkCommandPool command_pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkDescriptorPool descriptor_pool = VK_NULL_HANDLE;
  uint32_t set_capacity = 0, descriptor_capacity = 0;
};

std::string range_text(size_t offset, size_t bytes) {
  return "bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) + ")";
}

class VulkanDevice final : public Device {
public:
  VulkanDevice(const Instance& instance, const PhysicalDevice& physical);
  ~VulkanDevice() override;

  const DeviceInfo& info() const override { return info_; }
  std::shared_ptr<Buffer> allocate(size_t bytes) override;
  void upload(const Buffer& buffer, size_t offset, const void* data, size_t bytes) override;
  void download(const Buffer& buffer, size_t offset, void* data, size_t bytes) override;
  std::shared_ptr<const Kernel> kernel(const std::string& glsl, size_t bindings, size_t push_bytes) override;
  void run(std::span<const Dispatch> dispatches) override;

private:
  void create_logical_device(const Instance& instance, const PhysicalDevice& physical);
  void rank_memory_types(const Instance& instance, const PhysicalDevice& physical);
  const VulkanBuffer& own_buffer(const Buffer& buffer, const char* what) const;
  const VulkanKernel& own_kernel(const Kernel* kernel, size_t dispatch) const;
  void check_dispatch(const Dispatch& dispatch, size_t index) const;
  std::shared_ptr<const Kernel> build_kernel(const std::string& glsl, size_t bindings, size_t push_bytes);
  std::unique_ptr<RunContext> take_context(uint32_t sets, uint32_t descriptors);
  void give_back(std::unique_ptr<RunContext> context);
  void destroy(RunContext& context);
  void record(RunContext& context, std::span<const Dispatch> dispatches);

  DeviceInfo info_;
  VkPhysicalDeviceLimits limits_{};
  std::shared_ptr<LogicalDevice> device_;
  uint32_t queue_family_ = 0;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::mutex queue_mutex_;             // vkQueueSubmit needs the queue externally synchronized
  std::vector<uint32_t> memory_types_; // host-visible and coherent, device-local ones first

  // One entry per (source, bindings, push bytes); its mutex makes a second caller of the same
  // kernel wait for the first's compile instead of compiling it again.
  struct KernelEntry {
    std::mutex mutex;
    std::shared_ptr<const Kernel> kernel;
  };
  std::mutex kernels_mutex_;
  std::map<std::string, std::shared_ptr<KernelEntry>> kernels_;

  std::mutex contexts_mutex_;
  std::vector<std::unique_ptr<RunContext>> free_contexts_;
};

VulkanDevice::VulkanDevice(const Instance& instance, const PhysicalDevice& physical) : info_(physical.info) {
  VkPhysicalDeviceProperties properties;
  instance.functions.vkGetPhysicalDeviceProperties(physical.handle, &properties);
  limits_ = properties.limits;
  rank_memory_types(instance, physical);
  create_logical_device(instance, physical);
}

void VulkanDevice::rank_memory_types(const Instance& instance, const PhysicalDevice& physical) {
  VkPhysicalDeviceMemoryProperties memory;
  instance.functions.vkGetPhysicalDeviceMemoryProperties(physical.handle, &memory);
  const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (bool device_local : {true, false})
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
      const VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
      if ((flags & mappable) == mappable && bool(flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) == device_local)
        memory_types_.push_back(i);
    }
  if (memory_types_.empty())
    throw Error(ErrorKind::unsupported, "the Vulkan device " + info_.name + " has no host-visible coherent memory");
}

void VulkanDevice::create_logical_device(const Instance& instance, const PhysicalDevice& physical) {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = physical.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  // The optional features the device has, so shaders may use f16 and 8-bit storage there.
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  storage16.storageBuffer16BitAccess = physical.storage_16bit;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &storage16};
  VkPhysicalDeviceShaderFloat16Int8Features float16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  float16.shaderFloat16 = VK_TRUE;
  if (physical.shader_float16) {
    float16.pNext = features.pNext;
    features.pNext = &float16;
  }
  VkPhysicalDevice8BitStorageFeatures storage8{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  storage8.storageBuffer8BitAccess = VK_TRUE;
  if (physical.storage_8bit) {
    storage8.pNext = features.pNext;
    features.pNext = &storage8;
  }
  VkDeviceCreateInfo create{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &features};
  create.queueCreateInfoCount = 1;
  create.pQueueCreateInfos = &queue;
  create.enabledExtensionCount = uint32_t(physical.extensions.size());
  create.ppEnabledExtensionNames = physical.extensions.data();

  auto device = std::make_shared<LogicalDevice>();
  check(instance.functions.vkCreateDevice(physical.handle, &create, nullptr, &device->handle), "vkCreateDevice");
  std::string missing;
  if (!load_device_functions(instance.functions, device->handle, device->f, &missing)) {
    // Not destroyed through the table, which may lack vkDestroyDevice itself.
    auto destroy = reinterpret_cast<PFN_vkDestroyDevice>(
        instance.functions.vkGetDeviceProcAddr(device->handle, "vkDestroyDevice"));
    if (destroy) destroy(device->handle, nullptr);
    device->handle = VK_NULL_HANDLE;
    throw Error(ErrorKind::unsupported, "the Vulkan driver of " + info_.name + " lacks " + missing);
  }
  device->f.vkGetDeviceQueue(device->handle, physical.queue_family, 0, &queue_);
  queue_family_ = physical.queue_family;
  device_ = std::move(device);
}

VulkanDevice::~VulkanDevice() {
  for (std::unique_ptr<RunContext>& context : free_contexts_)
    destroy(*context);
  // Kernels handed out keep the logical device alive; the cache's references go here.
  kernels_.clear();
}

std::shared_ptr<Buffer> VulkanDevice::allocate(size_t bytes) {
  const DeviceFunctions& f = device_->f;
  const size_t size = bytes == 0 ? 1 : bytes;
  const std::string what = "allocating " + std::to_string(bytes) + " bytes on the Vulkan device " + info_.name;
  // No heap is that large, and rounding it up below would wrap.
  if (size > (size_t(1) << 60)) throw Error(ErrorKind::memory, what + ": more than any memory heap holds");
  auto buffer = std::make_shared<VulkanBuffer>(device_, size);
  VkBufferCreateInfo create{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  // Rounded up so a shader reading whole vec4s at the end stays inside the buffer.
  create.size = (VkDeviceSize(size) + 15) / 16 * 16;
  create.usage =
      VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  create.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (VkResult result = f.vkCreateBuffer(device_->handle, &create, nullptr, &buffer->buffer); result != VK_SUCCESS) {
    buffer->buffer = VK_NULL_HANDLE;
    throw Error(ErrorKind::memory, what + ": vkCreateBuffer failed: " + result_name(result));
  }
  VkMemoryRequirements needs;
  f.vkGetBufferMemoryRequirements(device_->handle, buffer->buffer, &needs);
  VkResult result = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  // A device-local mappable heap can be small (a discrete GPU's 256 MiB BAR): the next type then.
  for (uint32_t type : memory_types_) {
    if (!(needs.memoryTypeBits & (1u << type))) continue;
    VkMemoryAllocateInfo allocation{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocation.allocationSize = needs.size;
    allocation.memoryTypeIndex = type;
    result = f.vkAllocateMemory(device_->handle, &allocation, nullptr, &buffer->memory);
    if (result == VK_SUCCESS) break;
    buffer->memory = VK_NULL_HANDLE;
  }
  if (result != VK_SUCCESS) throw Error(ErrorKind::memory, what + ": vkAllocateMemory failed: " + result_name(result));
  check(f.vkBindBufferMemory(device_->handle, buffer->buffer, buffer->memory, 0), "vkBindBufferMemory");
  void* mapped = nullptr;
  check(f.vkMapMemory(device_->handle, buffer->memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
  buffer->mapped = static_cast<std::byte*>(mapped);
  return buffer;
}

const VulkanBuffer& VulkanDevice::own_buffer(const Buffer& buffer, const char* what) const {
  const auto* own = dynamic_cast<const VulkanBuffer*>(&buffer);
  if (!own || own->device != device_)
    throw Error(ErrorKind::internal, std::string(what) + ": the buffer is not one of the Vulkan device " + info_.name);
  return *own;
}

void VulkanDevice::upload(const Buffer& buffer, size_t offset, const void* data, size_t bytes) {
  const VulkanBuffer& own = own_buffer(buffer, "upload");
  if (offset > own.size || bytes > own.size - offset)
    throw Error(ErrorKind::internal, "upload of " + range_text(offset, bytes) + " is outside the device buffer of " +
                                         std::to_string(own.size) + " bytes");
  if (bytes) std::memcpy(own.mapped + offset, data, bytes);
}

void VulkanDevice::download(const Buffer& buffer, size_t offset, void* data, size_t bytes) {
  const VulkanBuffer& own = own_buffer(buffer, "download");
  if (offset > own.size || bytes > own.size - offset)
    throw Error(ErrorKind::internal, "download of " + range_text(offset, bytes) + " is outside the device buffer of " +
                                         std::to_string(own.size) + " bytes");
  if (bytes) std::memcpy(data, own.mapped + offset, bytes);
}

std::shared_ptr<const Kernel> VulkanDevice::kernel(const std::string& glsl, size_t bindings, size_t push_bytes) {
  const size_t max_push = std::min<size_t>(128, limits_.maxPushConstantsSize);
  if (push_bytes > max_push || push_bytes % 4)
    throw Error(ErrorKind::internal, "a kernel's push constants are " + std::to_string(push_bytes) +
                                         " bytes: a multiple of 4 up to " + std::to_string(max_push) + " is accepted");
  if (bindings > limits_.maxPerStageDescriptorStorageBuffers)
    throw Error(ErrorKind::internal, "a kernel has " + std::to_string(bindings) + " storage buffers; the device " +
                                         info_.name + " takes at most " +
                                         std::to_string(limits_.maxPerStageDescriptorStorageBuffers));
  std::string key = std::to_string(bindings) + "," + std::to_string(push_bytes) + "\n" + glsl;
  std::shared_ptr<KernelEntry> entry;
  {
    std::lock_guard lock(kernels_mutex_);
    std::shared_ptr<KernelEntry>& slot = kernels_[key];
    if (!slot) slot = std::make_shared<KernelEntry>();
    entry = slot;
  }
  std::lock_guard lock(entry->mutex);
  // A source that did not compile leaves the entry empty, so the next caller gets the error too.
  if (!entry->kernel) entry->kernel = build_kernel(glsl, bindings, push_bytes);
  return entry->kernel;
}

std::shared_ptr<const Kernel> VulkanDevice::build_kernel(const std::string& glsl, size_t bindings, size_t push_bytes) {
  const std::vector<uint32_t> spirv = compile_compute_shader(glsl);
  const DeviceFunctions& f = device_->f;
  const VkDevice device = device_->handle;
  auto kernel = std::make_shared<VulkanKernel>(device_, bindings, push_bytes);

  VkShaderModuleCreateInfo module{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module.codeSize = spirv.size() * sizeof(uint32_t);
  module.pCode = spirv.data();
  check(f.vkCreateShaderModule(device, &module, nullptr, &kernel->module), "vkCreateShaderModule");

  std::vector<VkDescriptorSetLayoutBinding> layout_bindings(bindings);
  for (size_t i = 0; i < bindings; ++i)
    layout_bindings[i] = {uint32_t(i), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo set_layout{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_layout.bindingCount = uint32_t(bindings);
  set_layout.pBindings = layout_bindings.data();
  check(f.vkCreateDescriptorSetLayout(device, &set_layout, nullptr, &kernel->set_layout),
        "vkCreateDescriptorSetLayout");

  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(push_bytes)};
  VkPipelineLayoutCreateInfo pipeline_layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pipeline_layout.setLayoutCount = 1;
  pipeline_layout.pSetLayouts = &kernel->set_layout;
  pipeline_layout.pushConstantRangeCount = push_bytes ? 1 : 0;
  pipeline_layout.pPushConstantRanges = &push;
  check(f.vkCreatePipelineLayout(device, &pipeline_layout, nullptr, &kernel->pipeline_layout),
        "vkCreatePipelineLayout");

  VkComputePipelineCreateInfo pipeline{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pipeline.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline.stage.module = kernel->module;
  pipeline.stage.pName = "main";
  pipeline.layout = kernel->pipeline_layout;
  check(f.vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline, nullptr, &kernel->pipeline),
        "vkCreateComputePipelines");
  return kernel;
}

const VulkanKernel& VulkanDevice::own_kernel(const Kernel* kernel, size_t dispatch) const {
  const auto* own = dynamic_cast<const VulkanKernel*>(kernel);
  if (!own || own->device != device_)
    throw Error(ErrorKind::internal,
                "dispatch " + std::to_string(dispatch) + ": " +
                    (kernel ? "the kernel is not one of the Vulkan device " + info_.name : std::string("no kernel")));
  return *own;
}

void VulkanDevice::check_dispatch(const Dispatch& dispatch, size_t index) const {
  const std::string where = "dispatch " + std::to_string(index);
  const VulkanKernel& kernel = own_kernel(dispatch.kernel, index);
  if (dispatch.buffers.size() != kernel.binding_count)
    throw Error(ErrorKind::internal, where + ": " + std::to_string(dispatch.buffers.size()) +
                                         " buffers for a kernel of " + std::to_string(kernel.binding_count) +
                                         " bindings");
  if (dispatch.push.size() != kernel.push_size)
    throw Error(ErrorKind::internal, where + ": " + std::to_string(dispatch.push.size()) +
                                         " bytes of push constants for a kernel of " +
                                         std::to_string(kernel.push_size));
  for (int axis = 0; axis < 3; ++axis)
    if (dispatch.groups[axis] == 0 || dispatch.groups[axis] > limits_.maxComputeWorkGroupCount[axis])
      throw Error(ErrorKind::internal, where + ": " + std::to_string(dispatch.groups[axis]) + " workgroups along " +
                                           "xyz"[axis] + "; the device " + info_.name + " takes 1 to " +
                                           std::to_string(limits_.maxComputeWorkGroupCount[axis]));
  for (size_t i = 0; i < dispatch.buffers.size(); ++i) {
    const BufferRange& range = dispatch.buffers[i];
    const std::string binding = where + ", binding " + std::to_string(i);
    if (!range.buffer) throw Error(ErrorKind::internal, binding + ": no buffer");
    const VulkanBuffer& buffer = own_buffer(*range.buffer, binding.c_str());
    const size_t bytes = range.bytes ? range.bytes : buffer.size - std::min(range.offset, buffer.size);
    if (range.offset >= buffer.size || bytes > buffer.size - range.offset)
      throw Error(ErrorKind::internal, binding + ": " + range_text(range.offset, bytes) + " is outside its buffer of " +
                                           std::to_string(buffer.size) + " bytes");
    if (range.offset % limits_.minStorageBufferOffsetAlignment)
      throw Error(ErrorKind::internal, binding + ": offset " + std::to_string(range.offset) +
                                           " is not a multiple of the device's storage buffer alignment, " +
                                           std::to_string(limits_.minStorageBufferOffsetAlignment));
    if (bytes > limits_.maxStorageBufferRange)
      throw Error(ErrorKind::internal, binding + ": " + std::to_string(bytes) +
                                           " bytes exceed the device's largest storage buffer binding, " +
                                           std::to_string(limits_.maxStorageBufferRange));
  }
}

std::unique_ptr<RunContext> VulkanDevice::take_context(uint32_t sets, uint32_t descriptors) {
  std::unique_ptr<RunContext> context;
  {
    std::lock_guard lock(contexts_mutex_);
    if (!free_contexts_.empty()) {
      context = std::move(free_contexts_.back());
      free_contexts_.pop_back();
    }
  }
  const DeviceFunctions& f = device_->f;
  const VkDevice device = device_->handle;
  if (!context) {
    context = std::make_unique<RunContext>();
    try {
      VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
      pool.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
      pool.queueFamilyIndex = queue_family_;
      check(f.vkCreateCommandPool(device, &pool, nullptr, &context->command_pool), "vkCreateCommandPool");
      VkCommandBufferAllocateInfo allocation{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
      allocation.commandPool = context->command_pool;
      allocation.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
      allocation.commandBufferCount = 1;
      check(f.vkAllocateCommandBuffers(device, &allocation, &context->commands), "vkAllocateCommandBuffers");
      VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
      check(f.vkCreateFence(device, &fence, nullptr, &context->fence), "vkCreateFence");
    } catch (...) {
      destroy(*context);
      throw;
    }
  }
  if (sets <= context->set_capacity && descriptors <= context->descriptor_capacity) return context;
  // Grown to the largest run seen, so a context is re-made rarely.
  if (context->descriptor_pool != VK_NULL_HANDLE) f.vkDestroyDescriptorPool(device, context->descriptor_pool, nullptr);
  context->descriptor_pool = VK_NULL_HANDLE;
  context->set_capacity = std::max({sets, 2 * context->set_capacity, 8u});
  context->descriptor_capacity = std::max({descriptors, 2 * context->descriptor_capacity, 32u});
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, context->descriptor_capacity};
  VkDescriptorPoolCreateInfo pool{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool.maxSets = context->set_capacity;
  pool.poolSizeCount = 1;
  pool.pPoolSizes = &size;
  if (VkResult result = f.vkCreateDescriptorPool(device, &pool, nullptr, &context->descriptor_pool);
      result != VK_SUCCESS) {
    context->descriptor_pool = VK_NULL_HANDLE;
    destroy(*context);
    check(result, "vkCreateDescriptorPool");
  }
  return context;
}

void VulkanDevice::give_back(std::unique_ptr<RunContext> context) {
  const DeviceFunctions& f = device_->f;
  // The pools hand out fresh sets and a fresh command buffer next time; a reset that fails
  // (out of memory) drops the context instead of reusing it.
  if (f.vkResetCommandPool(device_->handle, context->command_pool, 0) != VK_SUCCESS ||
      f.vkResetDescriptorPool(device_->handle, context->descriptor_pool, 0) != VK_SUCCESS ||
      f.vkResetFences(device_->handle, 1, &context->fence) != VK_SUCCESS) {
    destroy(*context);
    return;
  }
  std::lock_guard lock(contexts_mutex_);
  free_contexts_.push_back(std::move(context));
}

void VulkanDevice::destroy(RunContext& context) {
  const DeviceFunctions& f = device_->f;
  const VkDevice device = device_->handle;
  if (context.descriptor_pool != VK_NULL_HANDLE) f.vkDestroyDescriptorPool(device, context.descriptor_pool, nullptr);
  if (context.fence != VK_NULL_HANDLE) f.vkDestroyFence(device, context.fence, nullptr);
  if (context.command_pool != VK_NULL_HANDLE) f.vkDestroyCommandPool(device, context.command_pool, nullptr);
  context = RunContext{};
}

void VulkanDevice::record(RunContext& context, std::span<const Dispatch> dispatches) {
  const DeviceFunctions& f = device_->f;
  const VkDevice device = device_->handle;

  std::vector<VkDescriptorSetLayout> layouts;
  for (const Dispatch& d : dispatches)
    if (d.kernel->bindings()) layouts.push_back(static_cast<const VulkanKernel*>(d.kernel)->set_layout);
  std::vector<VkDescriptorSet> sets(layouts.size());
  if (!layouts.empty()) {
    VkDescriptorSetAllocateInfo allocation{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    allocation.descriptorPool = context.descriptor_pool;
    allocation.descriptorSetCount = uint32_t(layouts.size());
    allocation.pSetLayouts = layouts.data();
    check(f.vkAllocateDescriptorSets(device, &allocation, sets.data()), "vkAllocateDescriptorSets");
  }
  size_t descriptors = 0;
  for (const Dispatch& d : dispatches)
    descriptors += d.buffers.size();
  std::vector<VkDescriptorBufferInfo> infos;
  std::vector<VkWriteDescriptorSet> writes;
  infos.reserve(descriptors); // writes point into it
  size_t set = 0;
  for (const Dispatch& d : dispatches) {
    if (d.buffers.empty()) continue;
    for (size_t i = 0; i < d.buffers.size(); ++i) {
      const BufferRange& range = d.buffers[i];
      const auto& buffer = *static_cast<const VulkanBuffer*>(range.buffer);
      // Not VK_WHOLE_SIZE: the VkBuffer is rounded up, and may then exceed maxStorageBufferRange.
      infos.push_back({buffer.buffer, range.offset, range.bytes ? range.bytes : buffer.size - range.offset});
      VkWriteDescriptorSet write{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      write.dstSet = sets[set];
      write.dstBinding = uint32_t(i);
      write.descriptorCount = 1;
      write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      write.pBufferInfo = &infos.back();
      writes.push_back(write);
    }
    ++set;
  }
  if (!writes.empty()) f.vkUpdateDescriptorSets(device, uint32_t(writes.size()), writes.data(), 0, nullptr);

  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(f.vkBeginCommandBuffer(context.commands, &begin), "vkBeginCommandBuffer");
  // Each dispatch sees the writes of those before it; the host sees them all after the fence.
  VkMemoryBarrier between{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
  VkMemoryBarrier to_host{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT,
                          VK_ACCESS_HOST_READ_BIT};
  set = 0;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch& d = dispatches[i];
    const auto& kernel = *static_cast<const VulkanKernel*>(d.kernel);
    if (i > 0)
      f.vkCmdPipelineBarrier(context.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &between, 0, nullptr, 0, nullptr);
    f.vkCmdBindPipeline(context.commands, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline);
    if (kernel.binding_count)
      f.vkCmdBindDescriptorSets(context.commands, VK_PIPELINE_BIND_POINT_COMPUTE, kernel.pipeline_layout, 0, 1,
                                &sets[set++], 0, nullptr);
    if (kernel.push_size)
      f.vkCmdPushConstants(context.commands, kernel.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           uint32_t(kernel.push_size), d.push.data());
    f.vkCmdDispatch(context.commands, d.groups[0], d.groups[1], d.groups[2]);
  }
  f.vkCmdPipelineBarrier(context.commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, nullptr, 0, nullptr);
  check(f.vkEndCommandBuffer(context.commands), "vkEndCommandBuffer");
}

void VulkanDevice::run(std::span<const Dispatch> dispatches) {
  if (dispatches.empty()) return;
  uint32_t sets = 0, descriptors = 0;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    check_dispatch(dispatches[i], i);
    sets += dispatches[i].buffers.empty() ? 0 : 1;
    descriptors += uint32_t(dispatches[i].buffers.size());
  }
  std::unique_ptr<RunContext> context = take_context(sets, descriptors);
  try {
    record(*context, dispatches);
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &context->commands;
    std::lock_guard lock(queue_mutex_);
    check(device_->f.vkQueueSubmit(queue_, 1, &submit, context->fence), "vkQueueSubmit");
  } catch (...) {
    give_back(std::move(context)); // nothing of it is in flight
    throw;
  }
  // A context whose wait failed (a lost device) may still be in flight: it is dropped, not reused.
  check(device_->f.vkWaitForFences(device_->handle, 1, &context->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  give_back(std::move(context));
}

} // namespace

std::shared_ptr<Device> Device::open_default() {
  // Never destroyed (as the instance): a buffer another static frees at exit still finds its device.
  static std::mutex* mutex = new std::mutex;
  static std::shared_ptr<Device>* opened = new std::shared_ptr<Device>;
  std::lock_guard lock(*mutex);
  if (*opened) return *opened;
  const Instance& instance = process_instance();
  if (instance.devices.empty()) throw Error(ErrorKind::unsupported, instance.why);
  const size_t index = select_device(list_devices());
  *opened = std::make_shared<VulkanDevice>(instance, instance.devices[index]);
  return *opened;
}

} // namespace kiln::vulkan
