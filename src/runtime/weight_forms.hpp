#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::runtime {

// One weight at one version: what derived forms are made from. Registry weights have owner 0 and
// the registry's version (set() makes a new one); a callable's own weights (CompileOptions::weights)
// never change and are told apart from registry weights and from other callables' by their owner.
struct WeightVersion {
  uint64_t owner = 0;
  std::string name;
  uint64_t version = 0;
  friend bool operator==(const WeightVersion&, const WeightVersion&) = default;
};

// What a derived form is: the weight versions it is made from, and how (`form` spells the whole
// derivation, those versions included, e.g. `interp.packed_b("fc1.weight"@3, transposed)`).
struct WeightFormKey {
  std::vector<WeightVersion> sources;
  std::string form;
};

// The key of a weight itself, the start of every derivation.
WeightFormKey weight_key(const WeightVersion& weight);
// The key of a form made from the forms `inputs` by `how`: `how(input, ...)`, plus `detail` when
// not empty.
WeightFormKey derived_key(const std::string& how, const std::vector<const WeightFormKey*>& inputs,
                          const std::string& detail = "");

// The session's cache of packed, reordered and precomputed forms of weights, keyed by
// WeightFormKey and shared by both tiers and every plan. It holds forms weakly: each lives while an
// executable holds it, so a form is made once per (weights, versions, form) however many
// signatures and tiers use it, and the cache keeps nothing alive. set() of a weight forgets the
// forms of its older versions (executables built on them keep theirs). Thread-safe.
class WeightForms {
public:
  // The form for `key`, or make()'s result, made under the cache's lock so that concurrent
  // builds over the same weights make it once (make must not use the cache).
  template <class T, class Make> std::shared_ptr<const T> get(const WeightFormKey& key, Make&& make) {
    return std::static_pointer_cast<const T>(
        get_erased(key, [&]() -> std::shared_ptr<const void> { return std::make_shared<const T>(make()); }));
  }
  // Called by WeightRegistry::set(): forms made from `name` at a version below `version` are
  // never asked for again.
  void forget_older(const std::string& name, uint64_t version);

  // Forms alive now, and forms made since the session began (tests: repacking happens once per
  // weight version, not per signature or tier).
  size_t live_forms() const;
  uint64_t forms_made() const;

private:
  struct Entry {
    std::vector<WeightVersion> sources;
    std::weak_ptr<const void> form;
  };
  std::shared_ptr<const void> get_erased(const WeightFormKey& key,
                                         const std::function<std::shared_ptr<const void>()>& make);

  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_; // by WeightFormKey::form, which names the sources
  uint64_t forms_made_ = 0;
};

// The form from the session's cache when there is one and the value has a key; else made for the
// caller alone (an embedded constant, a plan built without a session).
template <class T, class Make>
std::shared_ptr<const T> shared_form(WeightForms* forms, const std::optional<WeightFormKey>& key, Make&& make) {
  if (forms && key) return forms->get<T>(*key, make);
  return std::make_shared<const T>(make());
}

} // namespace kiln::runtime
