#include <kiln/io.hpp>
#include <kiln/nn.hpp>

namespace kiln::nn {

namespace {

std::string quoted_list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names)
    text += (text.empty() ? "'" : ", '") + name + "'";
  return text;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names)
    if (n == name) return true;
  return false;
}

// Why `value` cannot replace `current`, or "" when it can.
std::string replacement_problem(const Tensor& current, const Tensor& value) {
  if (!value.is_concrete()) return "expected " + current.layout().to_string() + ", got a tensor without values";
  if (value.dtype() != current.dtype() || value.shape() != current.shape())
    return "expected " + current.layout().to_string() + ", got " + value.layout().to_string();
  return "";
}

} // namespace

Module::~Module() {
  for (auto& entry : children_)
    entry.second->parent_ = nullptr;
}

Tensor Module::forward(const Tensor&) {
  throw Error(ErrorKind::unsupported, describe() + " has no forward of one input");
}

Tensor Module::forward_inputs(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 1)
    throw Error(ErrorKind::spec,
                describe() + " takes 1 input, got " + std::to_string(inputs.size()) + " in forward_inputs");
  return forward(inputs[0]);
}

std::string Module::full_name() const {
  if (!parent_) return "";
  const std::string prefix = parent_->full_name();
  return prefix.empty() ? name_in_parent_ : prefix + "." + name_in_parent_;
}

std::string Module::full_name(const std::string& local_name) const {
  const std::string prefix = full_name();
  return prefix.empty() ? local_name : prefix + "." + local_name;
}

std::string Module::describe() const {
  const std::string name = full_name();
  return name.empty() ? "the root module" : "module '" + name + "'";
}

void Module::check_new_name(const std::string& name) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(ErrorKind::spec, describe() + ": name '" + name + "' must be non-empty and hold no dot");
  bool taken = contains(ignored_when_loading_, name);
  for (const auto& entry : parameters_)
    taken = taken || entry.first == name;
  for (const auto& entry : buffers_)
    taken = taken || entry.first == name;
  for (const auto& entry : children_)
    taken = taken || entry.first == name;
  if (taken) throw Error(ErrorKind::spec, describe() + " already has a member named '" + name + "'");
}

void Module::register_parameter(const std::string& name, Tensor value) {
  check_new_name(name);
  if (!value.is_concrete())
    throw Error(ErrorKind::spec, describe() + ": parameter '" + name + "' needs a tensor with values");
  parameters_.emplace_back(name, std::move(value));
}

void Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  if (!value.is_concrete())
    throw Error(ErrorKind::spec, describe() + ": buffer '" + name + "' needs a tensor with values");
  buffers_.emplace_back(name, std::move(value));
}

void Module::ignore_when_loading(const std::string& name) {
  check_new_name(name);
  ignored_when_loading_.push_back(name);
}

void Module::attach(const std::string& name, std::shared_ptr<Module> module) {
  if (!module) throw Error(ErrorKind::spec, describe() + ": submodule '" + name + "' is null");
  if (module->parent_)
    throw Error(ErrorKind::spec,
                describe() + ": submodule '" + name + "' is already registered as '" + module->full_name() + "'");
  for (const Module* m = this; m; m = m->parent_)
    if (m == module.get()) throw Error(ErrorKind::spec, describe() + ": submodule '" + name + "' would contain itself");
  check_new_name(name);
  module->parent_ = this;
  module->name_in_parent_ = name;
  children_.emplace_back(name, std::move(module));
}

const Tensor* Module::find_tensor(const std::string& local_name) const {
  for (const auto& entry : parameters_)
    if (entry.first == local_name) return &entry.second;
  for (const auto& entry : buffers_)
    if (entry.first == local_name) return &entry.second;
  return nullptr;
}

bool Module::has_tensor(const std::string& local_name) const { return find_tensor(local_name) != nullptr; }

const Tensor& Module::tensor(const std::string& local_name) const {
  const Tensor* found = find_tensor(local_name);
  if (!found) throw Error(ErrorKind::weight, describe() + " has no parameter or buffer '" + local_name + "'");
  return *found;
}

// `path` is relative to this module and names an existing tensor (load_state_dict checked it).
void Module::replace(const std::string& path, const Tensor& value) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) {
    for (auto& entry : parameters_)
      if (entry.first == path) entry.second = value;
    for (auto& entry : buffers_)
      if (entry.first == path) entry.second = value;
    return;
  }
  for (auto& [name, child] : children_)
    if (name == path.substr(0, dot)) child->replace(path.substr(dot + 1), value);
}

Tensor Module::weight_for(const Tensor& input, const std::string& name, std::source_location loc) const {
  const Tensor& value = tensor(name);
  if (input.is_symbolic()) return F::constant_external(full_name(name), value.layout(), loc);
  return value;
}

Tensor Module::optional_weight_for(const Tensor& input, const std::string& name, std::source_location loc) const {
  return has_tensor(name) ? weight_for(input, name, loc) : Tensor();
}

void Module::collect_named(bool buffers, std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, value] : buffers ? buffers_ : parameters_)
    out.emplace_back(full_name(name), value);
  for (const auto& entry : children_)
    entry.second->collect_named(buffers, out);
}

void Module::collect_ignored(std::vector<std::string>& out) const {
  for (const std::string& name : ignored_when_loading_)
    out.push_back(full_name(name));
  for (const auto& entry : children_)
    entry.second->collect_ignored(out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> named;
  collect_named(false, named);
  return named;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> named;
  collect_named(true, named);
  return named;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> values;
  for (auto& entry : named_parameters())
    values.push_back(std::move(entry.second));
  return values;
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> state;
  for (auto& entry : named_parameters())
    state.insert(std::move(entry));
  for (auto& entry : named_buffers())
    state.insert(std::move(entry));
  return state;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict) {
  const std::map<std::string, Tensor> current = state_dict();
  std::vector<std::string> ignored, missing, unexpected, mis_shaped;
  collect_ignored(ignored);
  for (const auto& [name, tensor] : current) {
    auto found = state.find(name);
    if (found == state.end()) {
      missing.push_back(name);
      continue;
    }
    const std::string problem = replacement_problem(tensor, found->second);
    if (!problem.empty()) mis_shaped.push_back("'" + name + "' (" + problem + ")");
  }
  for (const auto& entry : state)
    if (!current.count(entry.first) && !contains(ignored, entry.first)) unexpected.push_back(entry.first);
  std::string problems;
  if (strict && !missing.empty()) problems += "; missing " + quoted_list(missing);
  if (strict && !unexpected.empty()) problems += "; unexpected " + quoted_list(unexpected);
  if (!mis_shaped.empty()) {
    std::string list;
    for (const std::string& entry : mis_shaped)
      list += (list.empty() ? "" : ", ") + entry;
    problems += "; mis-shaped " + list;
  }
  if (!problems.empty())
    throw Error(ErrorKind::weight, "load_state_dict into " + describe() + ":" + problems.substr(1));
  const std::string prefix = full_name();
  for (const auto& [name, tensor] : current)
    if (auto found = state.find(name); found != state.end())
      replace(prefix.empty() ? name : name.substr(prefix.size() + 1), found->second);
}

void Module::load_safetensors(const std::string& path, bool strict) {
  load_state_dict(kiln::load_safetensors(path).tensors, strict);
}

void Module::to_safetensors(const std::string& path) const { save_safetensors(path, state_dict()); }

} // namespace kiln::nn
