#include "bindings.hpp"
#include "kiln_config.h"
#if KILN_HAS_VULKAN
#include "vulkan/device.hpp"
#endif

namespace {

// The Vulkan devices the accelerator tier can use, and why there is none ("" when there is one).
std::pair<pybind11::list, std::string> accelerator_devices() {
  pybind11::list out;
#if KILN_HAS_VULKAN
  std::string why;
  for (const kiln::vulkan::DeviceInfo& d : kiln::vulkan::list_devices(&why)) {
    pybind11::dict device;
    device["index"] = d.index;
    device["name"] = d.name;
    device["type"] = d.type;
    device["driver"] = d.driver;
    device["api"] = d.api;
    device["device_local_bytes"] = d.device_local_bytes;
    device["max_storage_buffer_range"] = d.max_storage_buffer_range;
    device["max_workgroup_invocations"] = d.max_workgroup_invocations;
    device["shader_float16"] = d.shader_float16;
    out.append(device);
  }
  return {out, why};
#else
  return {out, "this build has no accelerator tier (-Dvulkan=disabled)"};
#endif
}

} // namespace

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ core; import kiln, not this module";
  kiln::python::bind_errors(m);
  kiln::python::bind_types(m);
  kiln::python::bind_tensor(m);
  kiln::python::bind_functional(m);
  kiln::python::bind_compile(m);
  kiln::python::bind_io(m);
  kiln::python::bind_debug(m);
  m.attr("has_jit") = bool(KILN_HAS_JIT);
  m.attr("has_accelerator_tier") = bool(KILN_HAS_VULKAN);
  m.def("_accelerator_devices", &accelerator_devices);
}
