#pragma once
#include <kiln/extension.h>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir {

// One op registered by an extension library (see include/kiln/extension.h).
struct ExtensionOp {
  std::string name;    // "myext.scale_add"
  std::string library; // the path it was loaded from
  kiln_ext_infer_fn infer = nullptr;
  kiln_ext_run_fn run = nullptr;
  void* user_data = nullptr;
};

// Loads an extension library into the process-wide registry: dlopen, kiln_register_extension, ABI
// and name checks. All of a library's ops register or none does. Loading a library already loaded
// is a no-op. Throws kiln::Error: io (dlopen failed), extension (no kiln_register_extension, ABI
// mismatch, registration refused, an op name already taken by another library).
void load_extension(const std::string& path);

// The op registered under `name`, or null. Libraries are never unloaded, so the pointer stays valid
// for the life of the process. Thread-safe.
const ExtensionOp* find_extension_op(std::string_view name);

// Names of every registered op, sorted.
std::vector<std::string> extension_op_names();

} // namespace kiln::ir
