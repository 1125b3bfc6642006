#pragma once
#include "runtime/weight_forms.hpp"
#include <initializer_list>
#include <kiln/tensor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace kiln::runtime {

// The weights an executable reads, bound by name when its signature is compiled, and where the
// forms tiers derive from them (packed, reordered, precomputed) are shared: the session's
// WeightForms, under each weight's WeightVersion. Weights bound without a version get forms of
// their own in every executable, like the graph's embedded constants.
class WeightMap {
public:
  using Tensors = std::map<std::string, Tensor>;

  WeightMap() = default;
  // Weights without versions or a cache (tests, the tiers' warm-up).
  WeightMap(std::initializer_list<Tensors::value_type> tensors) : tensors_(tensors) {}
  explicit WeightMap(std::shared_ptr<WeightForms> forms) : forms_(std::move(forms)) {}

  // A weight whose forms are shared under `version`.
  void bind(const std::string& name, const Tensor& tensor, const WeightVersion& version) {
    bind(name, tensor);
    keys_.insert_or_assign(name, weight_key(version));
  }
  // A weight whose forms are the executable's own.
  void bind(const std::string& name, const Tensor& tensor) { tensors_.insert_or_assign(name, tensor); }

  Tensors::const_iterator find(const std::string& name) const { return tensors_.find(name); }
  Tensors::const_iterator end() const { return tensors_.end(); }
  // The key of the weight's forms; nullopt for a weight bound without a version.
  std::optional<WeightFormKey> key(const std::string& name) const {
    auto found = keys_.find(name);
    return found == keys_.end() ? std::nullopt : std::optional(found->second);
  }
  // Null when forms are not shared.
  WeightForms* forms() const { return forms_.get(); }

private:
  Tensors tensors_;
  std::map<std::string, WeightFormKey> keys_;
  std::shared_ptr<WeightForms> forms_;
};

} // namespace kiln::runtime
