#include "ir/extension_registry.hpp"
#include "ir/extension_shape.hpp"
#include <cctype>
#include <dlfcn.h>
#include <kiln/error.hpp>
#include <kiln/extension.hpp>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>

namespace kiln::ir {

namespace {

struct Registry {
  std::shared_mutex mutex;
  std::map<std::string, ExtensionOp, std::less<>> ops; // map nodes never move: pointers stay valid
  std::set<std::string> loaded_paths;
  std::set<void*> handles; // one library reached by two paths is loaded once
};

Registry& registry() {
  static Registry r;
  return r;
}

// The ops one kiln_register_extension call offered, checked before any of them is committed.
struct PendingRegistration {
  std::string library;
  std::vector<ExtensionOp> ops;
  int offered = 0;
  std::string refusal; // why the first refused op was refused
};

bool valid_op_name(std::string_view name) {
  if (name.empty() || name.front() == '.' || name.back() == '.' || name.find('.') == std::string_view::npos)
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

// "" when the op can be registered, otherwise why not.
std::string check_op(const kiln_ext_op* op, const PendingRegistration& pending) {
  const std::string which = "op " + std::to_string(pending.offered);
  if (!op) return which + " is a null pointer";
  // Read nothing but abi_version before the versions agree: the rest of the struct may differ.
  if (op->abi_version != KILN_EXTENSION_ABI_VERSION)
    return which + " was built for extension ABI " + std::to_string(op->abi_version) + ", this kiln speaks ABI " +
           std::to_string(KILN_EXTENSION_ABI_VERSION) + " (rebuild the library against this kiln's kiln/extension.h)";
  const std::string name = op->name ? op->name : "";
  if (!valid_op_name(name))
    return which + " has the name '" + name + "': expected <namespace>.<op> of letters, digits, '_' and '.'";
  if (name.starts_with("jit.")) return "op '" + name + "': the namespace 'jit' is kiln's own";
  if (!op->infer) return "op '" + name + "' has no shape function (infer is null)";
  if (!op->run) return "op '" + name + "' has no kernel (run is null)";
  for (const ExtensionOp& earlier : pending.ops)
    if (earlier.name == name) return "op '" + name + "' is registered twice";
  return "";
}

int register_op(kiln_ext_registrar* registrar, const kiln_ext_op* op) noexcept {
  auto& pending = *static_cast<PendingRegistration*>(registrar->kiln_private);
  try {
    std::string why = check_op(op, pending);
    ++pending.offered;
    if (!why.empty()) {
      if (pending.refusal.empty()) pending.refusal = std::move(why);
      return 1;
    }
    pending.ops.push_back({op->name, pending.library, op->infer, op->run, op->user_data});
    return 0;
  } catch (...) { // never unwind into the extension's C code
    if (pending.refusal.empty()) pending.refusal = "kiln ran out of memory while registering an op";
    return 1;
  }
}

std::string dl_error() {
  const char* text = dlerror();
  return text ? text : "unknown dynamic loader error";
}

// Closes the library unless release() was called: a library that failed to register leaves nothing.
class LibraryHandle {
public:
  explicit LibraryHandle(void* handle) : handle_(handle) {}
  ~LibraryHandle() {
    if (handle_) dlclose(handle_);
  }
  LibraryHandle(const LibraryHandle&) = delete;
  LibraryHandle& operator=(const LibraryHandle&) = delete;
  void* get() const { return handle_; }
  void release() { handle_ = nullptr; }

private:
  void* handle_;
};

PendingRegistration run_registration(const LibraryHandle& library, const std::string& path) {
  dlerror();
  void* symbol = dlsym(library.get(), KILN_REGISTER_EXTENSION_SYMBOL);
  if (!symbol)
    throw Error(ErrorKind::extension, "extension '" + path +
                                          "' does not export " KILN_REGISTER_EXTENSION_SYMBOL
                                          " (is it a kiln extension? see kiln/extension.h): " +
                                          dl_error());
  auto entry = reinterpret_cast<kiln_register_extension_fn>(symbol);
  PendingRegistration pending{path, {}, 0, ""};
  char message[512] = {};
  kiln_ext_registrar registrar{KILN_EXTENSION_ABI_VERSION, &register_op, message, sizeof message, &pending};
  int status = 0;
  try {
    status = entry(&registrar);
  } catch (...) { // the ABI is C: an exception here is the extension's bug, reported like any failure
    throw Error(ErrorKind::extension,
                "extension '" + path + "': " KILN_REGISTER_EXTENSION_SYMBOL " threw an exception");
  }
  message[sizeof message - 1] = '\0';
  if (!pending.refusal.empty()) throw Error(ErrorKind::extension, "extension '" + path + "': " + pending.refusal);
  if (status != 0)
    throw Error(ErrorKind::extension, "extension '" + path + "': " KILN_REGISTER_EXTENSION_SYMBOL " returned " +
                                          std::to_string(status) +
                                          (message[0] ? ": " + std::string(message) : std::string(" (no message)")));
  return pending;
}

} // namespace

void load_extension(const std::string& path) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (r.loaded_paths.count(path)) return;
  dlerror();
  LibraryHandle library(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library.get()) throw Error(ErrorKind::io, "cannot load extension '" + path + "': " + dl_error());
  if (r.handles.count(library.get())) { // the same library by another path; the handle closes one reference
    r.loaded_paths.insert(path);
    return;
  }
  PendingRegistration pending = run_registration(library, path);
  for (const ExtensionOp& op : pending.ops) {
    auto taken = r.ops.find(op.name);
    if (taken != r.ops.end())
      throw Error(ErrorKind::extension, "extension '" + path + "': op '" + op.name + "' is already registered by '" +
                                            taken->second.library + "'");
  }
  for (ExtensionOp& op : pending.ops) {
    std::string name = op.name;
    r.ops.emplace(std::move(name), std::move(op));
  }
  r.handles.insert(library.get());
  r.loaded_paths.insert(path);
  library.release(); // registered function pointers point into it: never unload
}

const ExtensionOp* find_extension_op(std::string_view name) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : &it->second;
}

std::vector<std::string> extension_op_names() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& entry : r.ops)
    names.push_back(entry.first);
  return names;
}

} // namespace kiln::ir

namespace kiln {

void load_extension(const std::string& path) { ir::load_extension(path); }

std::vector<std::string> extension_op_names() { return ir::extension_op_names(); }

} // namespace kiln
