#include "vulkan/shader_compiler.hpp"
#include <algorithm>
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <kiln/error.hpp>
#include <memory>
#include <mutex>
#include <sstream>

namespace kiln::vulkan {

namespace {

// glslang keeps process-wide tables (built-in symbols): set up once, never finalized, since a
// compile may run on another thread while the process exits.
void initialize_glslang_once() {
  static std::once_flag once;
  std::call_once(once, [] { glslang_initialize_process(); });
}

// The line of glslang's first "ERROR: 0:LINE:" message, or 0.
int first_error_line(const std::string& log) {
  const size_t at = log.find("ERROR: 0:");
  if (at == std::string::npos) return 0;
  return std::atoi(log.c_str() + at + 9);
}

// The source lines around `line` (the first lines when it is 0), numbered as glslang numbers them.
std::string numbered_lines(const std::string& glsl, int line) {
  const int first = line > 0 ? std::max(1, line - 5) : 1;
  const int last = line > 0 ? line + 2 : 20;
  std::istringstream in(glsl);
  std::string text, out;
  for (int number = 1; std::getline(in, text) && number <= last; ++number)
    if (number >= first) out += std::to_string(number) + (number == line ? ">| " : " | ") + text + "\n";
  return out;
}

[[noreturn]] void refuse(const char* stage, const std::string& log, const std::string& glsl) {
  throw Error(ErrorKind::internal, std::string("GLSL compute shader does not ") + stage + ":\n" + log +
                                       (log.ends_with('\n') ? "" : "\n") + numbered_lines(glsl, first_error_line(log)));
}

struct ShaderDeleter {
  void operator()(glslang_shader_t* shader) const { glslang_shader_delete(shader); }
};
struct ProgramDeleter {
  void operator()(glslang_program_t* program) const { glslang_program_delete(program); }
};

} // namespace

std::vector<uint32_t> compile_compute_shader(const std::string& glsl) {
  initialize_glslang_once();
  glslang_input_t input{};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  input.client_version = GLSLANG_TARGET_VULKAN_1_1;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_3;
  input.code = glsl.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.messages = static_cast<glslang_messages_t>(GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();

  std::unique_ptr<glslang_shader_t, ShaderDeleter> shader(glslang_shader_create(&input));
  if (!shader) throw Error(ErrorKind::internal, "glslang_shader_create failed");
  if (!glslang_shader_preprocess(shader.get(), &input))
    refuse("preprocess", glslang_shader_get_info_log(shader.get()), glsl);
  if (!glslang_shader_parse(shader.get(), &input)) refuse("compile", glslang_shader_get_info_log(shader.get()), glsl);

  std::unique_ptr<glslang_program_t, ProgramDeleter> program(glslang_program_create());
  glslang_program_add_shader(program.get(), shader.get());
  if (!glslang_program_link(program.get(), input.messages))
    refuse("link", glslang_program_get_info_log(program.get()), glsl);
  // Validated before a driver sees it: invalid SPIR-V is undefined behaviour in the driver.
  glslang_spv_options_t options{};
  options.validate = true;
  glslang_program_SPIRV_generate_with_options(program.get(), GLSLANG_STAGE_COMPUTE, &options);
  if (const char* messages = glslang_program_SPIRV_get_messages(program.get()); messages && *messages)
    refuse("validate as SPIR-V", messages, glsl);
  const size_t words = glslang_program_SPIRV_get_size(program.get());
  if (words == 0) refuse("generate SPIR-V", "no SPIR-V generated", glsl);
  const unsigned int* code = glslang_program_SPIRV_get_ptr(program.get());
  return std::vector<uint32_t>(code, code + words);
}

} // namespace kiln::vulkan
