#pragma once
#include <string>
#include <vector>

namespace kiln {

// Loads a kiln extension: a shared library exporting kiln_register_extension (the C ABI in
// kiln/extension.h) whose ops every graph of the process may then use (F::custom, "kiln.custom" in
// MLIR text). StageOptions/CompileOptions::custom_extensions call this for you. Loading a library
// again is a no-op; libraries are never unloaded. Throws kiln::Error: io when the library cannot be
// opened, extension when it exports no kiln_register_extension, was built for another ABI version,
// refuses to register or registers an op name another library already took.
void load_extension(const std::string& path);

// Names of the ops registered by loaded extensions, sorted.
std::vector<std::string> extension_op_names();

} // namespace kiln
