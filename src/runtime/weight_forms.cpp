#include "runtime/weight_forms.hpp"
#include <algorithm>

namespace kiln::runtime {

namespace {

// The name quoted with \ and " escaped, so that no name can be mistaken for another form's text.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

} // namespace

WeightFormKey weight_key(const WeightVersion& weight) {
  std::string form = quoted(weight.name) + "@" + std::to_string(weight.version);
  if (weight.owner != 0) form += " of callable " + std::to_string(weight.owner);
  return {{weight}, std::move(form)};
}

WeightFormKey derived_key(const std::string& how, const std::vector<const WeightFormKey*>& inputs,
                          const std::string& detail) {
  WeightFormKey key{{}, how + "("};
  for (size_t i = 0; i < inputs.size(); ++i) {
    key.form += (i ? ", " : "") + inputs[i]->form;
    for (const WeightVersion& source : inputs[i]->sources)
      if (std::find(key.sources.begin(), key.sources.end(), source) == key.sources.end()) key.sources.push_back(source);
  }
  key.form += (detail.empty() ? "" : ", " + detail) + ")";
  return key;
}

std::shared_ptr<const void> WeightForms::get_erased(const WeightFormKey& key,
                                                    const std::function<std::shared_ptr<const void>()>& make) {
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [](const auto& entry) { return entry.second.form.expired(); });
  auto found = entries_.find(key.form);
  if (found != entries_.end())
    if (auto live = found->second.form.lock()) return live;
  std::shared_ptr<const void> form = make();
  entries_.insert_or_assign(key.form, Entry{key.sources, form});
  ++forms_made_;
  return form;
}

void WeightForms::forget_older(const std::string& name, uint64_t version) {
  std::lock_guard lock(mutex_);
  std::erase_if(entries_, [&](const auto& entry) {
    return std::any_of(entry.second.sources.begin(), entry.second.sources.end(), [&](const WeightVersion& source) {
      return source.owner == 0 && source.name == name && source.version < version;
    });
  });
}

size_t WeightForms::live_forms() const {
  std::lock_guard lock(mutex_);
  return size_t(
      std::count_if(entries_.begin(), entries_.end(), [](const auto& entry) { return !entry.second.form.expired(); }));
}

uint64_t WeightForms::forms_made() const {
  std::lock_guard lock(mutex_);
  return forms_made_;
}

} // namespace kiln::runtime
