#include "runtime/weight_forms.hpp"
#include <kiln/io.hpp>
#include <kiln/session.hpp>

namespace kiln {

WeightRegistry::WeightRegistry() : forms_(std::make_shared<runtime::WeightForms>()) {}

void WeightRegistry::set(const std::string& name, const Tensor& value) {
  if (!value.is_concrete()) throw Error(ErrorKind::weight, "weight '" + name + "' must be a concrete tensor");
  uint64_t version = 0;
  {
    std::lock_guard lock(mutex_);
    Entry& e = entries_[name];
    e.value = value;
    e.version = version = generation_.load(std::memory_order_relaxed) + 1;
    generation_.store(version, std::memory_order_release);
  }
  forms_->forget_older(name, version);
}

void WeightRegistry::set_all(const std::map<std::string, Tensor>& values) {
  for (const auto& [name, value] : values)
    set(name, value);
}

void WeightRegistry::load_safetensors(const std::string& path, const std::string& prefix) {
  auto file = kiln::load_safetensors(path);
  for (const auto& [name, value] : file.tensors)
    set(prefix + name, value);
}

std::optional<Tensor> WeightRegistry::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  return it->second.value;
}

Tensor WeightRegistry::get(const std::string& name) const {
  if (auto t = find(name)) return *t;
  throw Error(ErrorKind::weight, "weight '" + name + "' is not in the registry");
}

uint64_t WeightRegistry::version(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.version;
}

std::optional<WeightRegistry::Versioned> WeightRegistry::find_versioned(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  return Versioned{it->second.value, it->second.version};
}

std::vector<std::string> WeightRegistry::names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_)
    out.push_back(name);
  return out;
}

} // namespace kiln
