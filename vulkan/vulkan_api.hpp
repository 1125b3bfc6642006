#pragma once
#include <initializer_list>
#include <string>
#include <vulkan/vulkan.h>

// The Vulkan functions kiln calls, resolved at run time through the loader's vkGetInstanceProcAddr
// (IREE's dynamic_symbol_tables pattern), so kiln never links libvulkan: a machine without a driver
// still runs kiln on the CPU. Each list is one X-macro; a function kiln starts to use is added here.
namespace kiln::vulkan {

// Resolved with a null instance: what can be called before there is one.
#define KILN_VK_GLOBAL_FUNCTIONS(X)                                                                                    \
  X(vkCreateInstance)                                                                                                  \
  X(vkEnumerateInstanceVersion)                                                                                        \
  X(vkEnumerateInstanceLayerProperties)

#define KILN_VK_INSTANCE_FUNCTIONS(X)                                                                                  \
  X(vkDestroyInstance)                                                                                                 \
  X(vkEnumeratePhysicalDevices)                                                                                        \
  X(vkGetPhysicalDeviceProperties)                                                                                     \
  X(vkGetPhysicalDeviceProperties2)                                                                                    \
  X(vkGetPhysicalDeviceFeatures2)                                                                                      \
  X(vkGetPhysicalDeviceMemoryProperties)                                                                               \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                                                          \
  X(vkEnumerateDeviceExtensionProperties)                                                                              \
  X(vkCreateDevice)                                                                                                    \
  X(vkGetDeviceProcAddr)

#define KILN_VK_DEVICE_FUNCTIONS(X)                                                                                    \
  X(vkDestroyDevice)                                                                                                   \
  X(vkGetDeviceQueue)                                                                                                  \
  X(vkCreateBuffer)                                                                                                    \
  X(vkDestroyBuffer)                                                                                                   \
  X(vkGetBufferMemoryRequirements)                                                                                     \
  X(vkAllocateMemory)                                                                                                  \
  X(vkFreeMemory)                                                                                                      \
  X(vkBindBufferMemory)                                                                                                \
  X(vkMapMemory)                                                                                                       \
  X(vkCreateShaderModule)                                                                                              \
  X(vkDestroyShaderModule)                                                                                             \
  X(vkCreateDescriptorSetLayout)                                                                                       \
  X(vkDestroyDescriptorSetLayout)                                                                                      \
  X(vkCreatePipelineLayout)                                                                                            \
  X(vkDestroyPipelineLayout)                                                                                           \
  X(vkCreateComputePipelines)                                                                                          \
  X(vkDestroyPipeline)                                                                                                 \
  X(vkCreateDescriptorPool)                                                                                            \
  X(vkDestroyDescriptorPool)                                                                                           \
  X(vkAllocateDescriptorSets)                                                                                          \
  X(vkUpdateDescriptorSets)                                                                                            \
  X(vkCreateCommandPool)                                                                                               \
  X(vkDestroyCommandPool)                                                                                              \
  X(vkResetCommandPool)                                                                                                \
  X(vkResetDescriptorPool)                                                                                             \
  X(vkResetFences)                                                                                                     \
  X(vkAllocateCommandBuffers)                                                                                          \
  X(vkBeginCommandBuffer)                                                                                              \
  X(vkEndCommandBuffer)                                                                                                \
  X(vkCmdBindPipeline)                                                                                                 \
  X(vkCmdBindDescriptorSets)                                                                                           \
  X(vkCmdPushConstants)                                                                                                \
  X(vkCmdDispatch)                                                                                                     \
  X(vkCmdPipelineBarrier)                                                                                              \
  X(vkCreateFence)                                                                                                     \
  X(vkDestroyFence)                                                                                                    \
  X(vkWaitForFences)                                                                                                   \
  X(vkQueueSubmit)                                                                                                     \
  X(vkDeviceWaitIdle)

#define KILN_VK_DECLARE_MEMBER(name) PFN_##name name = nullptr;

struct GlobalFunctions {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_DECLARE_MEMBER)
};
struct InstanceFunctions {
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_DECLARE_MEMBER)
};
struct DeviceFunctions {
  KILN_VK_DEVICE_FUNCTIONS(KILN_VK_DECLARE_MEMBER)
};

struct Loader {
  GlobalFunctions functions;
  std::string why; // empty when the functions are there
};
// The first of `names` that dlopen finds, or `why` none was (named after the first).
Loader open_loader(std::initializer_list<const char*> names);

// The process's loader, opened on first use and never closed (a driver's threads and atexit
// handlers may outlive any static of ours). Null, with `why` saying what is missing, when there is
// no libvulkan.so.1 or it lacks vkGetInstanceProcAddr.
const GlobalFunctions* loader(std::string* why);

// Resolves every function of the list; false with `missing` naming the first that is not there.
bool load_instance_functions(const GlobalFunctions& loader, VkInstance instance, InstanceFunctions& out,
                             std::string* missing);
bool load_device_functions(const InstanceFunctions& instance, VkDevice device, DeviceFunctions& out,
                           std::string* missing);

// "VK_ERROR_DEVICE_LOST", or "VkResult -13" for a code this list does not know.
std::string result_name(VkResult result);
// Throws kiln::Error(internal) "vkQueueSubmit failed: VK_ERROR_DEVICE_LOST" unless `result` is
// VK_SUCCESS.
void check(VkResult result, const char* call);

} // namespace kiln::vulkan
