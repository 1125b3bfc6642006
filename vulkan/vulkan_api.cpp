#include "vulkan/vulkan_api.hpp"
#include <dlfcn.h>
#include <kiln/error.hpp>
#include <mutex>

namespace kiln::vulkan {

Loader open_loader(std::initializer_list<const char*> names) {
  Loader out;
  void* library = nullptr;
  for (const char* name : names)
    if ((library = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!library) {
    out.why = std::string(*names.begin()) + " not found: apt-get install libvulkan1 mesa-vulkan-drivers";
    return out;
  }
  auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library, "vkGetInstanceProcAddr"));
  if (!get) {
    out.why = "libvulkan.so.1 has no vkGetInstanceProcAddr: not a Vulkan loader";
    return out;
  }
  GlobalFunctions& f = out.functions;
  f.vkGetInstanceProcAddr = get;
#define KILN_VK_LOAD_GLOBAL(name) f.name = reinterpret_cast<PFN_##name>(get(VK_NULL_HANDLE, #name));
  KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_LOAD_GLOBAL)
#undef KILN_VK_LOAD_GLOBAL
  // vkEnumerateInstanceVersion is Vulkan 1.1's: a 1.0 loader lacks it, and is refused below.
  if (!f.vkCreateInstance || !f.vkEnumerateInstanceLayerProperties || !f.vkEnumerateInstanceVersion)
    out.why = "the Vulkan loader (libvulkan.so.1) is older than Vulkan 1.1: upgrade libvulkan1";
  return out;
}

const GlobalFunctions* loader(std::string* why) {
  // Never closed: dlclose at exit would unmap a driver whose threads may still be running.
  static const Loader* opened = new Loader(open_loader({"libvulkan.so.1", "libvulkan.so"}));
  if (!opened->why.empty()) {
    if (why) *why = opened->why;
    return nullptr;
  }
  return &opened->functions;
}

// Resolves one function of a table through `get(handle, name)`; false (naming it) when missing.
#define KILN_VK_LOAD(name)                                                                                             \
  out.name = reinterpret_cast<PFN_##name>(get(handle, #name));                                                         \
  if (!out.name) {                                                                                                     \
    if (missing) *missing = #name;                                                                                     \
    return false;                                                                                                      \
  }

bool load_instance_functions(const GlobalFunctions& loader, VkInstance instance, InstanceFunctions& out,
                             std::string* missing) {
  const PFN_vkGetInstanceProcAddr get = loader.vkGetInstanceProcAddr;
  const VkInstance handle = instance;
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_LOAD)
  return true;
}

bool load_device_functions(const InstanceFunctions& instance, VkDevice device, DeviceFunctions& out,
                           std::string* missing) {
  const PFN_vkGetDeviceProcAddr get = instance.vkGetDeviceProcAddr;
  const VkDevice handle = device;
  KILN_VK_DEVICE_FUNCTIONS(KILN_VK_LOAD)
  return true;
}

#undef KILN_VK_LOAD

std::string result_name(VkResult result) {
  switch (result) {
#define KILN_VK_RESULT(name)                                                                                           \
  case name: return #name;
    KILN_VK_RESULT(VK_SUCCESS)
    KILN_VK_RESULT(VK_NOT_READY)
    KILN_VK_RESULT(VK_TIMEOUT)
    KILN_VK_RESULT(VK_EVENT_SET)
    KILN_VK_RESULT(VK_EVENT_RESET)
    KILN_VK_RESULT(VK_INCOMPLETE)
    KILN_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KILN_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VK_RESULT(VK_ERROR_DEVICE_LOST)
    KILN_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    KILN_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    KILN_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    KILN_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    KILN_VK_RESULT(VK_ERROR_UNKNOWN)
    KILN_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    KILN_VK_RESULT(VK_ERROR_FRAGMENTATION)
    KILN_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    KILN_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef KILN_VK_RESULT
  default: return "VkResult " + std::to_string(int(result));
  }
}

void check(VkResult result, const char* call) {
  if (result == VK_SUCCESS) return;
  throw Error(ErrorKind::internal, std::string(call) + " failed: " + result_name(result));
}

} // namespace kiln::vulkan
