#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::vulkan {

// SPIR-V (1.3, for Vulkan 1.1) of the GLSL compute shader `glsl`, compiled in process by glslang's
// C interface and validated. kiln::Error(internal) with glslang's log and the numbered source lines
// it points at when the shader does not compile or validate. Thread-safe.
std::vector<uint32_t> compile_compute_shader(const std::string& glsl);

} // namespace kiln::vulkan
