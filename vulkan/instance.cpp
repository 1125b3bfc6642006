#include "vulkan/instance.hpp"
#include "core/environment.hpp"
#include <algorithm>
#include <cstring>
#include <kiln/error.hpp>

namespace kiln::vulkan {

namespace {

constexpr uint32_t kMinimumApi = VK_API_VERSION_1_1;
constexpr uint32_t kMaximumApi = VK_API_VERSION_1_3;

std::string version_text(uint32_t version) {
  return std::to_string(VK_API_VERSION_MAJOR(version)) + "." + std::to_string(VK_API_VERSION_MINOR(version)) + "." +
         std::to_string(VK_API_VERSION_PATCH(version));
}

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete-gpu";
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated-gpu";
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual-gpu";
  default: return "other";
  }
}

// A compute-only family where there is one (it runs beside graphics work), else any with compute.
std::optional<uint32_t> compute_queue_family(const InstanceFunctions& f, VkPhysicalDevice device) {
  uint32_t count = 0;
  f.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  f.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
  std::optional<uint32_t> any;
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
    if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return i;
    if (!any) any = i;
  }
  return any;
}

bool has_extension(const InstanceFunctions& f, VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  if (f.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> extensions(count);
  if (f.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data()) != VK_SUCCESS) return false;
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// The optional features kiln enables where they are: 16-bit storage is Vulkan 1.1's, float16 and
// 8-bit storage are 1.2's or an extension's.
void read_features(const InstanceFunctions& f, PhysicalDevice& out) {
  const bool core12 = out.api_version >= VK_API_VERSION_1_2;
  const bool float16_int8 = core12 || has_extension(f, out.handle, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  const bool storage8 = core12 || has_extension(f, out.handle, VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  VkPhysicalDevice16BitStorageFeatures storage16_features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features float16_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDevice8BitStorageFeatures storage8_features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &storage16_features};
  if (float16_int8) {
    float16_features.pNext = features.pNext;
    features.pNext = &float16_features;
  }
  if (storage8) {
    storage8_features.pNext = features.pNext;
    features.pNext = &storage8_features;
  }
  f.vkGetPhysicalDeviceFeatures2(out.handle, &features);
  out.storage_16bit = storage16_features.storageBuffer16BitAccess;
  out.shader_float16 = float16_int8 && float16_features.shaderFloat16;
  out.storage_8bit = storage8 && storage8_features.storageBuffer8BitAccess;
  if (!core12 && out.shader_float16) out.extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (!core12 && out.storage_8bit) out.extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  out.info.shader_float16 = out.shader_float16 && out.storage_16bit;
  out.info.storage_8bit = out.storage_8bit;
}

void read_properties(const InstanceFunctions& f, PhysicalDevice& out) {
  const bool driver_properties =
      out.api_version >= VK_API_VERSION_1_2 || has_extension(f, out.handle, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                         driver_properties ? &driver : nullptr};
  f.vkGetPhysicalDeviceProperties2(out.handle, &properties);
  const VkPhysicalDeviceProperties& p = properties.properties;
  const VkPhysicalDeviceLimits& limits = p.limits;
  DeviceInfo& info = out.info;
  info.name = p.deviceName;
  info.type = type_name(p.deviceType);
  info.driver = driver_properties ? std::string(driver.driverName) + ", " + driver.driverInfo
                                  : "driver version " + std::to_string(p.driverVersion);
  info.api = version_text(p.apiVersion);
  info.max_storage_buffer_range = limits.maxStorageBufferRange;
  info.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  std::copy(std::begin(limits.maxComputeWorkGroupCount), std::end(limits.maxComputeWorkGroupCount),
            info.max_workgroup_count.begin());
  info.storage_offset_alignment = uint32_t(limits.minStorageBufferOffsetAlignment);
  VkPhysicalDeviceMemoryProperties memory;
  f.vkGetPhysicalDeviceMemoryProperties(out.handle, &memory);
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i)
    if (memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      info.device_local_bytes = std::max<uint64_t>(info.device_local_bytes, memory.memoryHeaps[i].size);
}

// Whether the device keeps NaN, infinities and -0 through f32 arithmetic when a shader asks
// (SignedZeroInfNanPreserve, which every kernel of op_kernels.hpp declares so that it computes as
// the interpreter does). Below Vulkan 1.2 that needs VK_KHR_shader_float_controls, enabled then.
bool keeps_special_floats(const InstanceFunctions& f, PhysicalDevice& device) {
  const bool core12 = device.api_version >= VK_API_VERSION_1_2;
  if (!core12 && !has_extension(f, device.handle, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME)) return false;
  VkPhysicalDeviceFloatControlsProperties controls{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &controls};
  f.vkGetPhysicalDeviceProperties2(device.handle, &properties);
  if (!controls.shaderSignedZeroInfNanPreserveFloat32) return false;
  if (!core12) device.extensions.push_back(VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME);
  return true;
}

// The devices of `instance` with compute and Vulkan 1.1, in the loader's order; `why` when none.
void list_physical_devices(Instance& instance, uint32_t instance_api) {
  const InstanceFunctions& f = instance.functions;
  uint32_t count = 0;
  VkResult result = f.vkEnumeratePhysicalDevices(instance.handle, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  if (result == VK_SUCCESS || result == VK_INCOMPLETE)
    result = f.vkEnumeratePhysicalDevices(instance.handle, &count, handles.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    instance.why = "vkEnumeratePhysicalDevices failed: " + result_name(result);
    return;
  }
  handles.resize(count);
  if (handles.empty()) {
    instance.why = "no Vulkan driver (ICD) reported a device: apt-get install mesa-vulkan-drivers, or a GPU's driver";
    return;
  }
  std::string passed_over;
  for (VkPhysicalDevice handle : handles) {
    VkPhysicalDeviceProperties properties;
    f.vkGetPhysicalDeviceProperties(handle, &properties);
    std::optional<uint32_t> family = compute_queue_family(f, handle);
    if (properties.apiVersion < kMinimumApi || !family) {
      passed_over += std::string(passed_over.empty() ? "" : "; ") + properties.deviceName +
                     (family ? " supports only Vulkan " + version_text(properties.apiVersion) + " (kiln needs 1.1)"
                             : " has no compute queue");
      continue;
    }
    PhysicalDevice device;
    device.handle = handle;
    device.queue_family = *family;
    device.api_version = std::min(properties.apiVersion, instance_api);
    if (!keeps_special_floats(f, device)) {
      passed_over += std::string(passed_over.empty() ? "" : "; ") + properties.deviceName +
                     " does not keep NaN, infinities and -0 in f32 arithmetic "
                     "(shaderSignedZeroInfNanPreserveFloat32), which kiln's kernels declare";
      continue;
    }
    device.info.index = int(instance.devices.size());
    read_properties(f, device);
    read_features(f, device);
    instance.devices.push_back(std::move(device));
  }
  if (instance.devices.empty()) instance.why = "no Vulkan device kiln can use: " + passed_over;
}

Instance create_instance() {
  Instance instance;
  instance.global = loader(&instance.why);
  if (!instance.global) return instance;
  const GlobalFunctions& g = *instance.global;
  uint32_t loader_api = VK_API_VERSION_1_0;
  g.vkEnumerateInstanceVersion(&loader_api);
  // The newest version both kiln and the loader know: a device's 1.2 features are then core.
  const uint32_t api = std::min(loader_api, kMaximumApi);
  VkApplicationInfo application{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  application.pApplicationName = "kiln";
  application.pEngineName = "kiln";
  application.apiVersion = api;
  VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  create.pApplicationInfo = &application;
  if (VkResult result = g.vkCreateInstance(&create, nullptr, &instance.handle); result != VK_SUCCESS) {
    instance.why = result == VK_ERROR_INCOMPATIBLE_DRIVER
                       ? "no Vulkan driver (ICD) reported a device: apt-get install mesa-vulkan-drivers, or a GPU's "
                         "driver (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)"
                       : "vkCreateInstance failed: " + result_name(result);
    instance.handle = VK_NULL_HANDLE;
    return instance;
  }
  std::string missing;
  if (!load_instance_functions(g, instance.handle, instance.functions, &missing)) {
    instance.why = "the Vulkan loader lacks " + missing;
    return instance;
  }
  list_physical_devices(instance, api);
  return instance;
}

std::string device_list_text(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return "there is none";
  std::string out;
  for (const DeviceInfo& d : devices)
    out += (out.empty() ? "" : ", ") + std::to_string(d.index) + ": " + d.name + " (" + d.type + ")";
  return out;
}

} // namespace

const Instance& process_instance() {
  // Never destroyed: buffers and devices that other statics hold may be freed at exit after this
  // would have been, and a driver's own teardown at exit may already have run.
  static const Instance* instance = new Instance(create_instance());
  return *instance;
}

std::vector<DeviceInfo> list_devices(std::string* why) {
  const Instance& instance = process_instance();
  if (why) *why = instance.why;
  std::vector<DeviceInfo> out;
  for (const PhysicalDevice& device : instance.devices)
    out.push_back(device.info);
  return out;
}

size_t select_device(const std::vector<DeviceInfo>& devices) {
  std::optional<int64_t> index;
  try {
    index = env::integer("KILN_DEVICE", 0, 65535);
  } catch (const Error& e) {
    throw Error(ErrorKind::spec, e.message() + "; the Vulkan devices: " + device_list_text(devices));
  }
  if (!index) {
    if (devices.empty()) throw Error(ErrorKind::unsupported, "no Vulkan device");
    // Unset: the first GPU, as torch's cuda:0 is one; a CPU driver (lavapipe) only when it is all
    // there is. The loader's order puts lavapipe first on some machines.
    for (const char* type : {"discrete-gpu", "integrated-gpu", "virtual-gpu", "other"})
      for (size_t i = 0; i < devices.size(); ++i)
        if (devices[i].type == type) return i;
    return 0;
  }
  if (size_t(*index) >= devices.size())
    throw Error(ErrorKind::spec,
                "environment variable KILN_DEVICE='" + env::text("KILN_DEVICE").value_or("") +
                    "' is not the index of a Vulkan device; the devices: " + device_list_text(devices));
  return size_t(*index);
}

} // namespace kiln::vulkan
